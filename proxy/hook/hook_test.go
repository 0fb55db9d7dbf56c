package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/daemontest"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/proxy/install"
)

// payload is a PreToolUse input shaped, and ordered, as Claude Code documents
// it.
func payload(t testing.TB, cwd, tool string, input any) string {
	t.Helper()
	b, err := json.Marshal(struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Cwd            string `json:"cwd"`
		PermissionMode string `json:"permission_mode"`
		HookEventName  string `json:"hook_event_name"`
		ToolName       string `json:"tool_name"`
		ToolInput      any    `json:"tool_input"`
		ToolUseID      string `json:"tool_use_id"`
	}{
		"8c35adc1-3f0e-4b5e-9d1a-2a7c0d4e5f60",
		"/home/u/.claude/projects/-home-u-proj/8c35adc1-3f0e-4b5e-9d1a-2a7c0d4e5f60.jsonl",
		cwd, "default", "PreToolUse", tool, input, "toolu_01ABC123",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The documented tool_input of each built-in tool.
var builtins = []struct {
	tool  string
	input any
	names []string // what the message must name (MCP registered)
}{
	{"Bash", map[string]any{"command": "go test ./...", "description": "Run the tests", "timeout": 120000}, []string{"Bash", "mcp__contextd__safe_bash"}},
	{"Bash", map[string]any{"command": "npm run dev", "run_in_background": true}, []string{"mcp__contextd__safe_bash"}},
	{"Read", map[string]any{"file_path": "/home/u/proj/main.go"}, []string{"Read", "mcp__contextd__safe_read"}},
	{"Read", map[string]any{"file_path": "/home/u/proj/log.txt", "offset": 100, "limit": 50}, []string{"mcp__contextd__safe_read"}},
	{"Write", map[string]any{"file_path": "/home/u/proj/a.txt", "content": "hello\n"}, []string{"Write", "mcp__contextd__safe_read", "mcp__contextd__safe_write"}},
	{"Edit", map[string]any{"file_path": "/home/u/proj/a.go", "old_string": "foo", "new_string": "bar", "replace_all": false}, []string{"Edit", "mcp__contextd__safe_read", "mcp__contextd__safe_write"}},
	{"MultiEdit", map[string]any{"file_path": "/home/u/proj/a.go", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}, map[string]any{"old_string": "c", "new_string": "d", "replace_all": true}}}, []string{"MultiEdit", "mcp__contextd__safe_write"}},
	{"NotebookEdit", map[string]any{"notebook_path": "/home/u/proj/n.ipynb", "cell_id": "c1", "new_source": "print(1)", "cell_type": "code", "edit_mode": "replace"}, []string{"NotebookEdit", "mcp__contextd__safe_write"}},
	{"Grep", map[string]any{"pattern": "TODO", "path": "/home/u/proj", "glob": "*.go", "output_mode": "content", "-n": true, "-i": false}, []string{"Grep", "mcp__contextd__safe_bash", "rg"}},
	{"Glob", map[string]any{"pattern": "**/*.go", "path": "/home/u/proj"}, []string{"Glob", "mcp__contextd__safe_bash", "find"}},
}

type outcome struct {
	code           int
	stdout, stderr string
}

func runHook(t testing.TB, stdin io.Reader, o Options, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, stdin, &out, &errb, o)
	return outcome{code, out.String(), errb.String()}
}

// env builds a LookupEnv from pairs; nothing else is set (no HOME, no
// CONTEXTD_HOOK_BLOCKED), so the test's own environment never leaks in.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// registeredProject is a project where install registered contextd for Claude
// Code (so the hook names the mcp__contextd__ tools).
func registeredProject(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "proj")
	bin := filepath.Join(base, "contextd-proxy")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := install.Setup(context.Background(), install.Options{Project: root, Proxy: bin, NoClaudeCLI: true}); err != nil {
		t.Fatal(err)
	}
	return root
}

// startDaemon serves the real daemon until the test ends (the hook only asks
// for its status).
func startDaemon(t *testing.T) string { return daemontest.Start(t) }

func oneLineOut(t *testing.T, what string, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("%s: stderr is not one line: %q", what, s)
	}
}

// The built-in tools are refused with exit 2 and one line naming the contextd
// tool to use, as MCP tools where the project registered the server.
func TestBlocksBuiltins(t *testing.T) {
	root := registeredProject(t)
	sock := startDaemon(t)
	sub := filepath.Join(root, "sub", "dir")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range builtins {
		for _, where := range []struct {
			name string
			cwd  string
			env  []string
		}{
			{"cwd at the root", root, nil},
			{"cwd below the root", sub, nil},
			{"CLAUDE_PROJECT_DIR", "/", []string{"CLAUDE_PROJECT_DIR", root}},
		} {
			o := Options{LookupEnv: env(where.env...), ConfigFiles: []string{}, Socket: sock}
			r := runHook(t, strings.NewReader(payload(t, where.cwd, b.tool, b.input)), o)
			if r.code != ExitBlock {
				t.Errorf("%s (%s): exit %d, want 2 (%q)", b.tool, where.name, r.code, r.stderr)
				continue
			}
			oneLineOut(t, b.tool, r.stderr)
			for _, n := range b.names {
				if !strings.Contains(r.stderr, n) {
					t.Errorf("%s (%s): message does not name %s: %s", b.tool, where.name, n, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "not reachable") || strings.Contains(r.stderr, "not registered") || r.stdout != "" {
				t.Errorf("%s (%s): %+v", b.tool, where.name, r)
			}
		}
	}
}

// Outside a project install wired, the message names the tools and says how
// to register the MCP server.
func TestBlocksWithoutMCP(t *testing.T) {
	dir := t.TempDir()
	sock := startDaemon(t)
	r := runHook(t, strings.NewReader(payload(t, dir, "Bash", map[string]any{"command": "ls"})), Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: sock})
	if r.code != ExitBlock || !strings.Contains(r.stderr, "use safe_bash") || strings.Contains(r.stderr, "mcp__contextd__") ||
		!strings.Contains(r.stderr, "contextd-proxy install --agent claude") {
		t.Errorf("%+v", r)
	}
	oneLineOut(t, "no MCP", r.stderr)
}

// contextd's own tools, other MCP tools and tools not on the list go ahead
// silently.
func TestLetsThrough(t *testing.T) {
	root := registeredProject(t)
	for _, tool := range []string{
		"mcp__contextd__safe_bash", "mcp__contextd__safe_read", "mcp__contextd__memory_search",
		"mcp__github__create_issue", "mcp__filesystem__read_file",
		"safe_bash", "safe_write", "memory_store", "checkpoint_save", "return",
		"Task", "WebFetch", "WebSearch", "TodoWrite", "ExitPlanMode", "bash", "BashOutput",
	} {
		o := Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: filepath.Join(t.TempDir(), "none.sock")}
		r := runHook(t, strings.NewReader(payload(t, root, tool, map[string]any{"x": 1})), o)
		if r.code != ExitAllow || r.stderr != "" || r.stdout != "" {
			t.Errorf("%s: %+v, want exit 0 and no output", tool, r)
		}
	}
}

// A daemon that is not there does not make the refusal silent: the line says
// how to start it.
func TestBlockNamesHowToStartDaemon(t *testing.T) {
	root := registeredProject(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	for _, sock := range []string{filepath.Join(dir, "missing.sock"), stale} {
		o := Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: sock}
		r := runHook(t, strings.NewReader(payload(t, root, "Bash", map[string]any{"command": "make"})), o)
		if r.code != ExitBlock {
			t.Fatalf("%s: exit %d", sock, r.code)
		}
		oneLineOut(t, sock, r.stderr)
		for _, want := range []string{"mcp__contextd__safe_bash", "not reachable", sock, StartHint} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%s: message lacks %q: %s", filepath.Base(sock), want, r.stderr)
			}
		}
	}
}

// The block list: CONTEXTD_HOOK_BLOCKED, else [hook] blocked in the first
// configuration file that exists, else the default. A configuration that
// cannot be read keeps the default list (fail closed) and says so.
func TestBlockList(t *testing.T) {
	dir := t.TempDir()
	cfg := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing.toml")
	custom := cfg("custom.toml", "log_level = \"debug\"\n[tools.safe_bash]\nmax_tokens = 4000\n[hook]\nblocked = [\"Task\", \"WebFetch\", \"safe_bash\", \"mcp__contextd__safe_read\"]\n")
	empty := cfg("empty.toml", "[hook]\nblocked = []\n")
	other := cfg("other.toml", "idle_timeout = \"4s\"\n")
	broken := cfg("broken.toml", "[hook\nblocked = [\"Task\"]\n")
	wrongType := cfg("wrong.toml", "[hook]\nblocked = \"Bash\"\n")
	unreadable := filepath.Join(dir, "dir.toml")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	root := registeredProject(t)
	sock := startDaemon(t)

	tests := []struct {
		name   string
		env    []string
		files  []string
		tool   string
		code   int
		stderr []string
	}{
		{"default", nil, nil, "Bash", ExitBlock, []string{"safe_bash"}},
		{"default lets Task through", nil, []string{missing}, "Task", ExitAllow, nil},
		{"env adds a tool", []string{EnvBlocked, "WebFetch, Bash"}, nil, "WebFetch", ExitBlock, []string{"WebFetch", "blocked by " + EnvBlocked}},
		{"env replaces the default", []string{EnvBlocked, "WebFetch"}, nil, "Read", ExitAllow, nil},
		{"env empty blocks nothing", []string{EnvBlocked, ""}, nil, "Bash", ExitAllow, nil},
		{"env wins over a broken file", []string{EnvBlocked, "Bash"}, []string{broken}, "Bash", ExitBlock, nil},
		{"config file", nil, []string{missing, custom}, "Task", ExitBlock, []string{"Task", "custom.toml"}},
		{"config file replaces the default", nil, []string{custom}, "Bash", ExitAllow, nil},
		{"contextd's tools cannot be blocked", nil, []string{custom}, "safe_bash", ExitAllow, nil},
		{"contextd's MCP tools cannot be blocked", nil, []string{custom}, "mcp__contextd__safe_read", ExitAllow, nil},
		{"empty list", nil, []string{empty}, "Edit", ExitAllow, nil},
		{"first file that exists wins", nil, []string{other, custom}, "Bash", ExitBlock, nil},
		{"broken file: default list", nil, []string{broken}, "Bash", ExitBlock, []string{"safe_bash", "broken.toml", "default list"}},
		{"broken file: told on a tool let through", nil, []string{broken}, "Task", ExitError, []string{"broken.toml", "default list"}},
		{"wrong type: default list", nil, []string{wrongType}, "Write", ExitBlock, []string{"wrong.toml"}},
		{"unreadable: default list", nil, []string{unreadable}, "Glob", ExitBlock, []string{"dir.toml"}},
		{"XDG_CONFIG_HOME search path", []string{"XDG_CONFIG_HOME", xdg(t, "[hook]\nblocked = [\"Task\"]\n")}, nil, "Task", ExitBlock, nil},
	}
	for _, tt := range tests {
		files := tt.files
		if files == nil && !slices.Contains(tt.env, "XDG_CONFIG_HOME") {
			files = []string{}
		}
		o := Options{LookupEnv: env(tt.env...), ConfigFiles: files, Socket: sock}
		r := runHook(t, strings.NewReader(payload(t, root, tt.tool, map[string]any{})), o)
		if r.code != tt.code {
			t.Errorf("%s: exit %d, want %d (%q)", tt.name, r.code, tt.code, r.stderr)
			continue
		}
		if tt.code == ExitAllow && r.stderr != "" {
			t.Errorf("%s: stderr %q", tt.name, r.stderr)
		}
		if tt.code != ExitAllow {
			oneLineOut(t, tt.name, r.stderr)
		}
		for _, s := range tt.stderr {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%s: stderr lacks %q: %s", tt.name, s, r.stderr)
			}
		}
	}
}

// xdg makes an XDG_CONFIG_HOME holding contextd/config.toml.
func xdg(t *testing.T, content string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, "contextd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "contextd", "config.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// The hook looks where the daemon looks.
func TestSearchPathIsTheDaemons(t *testing.T) {
	for _, x := range []string{"", "/tmp/xdg"} {
		t.Setenv("XDG_CONFIG_HOME", x)
		t.Setenv("HOME", "/home/someone")
		if got, want := configSearchPath(Options{}), config.SearchPath(); !slices.Equal(got, want) {
			t.Errorf("XDG_CONFIG_HOME=%q: hook %v, daemon %v", x, got, want)
		}
	}
}

// The daemon accepts the [hook] table the hook reads, with the same default.
func TestDaemonAcceptsHookTable(t *testing.T) {
	if d := config.Default().Hook.Blocked; !slices.Equal(d, DefaultBlocked) {
		t.Errorf("daemon's default %v, hook's %v", d, DefaultBlocked)
	}
	c, err := config.Parse([]byte("[hook]\nblocked = [\"Bash\", \"WebFetch\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Hook.Blocked, []string{"Bash", "WebFetch"}) {
		t.Errorf("daemon read %v", c.Hook.Blocked)
	}
}

// Input the hook cannot read is a non-blocking error (exit 1, one line): the
// tool call goes ahead and the user sees why it was not checked.
func TestBadInput(t *testing.T) {
	tests := []struct{ name, in, says string }{
		{"empty", "", "ended early"},
		{"not JSON", "tool_name=Bash", "not a JSON object"},
		{"array", `[{"tool_name":"Bash"}]`, "not a JSON object"},
		{"string", `"Bash"`, "not a JSON object"},
		{"no tool_name", `{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{}}`, "no tool_name"},
		{"tool_name a number", `{"tool_name": 5, "hook_event_name":"PreToolUse"}`, "not a string"},
		{"tool_name an object", `{"tool_name": {"name":"Bash"}}`, "not a string"},
		{"tool_name null", `{"tool_name": null}`, "not a string"},
		{"empty tool_name", `{"tool_name": "", "hook_event_name":"PreToolUse"}`, "no tool_name"},
		{"truncated", `{"session_id":"s","cwd":"/p","tool_inp`, "not a JSON object"},
		{"broken after the event", `{"hook_event_name":"PreToolUse", "tool_input": {"command": ls}}`, "not a JSON object"},
		{"another event", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_response":{}}`, "PostToolUse"},
	}
	for _, tt := range tests {
		r := runHook(t, strings.NewReader(tt.in), Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: "/nonexistent"})
		if r.code != ExitError {
			t.Errorf("%s: exit %d, want 1 (%q)", tt.name, r.code, r.stderr)
			continue
		}
		oneLineOut(t, tt.name, r.stderr)
		if !strings.Contains(r.stderr, tt.says) {
			t.Errorf("%s: %q lacks %q", tt.name, r.stderr, tt.says)
		}
	}
	if r := runHook(t, strings.NewReader("{}"), Options{}, "--bogus"); r.code != ExitError || !strings.Contains(r.stderr, "--bogus") {
		t.Errorf("unknown argument: %+v", r)
	}
	if r := runHook(t, strings.NewReader(""), Options{}, "--help"); r.code != ExitAllow || !strings.Contains(r.stdout, "PreToolUse") {
		t.Errorf("--help: %+v", r)
	}
}

// Members the hook does not know, in any order and shape, are skipped; a
// missing hook_event_name reads as PreToolUse (the only event it is for).
func TestInputShapes(t *testing.T) {
	root := registeredProject(t)
	sock := startDaemon(t)
	tests := []struct {
		name, in string
		code     int
	}{
		{"unknown members first", `{"future":{"a":[1,{"b":null}]},"prompt_id":"p","effort":"high","scratchpad_dir":"/tmp/s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, ExitBlock},
		{"tool_input first", `{"tool_input":{"file_path":"/p/x","content":"{\"tool_name\":\"mcp__contextd__safe_bash\"}"},"tool_name":"Write","hook_event_name":"PreToolUse"}`, ExitBlock},
		{"no event name", `{"tool_name":"Read","tool_input":{"file_path":"/p/x"}}`, ExitBlock},
		{"duplicate tool_name: first counts", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_name":"mcp__contextd__safe_bash"}`, ExitBlock},
		{"event name of another shape", `{"hook_event_name":{"v":2},"tool_name":"Bash"}`, ExitBlock},
		{"cwd a number", `{"cwd":7,"hook_event_name":"PreToolUse","tool_name":"mcp__other__x"}`, ExitAllow},
		{"agent fields of a subagent", `{"agent_id":"a1","agent_type":"explore","hook_event_name":"PreToolUse","tool_name":"Grep","tool_input":{"pattern":"x"}}`, ExitBlock},
	}
	for _, tt := range tests {
		o := Options{LookupEnv: env("CLAUDE_PROJECT_DIR", root), ConfigFiles: []string{}, Socket: sock}
		r := runHook(t, strings.NewReader(tt.in), o)
		if r.code != tt.code {
			t.Errorf("%s: exit %d, want %d (%q)", tt.name, r.code, tt.code, r.stderr)
		}
	}
}

// repeat is an io.Reader of n copies of c, so that huge inputs cost no memory
// in the test.
type repeat struct {
	c     byte
	n     int64
	block []byte
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	if len(r.block) == 0 {
		r.block = bytes.Repeat([]byte{r.c}, 64<<10)
	}
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.block)
	}
	r.n -= int64(n)
	return n, nil
}

// A Write of a 256 MiB file: decided from the members before tool_input,
// which is read past (so Claude Code's write completes) but never held.
func TestHugeInput(t *testing.T) {
	root := registeredProject(t)
	sock := startDaemon(t)
	const size = 256 << 20
	huge := func(prefix string) io.Reader {
		return io.MultiReader(strings.NewReader(prefix), &repeat{c: 'a', n: size}, strings.NewReader(`"}}`))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	in := huge(`{"session_id":"s","cwd":"` + root + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/p/big","content":"`)
	r := runHook(t, in, Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: sock, DrainTimeout: time.Minute})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if r.code != ExitBlock || !strings.Contains(r.stderr, "mcp__contextd__safe_write") {
		t.Fatalf("%+v", r)
	}
	if n, _ := in.Read(make([]byte, 1)); n != 0 {
		t.Error("the input was not read to its end")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("the hook allocated %d MiB for a 256 MiB input", grew>>20)
	}
	t.Logf("256 MiB Write input: decided and drained in %v, %d KiB allocated", elapsed, (after.TotalAlloc-before.TotalAlloc)>>10)

	// Before the tool's name, input is bounded: past the limit it is an error
	// the user sees, not a guess.
	in = huge(`{"tool_input":{"content":"`)
	r = runHook(t, in, Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: sock, MaxInput: 1 << 20})
	if r.code != ExitError || !strings.Contains(r.stderr, "before tool_name") {
		t.Errorf("huge tool_input first: %+v", r)
	}
	// Known tool, no event name yet, limit reached: the name decides.
	in = huge(`{"tool_name":"Edit","tool_input":{"new_string":"`)
	r = runHook(t, in, Options{LookupEnv: env(), ConfigFiles: []string{}, Socket: sock, MaxInput: 1 << 20})
	if r.code != ExitBlock {
		t.Errorf("huge input after tool_name, no event: %+v", r)
	}
}

func TestParseInputFields(t *testing.T) {
	in, err := ParseInput(strings.NewReader(payload(t, "/home/u/proj", "Bash", map[string]any{"command": "ls"})), DefaultMaxInput)
	if err != nil {
		t.Fatal(err)
	}
	want := Input{
		SessionID:      "8c35adc1-3f0e-4b5e-9d1a-2a7c0d4e5f60",
		TranscriptPath: "/home/u/.claude/projects/-home-u-proj/8c35adc1-3f0e-4b5e-9d1a-2a7c0d4e5f60.jsonl",
		Cwd:            "/home/u/proj", HookEventName: "PreToolUse", ToolName: "Bash",
	}
	if *in != want {
		t.Errorf("%+v, want %+v", *in, want)
	}
	if _, err := ParseInput(strings.NewReader(`{"tool_input":"`+strings.Repeat("x", 100)+`"}`), 50); !errors.Is(err, ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
}

// FuzzParseInput: no input crashes the parser or makes it read past its limit;
// for a valid object with unique members it finds the same tool_name as
// encoding/json.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`))
	f.Add([]byte(`{"tool_input":{"a":[1,2,{"b":"c"}]},"tool_name":"mcp__contextd__safe_bash"}`))
	f.Add([]byte(`{"tool_name":5}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(`{"hook_event_name":{"x":[]},"tool_name":"Read"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 1 << 16
		r := &countingReader{r: bytes.NewReader(data)}
		in, err := ParseInput(r, max)
		if r.n > max {
			t.Fatalf("read %d bytes, limit %d", r.n, max)
		}
		if err == nil && in.ToolName == "" {
			t.Fatal("success without a tool name")
		}
		var m map[string]json.RawMessage
		if len(data) > max || json.Unmarshal(data, &m) != nil || !uniqueKeys(data) {
			return
		}
		var name string
		if json.Unmarshal(m["tool_name"], &name) != nil || name == "" {
			if err == nil {
				t.Fatalf("accepted %q without a tool_name string", data)
			}
			return
		}
		if err != nil || in.ToolName != name {
			t.Fatalf("%q: got %+v, %v; encoding/json reads tool_name %q", data, in, err, name)
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

// uniqueKeys reports whether the top-level object of data has no repeated
// member names.
func uniqueKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		if seen[k] {
			return false
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return true
}
