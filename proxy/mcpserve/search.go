package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolsearch"
)

// In search mode the client lists contextd's own tools and two more:
// tool_search, which finds a served server's tool for a task, and
// tool_call, which calls it. The listed set never changes, so this works in
// clients that ignore list_changed, and it costs a few hundred tokens
// whatever the servers hold. In full mode ("off", "defer") each served tool
// is listed as NAME.tool and added or removed (with list_changed) as its
// server starts or changes its list.

// alwaysLoad asks Claude Code never to defer a tool behind its own tool
// search: contextd's tools replace the built-ins and must stay in view.
var alwaysLoad = mcp.Meta{"anthropic/alwaysLoad": true}

// addHub registers what the hub serves: the search tools, or every served
// tool once its server is up (waiting start_wait for them at most).
func (s *Server) addHub() {
	h := s.hub
	search := h.searchMode()
	if search || h.conf.Search == "defer" {
		s.mcp.AddTool(&mcp.Tool{Name: toolsearch.SearchToolName, Description: toolsearch.SearchToolDescription,
			InputSchema: toolsearch.SearchToolSchema, Meta: alwaysLoad}, s.searchHandler)
		s.mcp.AddTool(&mcp.Tool{Name: toolsearch.CallToolName, Description: toolsearch.CallToolDescription,
			InputSchema: toolsearch.CallToolSchema, Meta: alwaysLoad}, s.callHandler)
	}
	if !search {
		s.listed = map[string][]string{}
		h.onTools = s.listServed
	}
	h.start()
	if !search {
		ctx, cancel := context.WithTimeout(context.Background(), h.conf.StartWait)
		h.settle(ctx, h.conf.StartWait)
		cancel()
	}
}

// listServed replaces server's listed tools by tools (full mode). Calls
// come one at a time (hub.regMu).
func (s *Server) listServed(server string, tools []*mcp.Tool) {
	if gone := s.listed[server]; len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	s.listed[server] = nil
	for _, t := range tools {
		name := server + "." + t.Name
		served := *t
		served.Name = name
		if served.InputSchema == nil {
			served.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		tool := t.Name
		err := addTool(s.mcp, &served, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.routed(ctx, server, tool, req.Params.Arguments)
		})
		if err != nil {
			fmt.Fprintf(s.notes, "contextd: note: %s not listed: %v\n", name, err)
			continue
		}
		s.listed[server] = append(s.listed[server], name)
	}
}

// searchArgs is tool_search's input.
type searchArgs struct {
	Query  string `json:"query"`
	K      int    `json:"k"`
	Schema bool   `json:"schema"`
}

// searchHandler answers tool_search: the best tools for the query, then a
// line for each server that is not ready.
func (s *Server) searchHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in searchArgs
	if err := strictArgs(req.Params.Arguments, &in); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", toolsearch.SearchToolName, err)}
	}
	in.Query = strings.TrimSpace(in.Query)
	if in.Query == "" {
		return failure(fmt.Errorf("%s: say what the tool should do in query: %w", toolsearch.SearchToolName, catalog.ErrBadInput), nil), nil
	}
	if in.K <= 0 {
		in.K = s.hub.conf.Results
	}
	in.K = min(in.K, 20)
	h := s.hub
	h.settle(ctx, time.Until(h.started.Add(h.conf.StartTimeout)))
	hits, note := h.search(ctx, in.Query, in.K)
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "No tool matched %q; try other words for the task.\n", in.Query)
	} else {
		noun := "tools"
		if len(hits) == 1 {
			noun = "tool"
		}
		fmt.Fprintf(&b, "%d %s for %q. Call one with %s {\"name\": NAME, \"arguments\": {...}}.\n", len(hits), noun, in.Query, toolsearch.CallToolName)
	}
	for i, hit := range hits {
		server, name, _ := strings.Cut(hit.ID, ".")
		t := h.tool(server, name)
		if t == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%d. %s: %s\n", i+1, hit.ID, lead(t.Description, 240))
		if p := paramsLine(t.InputSchema); p != "" {
			fmt.Fprintf(&b, "   arguments: %s\n", p)
		}
		if len(hit.Why) > 0 {
			fmt.Fprintf(&b, "   matched: %s\n", strings.Join(hit.Why[:min(3, len(hit.Why))], " "))
		}
		if in.Schema {
			raw, _ := json.Marshal(t.InputSchema)
			fmt.Fprintf(&b, "   schema: %s\n", raw)
		}
	}
	if note != "" {
		fmt.Fprintf(&b, "\n(%s; ranked by words alone)\n", note)
	}
	if st := h.status(); len(st) > 0 {
		b.WriteString("\nNot ready:\n")
		for _, l := range st {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
}

// callArgs is tool_call's input.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callHandler answers tool_call: the named tool of a served server, through
// its wrap; or one of contextd's own tools, as if called directly.
func (s *Server) callHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in callArgs
	if err := strictArgs(req.Params.Arguments, &in); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", toolsearch.CallToolName, err)}
	}
	if in.Name == "" {
		return failure(fmt.Errorf("%s: name the tool (as %s returned it): %w", toolsearch.CallToolName, toolsearch.SearchToolName, catalog.ErrBadInput), nil), nil
	}
	if s.known(in.Name) || in.Name == continueTool {
		own := *req
		own.Params = &mcp.CallToolParamsRaw{Name: in.Name, Arguments: in.Arguments}
		return s.handler(in.Name)(ctx, &own)
	}
	h := s.hub
	server, tool, ok, pending := h.resolve(in.Name)
	if pending {
		h.settle(ctx, time.Until(h.started.Add(h.conf.StartTimeout)))
		server, tool, ok, pending = h.resolve(in.Name)
	}
	if pending {
		return failure(fmt.Errorf("%s: %q could name a tool of a server still starting; call it as SERVER.tool (as %s returns it): %w",
			toolsearch.CallToolName, in.Name, toolsearch.SearchToolName, catalog.ErrUnknownTool), nil), nil
	}
	if !ok {
		var near []string
		hits, _ := h.search(ctx, in.Name, 3)
		for _, hit := range hits {
			near = append(near, hit.ID)
		}
		hint := "search for it with " + toolsearch.SearchToolName
		if len(near) > 0 {
			hint = "closest: " + strings.Join(near, ", ")
		}
		return failure(fmt.Errorf("%s: no served tool is named %q (%s): %w", toolsearch.CallToolName, in.Name, hint, catalog.ErrUnknownTool), nil), nil
	}
	return s.routed(ctx, server, tool, in.Arguments)
}

// routed calls server's tool with args. The result is the server's, as the
// daemon passed it (scrubbed, cut to budget); a refusal of the firewall or a
// server that is not up is an isError result that says why.
func (s *Server) routed(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	input, err := objectArgs(args)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s.%s: %v", server, tool, err)}
	}
	res, err := s.hub.call(ctx, server, tool, input)
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			// The daemon's refusal (a changed tool, the budget, a rule):
			// its message carries the code and what to do.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: server + "." + tool + ": " + rpc.Message}}}, nil
		}
		return failure(fmt.Errorf("%s.%s: %w", server, tool, err), nil), nil
	}
	return res, nil
}

// strictArgs decodes a tool's arguments, refusing unknown keys.
func strictArgs(raw json.RawMessage, v any) error {
	in, err := objectArgs(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// lead is a description's first paragraph, cut to n bytes at a word.
func lead(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i > 0 {
		s = s[:i]
	}
	s = oneLine(s)
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}

// paramsLine summarises an input schema: each property with its type,
// required ones first and marked.
func paramsLine(schema any) string {
	raw, err := json.Marshal(schema)
	if err != nil {
		return ""
	}
	var sc struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &sc) != nil || len(sc.Properties) == 0 {
		return ""
	}
	req := map[string]bool{}
	for _, r := range sc.Required {
		req[r] = true
	}
	names := make([]string, 0, len(sc.Properties))
	for n := range sc.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		// A server names its properties: one that is not a plain name
		// is quoted, so that a line break in it cannot start a line of
		// its own in the answer (a made-up tool of another server).
		p := n
		if !validToolName(n) {
			p = strconv.Quote(n)
		}
		if t, ok := sc.Properties[n].Type.(string); ok && validToolName(t) {
			p += " (" + t
			if req[n] {
				p += ", required"
			}
			p += ")"
		} else if req[n] {
			p += " (required)"
		}
		parts = append(parts, p)
	}
	if len(parts) > 12 {
		parts = append(parts[:12], fmt.Sprintf("and %d more (ask with schema: true)", len(names)-12))
	}
	return strings.Join(parts, ", ")
}
