//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A scripted model on loopback, for driving the real agent CLIs end to end
// with no account and no internet. It speaks just enough of three streaming
// APIs for a CLI to run a conversation: Anthropic Messages (Claude Code,
// OpenCode), OpenAI Responses (Codex CLI) and Gemini's generateContent
// (Gemini CLI). A script of turns decides each reply from what the CLI sent:
// the tools it offered and the tool results it returned.
//
// The CLIs also make side requests (titles, token counts, checks of what the
// model said): those offer no tools, get a short harmless answer, and do not
// count as turns, so the script does not depend on the order they come in.

// stubRequest is one request a CLI made, as the script sees it.
type stubRequest struct {
	API   string   // "anthropic", "responses" or "gemini"
	Path  string   // the URL path
	Tools []string // the names of the tools offered, in the CLI's order
	// Deferred are tools the CLI names to the model but offers only once
	// the model loads them (Claude Code's tool search).
	Deferred []string
	Results  []string // the text of each tool result in the conversation, oldest first
	Body     []byte   // the request's body, as sent
	Turn     int      // the turn it answers (0-based); -1 for a side request
}

// Main says whether the request is part of the scripted conversation: it
// offers tools.
func (r stubRequest) Main() bool { return len(r.Tools) > 0 }

// ToolBySuffix is the offered tool whose name ends in suffix (the CLIs name an
// MCP server's tools with prefixes of their own: mcp__contextd__x,
// contextd__x, contextd_x); "" when none or more than one does.
func (r stubRequest) ToolBySuffix(suffix string) string { return bySuffix(r.Tools, suffix) }

// NamedBySuffix is ToolBySuffix over the offered and the deferred tools.
func (r stubRequest) NamedBySuffix(suffix string) string {
	return bySuffix(append(append([]string(nil), r.Tools...), r.Deferred...), suffix)
}

func bySuffix(names []string, suffix string) string {
	found := ""
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			if found != "" && found != n {
				return ""
			}
			found = n
		}
	}
	return found
}

// LastResult is the text of the last tool result in the conversation.
func (r stubRequest) LastResult() string {
	if len(r.Results) == 0 {
		return ""
	}
	return r.Results[len(r.Results)-1]
}

// stubReply is the model's answer to a turn: a call of one tool, or text.
type stubReply struct {
	Tool string // the offered tool whose name ends in this; "" for text
	Args any    // the call's arguments, marshalled to a JSON object
	Text string
}

// callTool is a reply calling the offered tool whose name ends in suffix.
func callTool(suffix string, args any) stubReply { return stubReply{Tool: suffix, Args: args} }

// finalText is a reply of text, which ends the conversation.
func finalText(text string) stubReply { return stubReply{Text: text} }

// turnFunc decides the reply to one turn of the conversation. A turn may be
// asked more than once (a CLI may retry; a turn calling a deferred tool is
// asked again once the stub had the CLI load it), so it should depend only
// on the request.
type turnFunc func(req stubRequest) stubReply

// modelStub is the scripted model: an HTTP server on loopback.
type modelStub struct {
	srv   *httptest.Server
	turns []turnFunc

	mu       sync.Mutex
	requests []stubRequest
	problems []string
}

// sideReply is the text that answers a side request: when it asks for JSON
// of a schema (Gemini's routing and "who speaks next" checks), an object
// that fits it; else a word.
func sideReply(body []byte) string {
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return "stub"
	}
	schema := findSchema(req)
	if schema == nil {
		return "stub"
	}
	b, _ := json.Marshal(schemaFill(schema))
	return string(b)
}

// findSchema is the first value under a key naming a response schema.
func findSchema(v any) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"responseJsonSchema", "responseSchema", "schema"} {
			if s, ok := v[k].(map[string]any); ok {
				return s
			}
		}
		for _, x := range v {
			if s := findSchema(x); s != nil {
				return s
			}
		}
	case []any:
		for _, x := range v {
			if s := findSchema(x); s != nil {
				return s
			}
		}
	}
	return nil
}

// schemaFill is a value of the JSON schema s: each property filled, the
// first of an enum (its "user" when it has one: whoever asks who speaks
// next gets the answer that ends the turn).
func schemaFill(s map[string]any) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		for _, e := range enum {
			if e == "user" {
				return e
			}
		}
		return enum[0]
	}
	switch strings.ToLower(fmt.Sprint(s["type"])) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out[k] = schemaFill(ps)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	return "stub"
}

// newModelStub starts the stub; turn i of the conversation (the request
// holding i tool results) is answered by turns[i]. The server stops when
// the test ends, and a request it could not answer fails the test.
func newModelStub(t *testing.T, turns ...turnFunc) *modelStub {
	m := &modelStub{turns: turns}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		m.srv.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range m.problems {
			t.Errorf("model stub: %s", p)
		}
	})
	return m
}

// URL is the server's base URL (http://127.0.0.1:port).
func (m *modelStub) URL() string { return m.srv.URL }

// Requests is every request received, in order.
func (m *modelStub) Requests() []stubRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]stubRequest(nil), m.requests...)
}

// Turn is the last request that answered turn i of the conversation (a CLI
// may retry one), and whether there was one.
func (m *modelStub) Turn(i int) (stubRequest, bool) {
	reqs := m.Requests()
	for k := len(reqs) - 1; k >= 0; k-- {
		if reqs[k].Turn == i {
			return reqs[k], true
		}
	}
	return stubRequest{}, false
}

// Summary lists the requests received, one a line, for failure messages.
func (m *modelStub) Summary() string {
	var b strings.Builder
	for _, r := range m.Requests() {
		fmt.Fprintf(&b, "%s %s turn %d, %d tools (%d more deferred), %d results\n", r.API, r.Path, r.Turn, len(r.Tools), len(r.Deferred), len(r.Results))
	}
	return b.String()
}

func (m *modelStub) problem(format string, a ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = append(m.problems, fmt.Sprintf(format, a...))
}

func (m *modelStub) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		m.answer(w, p, body, anthropicAPI)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		m.answer(w, p, body, responsesAPI)
	case r.Method == http.MethodPost && strings.HasSuffix(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 100})
	case r.Method == http.MethodPost && (strings.HasSuffix(p, ":streamGenerateContent") || strings.HasSuffix(p, ":generateContent")):
		m.answer(w, p, body, geminiAPI)
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/models"):
		// Model lists: an empty one, and the CLI keeps the model it was given.
		writeJSON(w, map[string]any{"data": []any{}, "models": []any{}})
	default:
		m.problem("unexpected %s %s: %.300s", r.Method, r.URL, body)
		http.Error(w, "the model stub does not serve this", http.StatusNotFound)
	}
}

// stubAPI is one wire protocol: how to read a request and write a reply.
type stubAPI struct {
	name  string
	parse func(body []byte) (stubRequest, error)
	write func(w http.ResponseWriter, stream bool, tool, args, text string)
}

func (m *modelStub) answer(w http.ResponseWriter, path string, body []byte, api stubAPI) {
	req, err := api.parse(body)
	if err != nil {
		m.problem("%s %s: %v: %.300s", api.name, path, err, body)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.API, req.Path, req.Body, req.Turn = api.name, path, body, -1
	if req.Main() {
		req.Turn = len(req.Results)
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()

	stream := isStream(body) || strings.HasSuffix(path, ":streamGenerateContent")
	if !req.Main() {
		api.write(w, stream, "", "", sideReply(body))
		return
	}
	if req.Turn >= len(m.turns) {
		m.problem("%s: turn %d is past the script's %d turns", api.name, req.Turn, len(m.turns))
		api.write(w, stream, "", "", "the script has ended")
		return
	}
	reply := m.turns[req.Turn](req)
	if reply.Tool == "" {
		api.write(w, stream, "", "", reply.Text)
		return
	}
	name := req.ToolBySuffix(reply.Tool)
	if d := bySuffix(req.Deferred, reply.Tool); name == "" && d != "" && req.ToolBySuffix(toolSearch) == toolSearch {
		// Load it the CLI's way; the script's turn is asked again after.
		api.write(w, stream, toolSearch, fmt.Sprintf(`{"query": "select:%s"}`, d), "")
		return
	}
	if name == "" {
		m.problem("%s turn %d: no single offered tool ends in %q: %v", api.name, req.Turn, reply.Tool, req.Tools)
		api.write(w, stream, "", "", "no such tool")
		return
	}
	args, err := json.Marshal(reply.Args)
	if err != nil || !bytes.HasPrefix(args, []byte("{")) {
		m.problem("turn %d: arguments %v are not a JSON object (%v)", req.Turn, reply.Args, err)
		args = []byte("{}")
	}
	api.write(w, stream, name, string(args), "")
}

func isStream(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &b)
	return b.Stream
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events; an empty event name writes data only.
type sse struct{ w http.ResponseWriter }

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// resultText is a tool result's content as text: a string as it is, a list
// of content blocks as their texts joined, anything else as its JSON.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// anthropicAPI is the Messages API (POST /v1/messages).
var anthropicAPI = stubAPI{name: "anthropic", parse: parseAnthropic, write: writeAnthropic}

// toolSearch is Claude Code's tool that loads a deferred tool.
const toolSearch = "ToolSearch"

func parseAnthropic(body []byte) (stubRequest, error) {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	var out stubRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return out, err
	}
	// A tool loaded through ToolSearch is offered, defer_loading and all.
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	texts := []string{resultText(req.System)}
	for _, msg := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(msg.Content, &blocks) != nil {
			texts = append(texts, resultText(msg.Content))
			continue
		}
		for _, b := range blocks {
			switch {
			case b.Type == "text":
				texts = append(texts, b.Text)
			case b.Type == "tool_result" && !loadedOnly(b.Content):
				out.Results = append(out.Results, resultText(b.Content))
			}
		}
	}
	if bySuffix(out.Tools, toolSearch) == toolSearch {
		for _, t := range texts {
			out.Deferred = append(out.Deferred, deferredList(t)...)
		}
	}
	return out, nil
}

// loadedOnly says whether a tool result is only tool references: the answer
// to a load through ToolSearch, which is the CLI's step, not the script's.
func loadedOnly(raw json.RawMessage) bool {
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type != "tool_reference" {
			return false
		}
	}
	return true
}

// deferredList reads the names Claude Code lists, one a line up to a blank
// line, after telling the model to load them with "select:<name>".
func deferredList(text string) []string {
	i := strings.Index(text, `"select:`)
	if i < 0 {
		return nil
	}
	j := strings.Index(text[i:], ":\n")
	if j < 0 {
		return nil
	}
	list, _, _ := strings.Cut(text[i+j+2:], "\n\n")
	return strings.Split(strings.TrimSpace(list), "\n")
}

func writeAnthropic(w http.ResponseWriter, stream bool, tool, args, text string) {
	block, stop := map[string]any{"type": "text", "text": text}, "end_turn"
	if tool != "" {
		block, stop = map[string]any{"type": "tool_use", "id": "toolu_stub" + stubID(), "name": tool, "input": json.RawMessage(args)}, "tool_use"
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msg := map[string]any{"id": "msg_stub" + stubID(), "type": "message", "role": "assistant", "model": "claude-stub",
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !stream {
		writeJSON(w, msg)
		return
	}
	s := startSSE(w)
	msg["content"], msg["stop_reason"] = []any{}, nil
	s.event("message_start", map[string]any{"type": "message_start", "message": msg})
	var delta map[string]any
	if tool != "" {
		block["input"] = map[string]any{}
		delta = map[string]any{"type": "input_json_delta", "partial_json": args}
	} else {
		block["text"] = ""
		delta = map[string]any{"type": "text_delta", "text": text}
	}
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// namespaceSep joins a namespace tool's name (Codex offers each MCP server's
// tools in one, named mcp__<server>) and the name of a tool in it.
const namespaceSep = "."

// responsesAPI is OpenAI's Responses API (POST /v1/responses).
var responsesAPI = stubAPI{name: "responses", parse: parseResponses, write: writeResponses}

func parseResponses(body []byte) (out stubRequest, err error) {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return out, err
	}
	for _, t := range req.Tools {
		if t.Type != "namespace" {
			out.Tools = append(out.Tools, t.Name)
		}
		for _, inner := range t.Tools {
			out.Tools = append(out.Tools, t.Name+namespaceSep+inner.Name)
		}
	}
	var items []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) == nil {
		for _, it := range items {
			if strings.HasSuffix(it.Type, "_output") && len(it.Output) > 0 {
				out.Results = append(out.Results, resultText(it.Output))
			}
		}
	}
	return out, nil
}

func writeResponses(w http.ResponseWriter, _ bool, tool, args, text string) {
	id := stubID()
	item := map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	if tool != "" {
		item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": tool, "arguments": args, "status": "completed"}
		if ns, name, ok := strings.Cut(tool, namespaceSep); ok {
			item["namespace"], item["name"] = ns, name
		}
	}
	resp := map[string]any{"id": "resp_" + id, "object": "response", "status": "in_progress", "model": "stub", "output": []any{}}
	s := startSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": resp})
	s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	if tool != "" {
		s.event("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": item["id"], "delta": args})
		s.event("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "output_index": 0, "item_id": item["id"], "arguments": args})
	} else {
		s.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": item["id"], "delta": text})
	}
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
	s.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// geminiAPI is Gemini's generateContent and streamGenerateContent (?alt=sse).
var geminiAPI = stubAPI{name: "gemini", parse: parseGemini, write: writeGemini}

func parseGemini(body []byte) (out stubRequest, err error) {
	var req struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return out, err
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			out.Tools = append(out.Tools, f.Name)
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			// {"output": "..."} or {"content": [...]}: the text of each value.
			var fields map[string]json.RawMessage
			if json.Unmarshal(p.FunctionResponse.Response, &fields) != nil {
				out.Results = append(out.Results, string(p.FunctionResponse.Response))
				continue
			}
			var parts []string
			for _, k := range []string{"output", "content", "error"} {
				if v, ok := fields[k]; ok {
					parts = append(parts, resultText(v))
				}
			}
			if len(parts) == 0 {
				parts = append(parts, string(p.FunctionResponse.Response))
			}
			out.Results = append(out.Results, strings.Join(parts, "\n"))
		}
	}
	return out, nil
}

func writeGemini(w http.ResponseWriter, stream bool, tool, args, text string) {
	part := map[string]any{"text": text}
	if tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": tool, "args": json.RawMessage(args)}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "gemini-stub",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	startSSE(w).event("", resp)
}

var stubIDs struct {
	sync.Mutex
	n int
}

// stubID is a fresh id suffix, unique within the run.
func stubID() string {
	stubIDs.Lock()
	defer stubIDs.Unlock()
	stubIDs.n++
	return fmt.Sprintf("%06d", stubIDs.n)
}
