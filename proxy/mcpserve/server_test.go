package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/daemontest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/wire/lite"
)

// maxListTokens is what the whole tools/list answer may cost (issue 6).
const maxListTokens = 1200

// recorder keeps every line a writer is given.
type recorder struct {
	mu    sync.Mutex
	lines [][]byte
	buf   []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		r.lines = append(r.lines, slices.Clone(r.buf[:i]))
		r.buf = r.buf[i+1:]
	}
	return len(p), nil
}

// all returns the lines written so far.
func (r *recorder) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// answer returns the server's response line that holds key in its result.
func (r *recorder) answer(key string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if json.Unmarshal(l, &m) == nil && m.Result[key] != nil {
			return l
		}
	}
	return nil
}

// connectPiped runs s over a pair of pipes, as on stdio, with a real SDK client
// on the other ends; what the server writes is recorded byte for byte.
func connectPiped(t *testing.T, s *Server) (*mcp.ClientSession, *recorder) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// rec first: it has a line before the client can have read it, so a
	// test that looks at rec once a call returned finds it there.
	go func() {
		done <- s.Run(ctx, &mcp.IOTransport{Reader: c2sR, Writer: nopWriteCloser{io.MultiWriter(rec, s2cW)}})
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		s2cW.Close()
	})
	return cs, rec
}

// connect runs a server with opts over the SDK's in-memory transport.
func connect(t *testing.T, opts *Options) (*Server, *mcp.ClientSession) {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return s, cs
}

// The whole tools/list answer, as the server writes it, costs at most
// maxListTokens, and lists every tool of toolspec and continue.
func TestToolsListTokens(t *testing.T) {
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, rec := connectPiped(t, s)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
	}
	// The SDK lists tools by name.
	want := append(toolspec.Names(), "continue")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list names %v, want %v", got, want)
	}
	line := rec.answer("tools")
	if line == nil {
		t.Fatal("the tools/list answer was not seen on the wire")
	}
	n := budget.Default().Count(line)
	t.Logf("tools/list answer: %d bytes, %d tokens (%s), limit %d", len(line), n, budget.Encoding, maxListTokens)
	if n > maxListTokens {
		t.Fatalf("tools/list answer costs %d tokens, more than %d:\n%s", n, maxListTokens, line)
	}
}

// Every served schema keeps every property of schema.json, in its order, with
// its type or values, and the same required list; nothing else.
func TestCompactSpecKeepsTheContract(t *testing.T) {
	for _, sp := range toolspec.All() {
		c, err := compactSpec(sp.Schema)
		if err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		var src, got struct {
			Properties map[string]struct {
				Type  string   `json:"type"`
				Enum  []string `json:"enum"`
				Items *struct {
					Type string `json:"type"`
				} `json:"items"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(sp.Schema, &src); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c.Schema, &got); err != nil {
			t.Fatalf("%s: served schema is not JSON: %v", sp.Name, err)
		}
		if len(got.Properties) != len(src.Properties) {
			t.Errorf("%s: %d properties served, schema.json has %d", sp.Name, len(got.Properties), len(src.Properties))
		}
		for name, p := range src.Properties {
			g, ok := got.Properties[name]
			if !ok || g.Type != p.Type || !slices.Equal(g.Enum, p.Enum) || (p.Items == nil) != (g.Items == nil) {
				t.Errorf("%s.%s: served %+v, schema.json %+v", sp.Name, name, g, p)
			}
		}
		if !slices.Equal(got.Required, src.Required) {
			t.Errorf("%s: required %v, schema.json %v", sp.Name, got.Required, src.Required)
		}
		names, _, err := orderedProperties(mustField(t, sp.Schema, "properties"))
		if err != nil {
			t.Fatal(err)
		}
		served, _, _ := orderedProperties(mustField(t, c.Schema, "properties"))
		if !slices.Equal(names, served) {
			t.Errorf("%s: property order %v, schema.json %v", sp.Name, served, names)
		}
	}
}

func mustField(t *testing.T, obj []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

func TestCompactSpecRefusesWhatItCannotServe(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"not JSON", `{`},
		{"not an object schema", `{"type":"string","description":"x"}`},
		{"no description", `{"type":"object","properties":{}}`},
		{"properties not an object", `{"type":"object","description":"x","properties":[]}`},
		{"property without type", `{"type":"object","description":"x","properties":{"a":{"description":"y"}}}`},
	}
	for _, tt := range tests {
		if _, err := compactSpec([]byte(tt.in)); err == nil {
			t.Errorf("%s: accepted %s", tt.name, tt.in)
		}
	}
}

func TestParseRef(t *testing.T) {
	ref := "c0123456789abcdef0123456789abcdef-1f"
	tests := []struct {
		in       string
		tool, rf string
		err      error
	}{
		{"safe_bash:" + ref, "safe_bash", ref, nil},
		{"checkpoint_restore:x", "checkpoint_restore", "x", nil},
		{ref, "", "", catalog.ErrUnknownContinuation},
		{"safe_bash:", "", "", catalog.ErrUnknownContinuation},
		{":" + ref, "", "", catalog.ErrUnknownContinuation},
		{"continue:" + ref, "", "", catalog.ErrUnknownContinuation},
		{"rm:" + ref, "", "", catalog.ErrUnknownContinuation},
		{"safe_bash:a b", "", "", catalog.ErrUnknownContinuation},
		{"safe_bash:a\nb", "", "", catalog.ErrUnknownContinuation},
		{"safe_bash:" + strings.Repeat("a", maxRef), "", "", catalog.ErrUnknownContinuation},
	}
	for _, tt := range tests {
		tool, rf, err := parseRef(tt.in, builtinTool)
		if !errors.Is(err, tt.err) || tool != tt.tool || rf != tt.rf {
			t.Errorf("parseRef(%q) = %q, %q, %v; want %q, %q, %v", tt.in, tool, rf, err, tt.tool, tt.rf, tt.err)
		}
	}
}

// FuzzParseRef: references come back from the model.
func FuzzParseRef(f *testing.F) {
	f.Add("safe_bash:c0123456789abcdef0123456789abcdef")
	f.Add("safe_read:")
	f.Add(":")
	f.Add("memory_get:\x00")
	f.Fuzz(func(t *testing.T, s string) {
		tool, ref, err := parseRef(s, builtinTool)
		if err != nil {
			if !errors.Is(err, catalog.ErrUnknownContinuation) {
				t.Fatalf("parseRef(%q): unclassified error %v", s, err)
			}
			return
		}
		if _, ok := toolspec.Get(tool); !ok || ref == "" || formatRef(tool, ref) != s {
			t.Fatalf("parseRef(%q) = %q, %q", s, tool, ref)
		}
	})
}

func TestContinueArgs(t *testing.T) {
	tests := []struct {
		in   string
		tool string
		err  error
	}{
		{`{"ref":"safe_read:cabc"}`, "safe_read", nil},
		{`{}`, "", catalog.ErrBadInput},
		{`{"ref":null}`, "", catalog.ErrBadInput},
		{`{"ref":5}`, "", catalog.ErrBadInput},
		{`{"ref":"safe_read:cabc","tool":"x"}`, "", catalog.ErrBadInput},
		{`{"ref":"cabc"}`, "", catalog.ErrUnknownContinuation},
	}
	for _, tt := range tests {
		tool, _, err := continueArgs(json.RawMessage(tt.in), builtinTool)
		if !errors.Is(err, tt.err) || tool != tt.tool {
			t.Errorf("continueArgs(%s) = %q, %v; want %q, %v", tt.in, tool, err, tt.tool, tt.err)
		}
	}
}

// FuzzArgs: a tool's arguments come from the client; only JSON objects pass,
// and continue's are read strictly.
func FuzzArgs(f *testing.F) {
	f.Add([]byte(`{"ref":"safe_bash:c00"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(` [1] `))
	f.Add([]byte(`{"ref":"x","ref":"y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := objectArgs(b)
		if err != nil {
			return
		}
		if !json.Valid(in) || in[0] != '{' {
			t.Fatalf("objectArgs(%q) = %q", b, in)
		}
		tool, ref, err := continueArgs(in, builtinTool)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) && !errors.Is(err, catalog.ErrUnknownContinuation) {
				t.Fatalf("continueArgs(%q): unclassified error %v", in, err)
			}
			return
		}
		if _, ok := toolspec.Get(tool); !ok || ref == "" {
			t.Fatalf("continueArgs(%q) = %q, %q", in, tool, ref)
		}
	})
}

func TestRender(t *testing.T) {
	timeout := catalog.ToDetail(catalog.ErrTimeout)
	tests := []struct {
		name    string
		tool    string
		page    bool
		out     string
		res     lite.Result
		isError bool
		want    string
	}{
		{"bash exit status", "safe_bash", false, "boom", lite.Result{ExitCode: 3}, false, "boom\n[exit status 3]\n"},
		{"bash success", "safe_bash", false, "", lite.Result{}, false, "[exit status 0]\n"},
		{"bash page", "safe_bash", true, "2\n", lite.Result{}, false, "2\n"},
		{"read as is", "safe_read", false, "     1\tx\n", lite.Result{}, false, "     1\tx\n"},
		{"warnings", "safe_read", false, "x\n", lite.Result{Warnings: []string{"branch 81% spent"}}, false, "x\n[warning: branch 81% spent]\n"},
		{"cut", "safe_read", false, "head", lite.Result{Truncated: true, Continue: "cabc"}, false,
			"head\n[truncated: call continue with {\"ref\":\"safe_read:cabc\"} for the next part]\n"},
		{"tool failure", "safe_bash", false, "partial\n", lite.Result{ExitCode: 124, Error: timeout}, true,
			catalog.Format(catalog.FromDetail(timeout)) + "\npartial\n"},
		{"plugin success", "hello", false, "hi\n", lite.Result{}, false, "hi\n"},
		{"plugin exit status", "hello", false, "hi", lite.Result{ExitCode: 4}, false, "hi\n[exit status 4]\n"},
		{"plugin page", "hello", true, "rest", lite.Result{ExitCode: 4}, false, "rest"},
		{"plugin cut", "hello", false, "a\n", lite.Result{Truncated: true, Continue: "c1"}, false,
			"a\n[truncated: call continue with {\"ref\":\"hello:c1\"} for the next part]\n"},
	}
	for _, tt := range tests {
		r := render(tt.tool, tt.page, []byte(tt.out), &tt.res)
		if r.IsError != tt.isError || len(r.Content) != 1 {
			t.Errorf("%s: isError %v, %d contents", tt.name, r.IsError, len(r.Content))
			continue
		}
		if got := r.Content[0].(*mcp.TextContent).Text; got != tt.want {
			t.Errorf("%s: text %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSession(t *testing.T) {
	uuid := regexp.MustCompile(`^mcp-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	t.Setenv("CONTEXTD_SESSION", "")
	a, _ := New(nil)
	b, _ := New(&Options{})
	if !uuid.MatchString(a.Session()) || !uuid.MatchString(b.Session()) || a.Session() == b.Session() {
		t.Errorf("sessions of two connections: %q, %q; want two different mcp-<uuid>", a.Session(), b.Session())
	}
	t.Setenv("CONTEXTD_SESSION", "agent-7")
	if c, _ := New(nil); c.Session() != "agent-7" {
		t.Errorf("with CONTEXTD_SESSION=agent-7 the session is %q", c.Session())
	}
	if d, _ := New(&Options{Session: "given"}); d.Session() != "given" {
		t.Errorf("Options.Session ignored: %q", d.Session())
	}
}

func TestMainArgs(t *testing.T) {
	tests := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--help"}, 0, ""},
		{[]string{"serve"}, catalog.ExitUsage, "CTXD-E001: "},
		{[]string{"wrap", "--", "x"}, catalog.ExitUsage, "CTXD-E001: "},
		{[]string{"--search", "maybe"}, catalog.ExitUsage, "CTXD-E001: "},
		{[]string{"--search=sometimes"}, catalog.ExitUsage, "CTXD-E001: "},
		{[]string{"--search"}, catalog.ExitUsage, "CTXD-E001: "},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
		if code != tt.code || !strings.HasPrefix(errb.String(), tt.err) || out.Len() != 0 {
			t.Errorf("Main(%q): exit %d, stdout %q, stderr %q; want exit %d, stderr %q...", tt.args, code, out.String(), errb.String(), tt.code, tt.err)
		}
	}
	// The client closing stdin ends the server, normally.
	var out, errb bytes.Buffer
	if code := Main(context.Background(), nil, strings.NewReader(""), &out, &errb); code != 0 {
		t.Errorf("Main at end of input: exit %d, stderr %q", code, errb.String())
	}
}

// Main speaks the protocol on its streams: an initialize and a tools/list
// written as lines get their answers as lines, and nothing else is written.
func TestMainSpeaksStdio(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe_rm","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"safe_read","arguments":["x"]}}`,
	}, "\n") + "\n"
	pr, pw := io.Pipe()
	out := &recorder{}
	var errb bytes.Buffer
	done := make(chan int)
	go func() { done <- Main(context.Background(), nil, pr, out, &errb) }()
	io.WriteString(pw, in)
	// Answers come asynchronously; give them time before closing stdin.
	deadline := time.Now().Add(10 * time.Second)
	for len(out.all()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	answers := map[int]map[string]json.RawMessage{}
	for _, l := range out.all() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("stdout holds a line that is not JSON: %q", l)
		}
		var id int
		json.Unmarshal(m["id"], &id)
		answers[id] = m
	}
	if answers[1]["result"] == nil || !bytes.Contains(answers[1]["result"], []byte(`"name":"contextd"`)) {
		t.Errorf("initialize: %s", answers[1]["result"])
	}
	if !bytes.Contains(answers[2]["result"], []byte(`"name":"safe_bash"`)) {
		t.Errorf("tools/list: %s", answers[2]["result"])
	}
	for _, id := range []int{3, 4} {
		var e jsonrpc.Error
		if answers[id]["error"] == nil || json.Unmarshal(answers[id]["error"], &e) != nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("request %d: want a JSON-RPC invalid-params error, got %v", id, answers[id])
		}
	}
}

// startDaemon serves the real daemon (its real pipeline: scrubbing, budgets,
// pages, audit, state store) on a socket of its own until the test ends; tools
// run without the namespace sandbox, which has its own tests.
func startDaemon(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	return daemontest.Start(t)
}

// callText calls a tool and returns its text and isError; a protocol error
// fails the test.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// Every tool over MCP against a real daemon.
func TestToolsAgainstDaemon(t *testing.T) {
	sock := startDaemon(t)
	t.Setenv("CONTEXTD_SESSION", "")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	secret := "ghp_" + "R8kq3NfV7bX2mT9wZ4cLpY6dH1sJ5gA0eUoI"
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("GITHUB_TOKEN="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, cs := connect(t, &Options{Socket: sock})

	type step struct {
		tool    string
		args    any
		isError bool
		want    []string // substrings of the text; a leading "^" means prefix
		not     []string
	}
	steps := []step{
		{"safe_write", map[string]any{"path": "sub/f.txt", "content": "one\ntwo\n"}, false, []string{"created sub/f.txt"}, nil},
		{"safe_read", map[string]any{"path": "sub/f.txt", "offset": 2}, false, []string{"^     2\ttwo\n"}, []string{"one"}},
		{"safe_bash", map[string]any{"command": "cat sub/f.txt; echo $CONTEXTD_SESSION; exit 3"}, false,
			[]string{"^one\ntwo\n" + srv.Session() + "\n", "[exit status 3]"}, nil},
		{"safe_read", map[string]any{"path": ".env"}, false, []string{"[REDACTED:"}, []string{secret}},
		{"safe_bash", map[string]any{"command": "cat .env"}, false, []string{"[REDACTED:"}, []string{secret}},
		{"safe_read", map[string]any{"path": "../outside"}, true, []string{"^CTXD-E020: "}, nil},
		{"safe_read", map[string]any{"path": "missing.txt"}, true, []string{"^CTXD-E021: ", "\nhint: "}, nil},
		{"safe_bash", map[string]any{"command": "true", "extra": 1}, true, []string{"^CTXD-E002: "}, nil},
		{"safe_bash", map[string]any{}, true, []string{"^CTXD-E002: "}, nil},
		{"safe_bash", map[string]any{"command": "sleep 30", "timeout": 1}, true, []string{"^CTXD-E030: "}, nil},
		{"continue", map[string]any{"ref": "safe_read:c0123456789abcdef0123456789abcdef"}, true, []string{"^CTXD-E040: "}, nil},
		{"continue", map[string]any{"ref": "nope"}, true, []string{"^CTXD-E040: "}, nil},
		{"memory_get", map[string]any{"id": "00000000-0000-4000-8000-000000000000"}, true, []string{"^CTXD-E070: "}, nil},
		{"return", map[string]any{"summary": "nothing open"}, true, []string{"^CTXD-E072: "}, nil},
		{"checkpoint_list", nil, false, nil, nil},
	}
	for _, st := range steps {
		text, isErr := callText(t, cs, st.tool, st.args)
		if isErr != st.isError {
			t.Errorf("%s %v: isError %v, want %v:\n%s", st.tool, st.args, isErr, st.isError, text)
			continue
		}
		for _, w := range st.want {
			if p, ok := strings.CutPrefix(w, "^"); ok && !strings.HasPrefix(text, p) || !ok && !strings.Contains(text, w) {
				t.Errorf("%s %v: text lacks %q:\n%s", st.tool, st.args, w, text)
			}
		}
		for _, n := range st.not {
			if strings.Contains(text, n) {
				t.Errorf("%s %v: text holds %q:\n%s", st.tool, st.args, n, text)
			}
		}
	}

	// A long output is cut to the budget and paged to its end with continue.
	text, _ := callText(t, cs, "safe_bash", map[string]any{"command": "seq 1 30000"})
	refRe := regexp.MustCompile(`\[truncated: call continue with \{"ref":"(safe_bash:[^"]+)"\} for the next part\]\n$`)
	m := refRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("seq 1 30000 was not cut with a continue line:\n%.300s...%s", text, text[max(0, len(text)-300):])
	}
	var all strings.Builder
	pages := 0
	for ref := m[1]; ref != ""; pages++ {
		page, isErr := callText(t, cs, "continue", map[string]any{"ref": ref})
		if isErr || pages > 200 {
			t.Fatalf("page %d: isError %v:\n%.300s", pages, isErr, page)
		}
		if n := budget.Default().Count([]byte(page)); n > 2000+100 {
			t.Errorf("page %d costs %d tokens", pages, n)
		}
		ref = ""
		if m := refRe.FindStringSubmatch(page); m != nil {
			ref = m[1]
			page = strings.TrimSuffix(page, m[0])
		}
		all.WriteString(page)
	}
	var want strings.Builder
	for i := 1; i <= 30000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if !strings.Contains(all.String(), want.String()) {
		t.Errorf("the %d pages (%d bytes) do not hold seq 1 30000 (%d bytes)", pages, all.Len(), want.Len())
	}

	// The state tools, in this connection's session.
	text, isErr := callText(t, cs, "memory_store", map[string]any{
		"title": "Wait for Postgres in integration tests", "description": "Use when an integration test hangs on its database.",
		"content": "Poll pg_isready before the first query.", "outcome": "success", "tags": []string{"go"}})
	id := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).FindString(text)
	if isErr || id == "" {
		t.Fatalf("memory_store: %v %s", isErr, text)
	}
	if text, isErr := callText(t, cs, "memory_search", map[string]any{"query": "integration test hangs on postgres"}); isErr || !strings.Contains(text, id) {
		t.Errorf("memory_search does not find %s: %s", id, text)
	}
	if text, isErr := callText(t, cs, "memory_get", map[string]any{"id": id}); isErr || !strings.Contains(text, "pg_isready") {
		t.Errorf("memory_get: %s", text)
	}
	if text, isErr := callText(t, cs, "memory_feedback", map[string]any{"id": id, "helpful": true}); isErr || !strings.Contains(text, "confidence") {
		t.Errorf("memory_feedback: %s", text)
	}
	text, isErr = callText(t, cs, "checkpoint_save", map[string]any{"summary": "halfway through the MCP face", "name": "mcp"})
	ck := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).FindString(text)
	if isErr || ck == "" {
		t.Fatalf("checkpoint_save: %s", text)
	}
	if text, isErr := callText(t, cs, "checkpoint_list", map[string]any{}); isErr || !strings.Contains(text, ck) {
		t.Errorf("checkpoint_list: %s", text)
	}
	if text, isErr := callText(t, cs, "checkpoint_restore", map[string]any{"id": ck, "level": "summary"}); isErr || !strings.Contains(text, "halfway through") {
		t.Errorf("checkpoint_restore: %s", text)
	}
	if text, isErr := callText(t, cs, "branch", map[string]any{"description": "look around", "budget": 500}); isErr {
		t.Fatalf("branch: %s", text)
	}
	if text, isErr := callText(t, cs, "return", map[string]any{"summary": "found the parser"}); isErr || !strings.Contains(text, "found the parser") {
		t.Errorf("return: %s", text)
	}

	// Another connection is another session: it cannot page this one's output.
	_, other := connect(t, &Options{Socket: sock})
	if text, isErr := callText(t, other, "continue", map[string]any{"ref": m[1]}); !isErr || !strings.HasPrefix(text, "CTXD-E040: ") {
		t.Errorf("another session paged this one's output: %v %.200s", isErr, text)
	}

	// Protocol errors stay protocol errors.
	for _, p := range []*mcp.CallToolParams{
		{Name: "safe_rm", Arguments: map[string]any{}},
		{Name: "safe_read", Arguments: []string{"x"}},
		{Name: "safe_read", Arguments: "x"},
	} {
		res, err := cs.CallTool(context.Background(), p)
		var we *jsonrpc.Error
		if err == nil || !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s %v: want a JSON-RPC invalid-params error, got %v, %+v", p.Name, p.Arguments, err, res)
		}
	}
}

// Without a daemon every call is an isError result with CTXD-E010 that names
// the socket and how to start the daemon.
func TestNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	t.Setenv("CONTEXTD_SOCKET", sock)
	_, cs := connect(t, nil)
	for _, name := range append(toolspec.Names(), "continue") {
		args := map[string]any{}
		if name == "continue" {
			args["ref"] = "safe_bash:c0123456789abcdef0123456789abcdef"
		}
		text, isErr := callText(t, cs, name, args)
		if !isErr || !strings.HasPrefix(text, "CTXD-E010: ") || !strings.Contains(text, sock) || !strings.Contains(text, "systemctl --user start contextd.socket") {
			t.Errorf("%s without a daemon: isError %v, text %q", name, isErr, text)
		}
	}
}
