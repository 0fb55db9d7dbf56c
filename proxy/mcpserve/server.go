// Package mcpserve is `contextd-proxy mcp`: contextd's tools served over MCP on
// stdio (official Go SDK), each call made to the daemon as the tool's symlink
// makes it, so budgets, scrubbing, sandboxing and audit are the daemon's as usual.
package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/ids"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/wire/lite"
)

// Options configure a Server. The zero value (or nil) is the documented default
// of each field.
type Options struct {
	// Session is the contextd session of every call of the connection.
	// Empty: $CONTEXTD_SESSION when set, else a new id "mcp-<uuid>", so that
	// one MCP connection is one session (branches, pages and the secrets a
	// read put behind placeholders belong to it).
	Session string
	// Socket is the daemon's socket. Empty: $CONTEXTD_SOCKET, else the
	// per-user default, looked up at each call like the symlinks do.
	Socket string
	// Notes receives what is meant for a person rather than the model (a
	// sandbox running without a systemd scope, a plugin tool not served).
	// Nil: discarded. Main passes standard error, which MCP clients keep in
	// their server log.
	Notes io.Writer
	// Root is the workspace whose enabled plugin tools are served. Empty:
	// the working directory's (its nearest ancestor holding .git), as
	// install finds it.
	Root string
	// ToolStore is the tool store's root. Empty: toolstore.Default().
	ToolStore string
	// Enablement is the record of each project's plugin tools. Empty:
	// toolstore.DefaultEnablement().
	Enablement string

	// Search overrides [mcp] search for this connection ("auto", "on",
	// "off", "defer"; empty: the configuration's).
	Search string

	cwd string // the working directory, where served servers are started
}

// socket is the daemon's socket as Options says.
func (o *Options) socket() string {
	if o.Socket != "" {
		return o.Socket
	}
	return client.SocketPath()
}

// Server serves contextd's tools to one MCP connection.
type Server struct {
	mcp     *mcp.Server
	session string
	socket  string
	notes   io.Writer
	noted   sync.Once
	plugins map[string]bool     // the plugin tools served
	hub     *hub                // the configured servers served here; nil: none
	listed  map[string][]string // full mode: each served server's listed names (hub.regMu)
}

const instructions = "contextd runs commands and file access in a sandbox, redacts secrets from results and cuts them to a token budget; use these tools instead of a built-in shell or file tools."

// New builds the server with every tool registered.
func New(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Session == "" {
		o.Session = os.Getenv("CONTEXTD_SESSION")
	}
	if o.Session == "" {
		o.Session = "mcp-" + ids.New()
	}
	if o.Notes == nil {
		o.Notes = io.Discard
	}
	if o.cwd == "" {
		o.cwd, _ = os.Getwd()
	}
	names, specs, err := served()
	if err != nil {
		return nil, fmt.Errorf("mcp: %v: %w", err, catalog.ErrInternal)
	}
	s := &Server{session: o.Session, socket: o.Socket, notes: o.Notes, plugins: map[string]bool{}}
	s.hub = loadHub(&o, o.Notes)
	// A full list of served tools is long enough for Claude Code to defer
	// tools behind its own search; contextd's own stay in view.
	var meta mcp.Meta
	if s.hub != nil && !s.hub.searchMode() {
		meta = alwaysLoad
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "contextd", Version: proxy.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// No logging capability: nothing is logged to the client. The tools
		// capability is added with the tools.
		Capabilities: &mcp.ServerCapabilities{},
	})
	for _, n := range names {
		c := specs[n]
		s.mcp.AddTool(&mcp.Tool{Name: n, Description: c.Description, InputSchema: c.Schema, Meta: meta}, s.handler(n))
	}
	pnames, pspecs := plugins(&o, o.Notes)
	for _, n := range pnames {
		c := pspecs[n]
		if err := addTool(s.mcp, &mcp.Tool{Name: n, Description: c.Description, InputSchema: c.Schema}, s.handler(n)); err != nil {
			fmt.Fprintf(o.Notes, "contextd: note: plugin tool %s not served: %v\n", n, err)
			continue
		}
		s.plugins[n] = true
	}
	if s.hub != nil {
		s.addHub()
	}
	return s, nil
}

// Close ends the sessions of the served servers.
func (s *Server) Close() {
	if s.hub != nil {
		s.hub.close()
	}
}

// Session is the contextd session the server's calls belong to.
func (s *Server) Session() string { return s.session }

// Connect serves one connection over t; see mcp.Server.Connect.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, t, nil)
}

// Run serves one connection over t until the client closes it or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	defer s.Close()
	return s.mcp.Run(ctx, t)
}

// handler makes the daemon call for tool.
func (s *Server) handler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		input, err := objectArgs(req.Params.Arguments)
		if err != nil {
			// Arguments that are not a JSON object are the client's protocol
			// mistake, not the model's: a JSON-RPC error.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %v", tool, err)}
		}
		name, cont := tool, ""
		if tool == continueTool {
			if name, cont, err = continueArgs(input, s.known); err != nil {
				return failure(err, nil), nil
			}
			input = nil
		}
		call, err := proxy.NewCall(name, input, cont, 0)
		if err != nil {
			return failure(err, nil), nil
		}
		call.Session = s.session
		return s.call(ctx, call), nil
	}
}

// known says whether tool is one the server serves (continue aside).
func (s *Server) known(tool string) bool {
	_, builtin := toolspec.Get(tool)
	return builtin || s.plugins[tool]
}

// objectArgs returns the arguments as the tool's JSON input: absent or null is
// the empty object.
func objectArgs(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("arguments must be a JSON object")
	}
	return json.RawMessage(t), nil
}

// continueArgs reads continue's input: exactly {"ref": "..."}.
func continueArgs(input json.RawMessage, known func(string) bool) (tool, ref string, err error) {
	var in struct {
		Ref *string `json:"ref"`
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return "", "", fmt.Errorf("continue: %v; its input is {\"ref\": \"...\"}: %w", err, catalog.ErrBadInput)
	}
	if in.Ref == nil {
		return "", "", fmt.Errorf("continue: ref is required: %w", catalog.ErrBadInput)
	}
	return parseRef(*in.Ref, known)
}

// call runs one call on its own connection to the daemon (calls of one MCP
// session may run concurrently). contextd's failures become isError results:
// the model reads them and can act on the code and hint.
func (s *Server) call(ctx context.Context, call *lite.Call) *mcp.CallToolResult {
	sock := s.socket
	if sock == "" {
		sock = client.SocketPath()
	}
	conn, err := client.Dial(sock)
	if err != nil {
		return failure(err, nil)
	}
	defer conn.Close()
	var out bytes.Buffer
	res, err := conn.Call(ctx, call, func(b []byte) { out.Write(b) })
	if err != nil {
		return failure(err, out.Bytes())
	}
	if sb := res.Sandbox; sb != nil && sb.Scope == "" && sb.ScopeNote != "" {
		s.noted.Do(func() {
			fmt.Fprintf(s.notes, "contextd: note: calls run without a systemd scope (no per-call memory/task limits): %s\n", sb.ScopeNote)
		})
	}
	return render(call.Tool, call.Continue != "", out.Bytes(), res)
}

// failure is the result of a call contextd itself failed: the error's code
// first, then its message and hint, then any output that came before it.
func failure(err error, out []byte) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(catalog.Format(err))
	if len(out) > 0 {
		b.WriteString("\n")
		b.Write(out)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}

// render turns the daemon's result into the MCP result: the output, then a
// line for each of safe_bash's exit status, and a plugin tool's when it is
// not 0 (not on a page: the first part said it), the warnings, and how to get the rest of a cut result. A failure
// of the tool (a catalog error in the result) is an isError result whose text
// starts with its code.
func render(tool string, page bool, out []byte, res *lite.Result) *mcp.CallToolResult {
	var b strings.Builder
	toolErr := catalog.FromDetail(res.Error)
	if toolErr != nil {
		b.WriteString(catalog.Format(toolErr))
		b.WriteString("\n")
	}
	b.Write(out)
	line := func(format string, a ...any) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, format+"\n", a...)
	}
	_, builtin := toolspec.Get(tool)
	if !page && toolErr == nil && (tool == "safe_bash" || !builtin && res.ExitCode != 0) {
		line("[exit status %d]", res.ExitCode)
	}
	for _, w := range res.Warnings {
		line("[warning: %s]", w)
	}
	if res.Truncated && res.Continue != "" {
		line(`[truncated: call continue with {"ref":"%s"} for the next part]`, formatRef(tool, res.Continue))
	}
	return &mcp.CallToolResult{IsError: toolErr != nil, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}

// Serve runs the server on r and w (newline-delimited JSON-RPC) until the
// client closes r or ctx ends; both are a normal end.
func Serve(ctx context.Context, opts *Options, r io.Reader, w io.Writer) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		// The client's side of stdio failed (ErrConnectionLost is the
		// daemon's connection, not this one).
		return fmt.Errorf("mcp: serving on standard input and output: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

const usage = `usage: contextd-proxy mcp [--search auto|on|off|defer]

Serves contextd's tools over MCP on standard input and output, for an agent to
start as a stdio MCP server, e.g. claude mcp add contextd -- contextd-proxy mcp
One run is one contextd session (CONTEXTD_SESSION, when set, names it).
The servers [mcp.servers.NAME] configures with a command or url are served
too, found through tool_search or listed in full as --search (default: [mcp]
search) says. See docs/mcp.md.
`

// Main is the MCP face's command: args are what follows "mcp". It returns the
// exit status; stdout carries only the protocol.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts := &Options{Notes: stderr}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "help" || a == "--help" || a == "-h":
			fmt.Fprint(stderr, usage)
			return 0
		case a == "--search" && i+1 < len(args):
			i++
			opts.Search = args[i]
		case strings.HasPrefix(a, "--search="):
			opts.Search = strings.TrimPrefix(a, "--search=")
		default:
			return usageError(stderr, fmt.Errorf("mcp: unexpected argument %q; %s: %w", a, strings.SplitN(usage, "\n", 2)[0], catalog.ErrUsage))
		}
	}
	switch opts.Search {
	case "", "auto", "on", "off", "defer":
	default:
		return usageError(stderr, fmt.Errorf("mcp: --search %q: use auto, on, off or defer: %w", opts.Search, catalog.ErrUsage))
	}
	if err := Serve(ctx, opts, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, catalog.Format(err))
		return catalog.ExitCode(err)
	}
	return 0
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, catalog.Format(err))
	return catalog.ExitCode(err)
}
