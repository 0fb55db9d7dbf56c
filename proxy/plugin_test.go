package proxy_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/daemontest"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/wire/lite"
)

const helloSchema = `{"type":"object","description":"Say hello.","properties":{"name":{"type":"string"},"times":{"type":"integer"}},"required":["name"]}`

// layOut installs the tools, and a plugin tool hello, into a tools
// directory and returns it with the path of hello's symlink.
func layOut(t *testing.T) (dir, hello string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(base, "tools")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plugin := install.Plugin{Name: "hello", Schema: []byte(helloSchema), Doc: []byte("# hello\nGreets.\n")}
	if _, err := install.Install(dir, self, plugin); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "hello", "hello")
}

// A name that is not built in is a tool only where install laid it out.
func TestToolNamePlugin(t *testing.T) {
	dir, hello := layOut(t)
	unrecorded := filepath.Join(t.TempDir(), "lint", "lint")
	if err := os.MkdirAll(filepath.Dir(unrecorded), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", unrecorded); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv0 string
		ok    bool
	}{
		{hello, true},
		{filepath.Join(dir, "hello", "other"), false}, // not the tool's own name
		{filepath.Join(dir, "other", "hello"), false}, // not in the tool's directory
		{filepath.Join(dir, "hello"), false},          // the directory itself
		{unrecorded, false},                           // laid out by someone else
		{"hello", true},                               // through PATH, below
		{"lint", false},                               // through PATH, no record
		{filepath.Join(dir, "safe_bash", "safe_bash"), true},
	}
	t.Setenv("PATH", filepath.Join(dir, "hello")+":"+filepath.Dir(unrecorded))
	for _, tt := range tests {
		if _, ok := proxy.ToolName(tt.argv0); ok != tt.ok {
			t.Errorf("ToolName(%q) = %v, want %v", tt.argv0, ok, tt.ok)
		}
	}
}

// The call a plugin tool's symlink sends is safe_bash's: the tool's name,
// its input as JSON, the working directory, the session, the environment
// without credentials, the budget asked for, or a continuation; the
// answer is printed the same way, the tool's exit status is the proxy's.
func TestPluginCall(t *testing.T) {
	_, hello := layOut(t)
	var mu sync.Mutex
	var calls []*lite.Call
	sock := daemontest.Fake(t, func(c *lite.Call) ([]byte, *lite.Result) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		if c.Continue != "" {
			return []byte("rest\n"), &lite.Result{}
		}
		return []byte("hello ann"), &lite.Result{ExitCode: 3, Truncated: true, Continue: "c42", Warnings: []string{"w1"}}
	})
	t.Setenv("CONTEXTD_SOCKET", sock)
	t.Setenv("CONTEXTD_SESSION", "s1")
	t.Setenv("GITHUB_TOKEN", "ghp_0123456789abcdefghijklmnopqrstuvwxyz")
	t.Setenv("PLAIN_VAR", "kept")
	cwd := t.TempDir()
	t.Chdir(cwd)

	tests := []struct {
		stdin  string
		args   []string
		code   int
		stdout string
		stderr string
		call   lite.Call // Tool, Input, Continue, MaxTokens
	}{
		{"", []string{"--name", "ann", "--times", "2", "--max-tokens", "99"}, 3,
			"hello ann\n[truncated: run the same tool with --continue c42 for the next part]\n", "contextd: warning: w1\n",
			lite.Call{Tool: "hello", Input: json.RawMessage(`{"name":"ann","times":2}`), MaxTokens: 99}},
		{`{"name":"bob","extra":[1]}`, []string{"-"}, 3, "", "contextd: warning: w1\n",
			lite.Call{Tool: "hello", Input: json.RawMessage(`{"name":"bob","extra":[1]}`)}},
		{"", []string{"--continue", "c42"}, 0, "rest\n", "",
			lite.Call{Tool: "hello", Continue: "c42"}},
	}
	for i, tt := range tests {
		var out, errb strings.Builder
		code := proxy.Main(t.Context(), append([]string{hello}, tt.args...), proxy.IO{Stdin: strings.NewReader(tt.stdin), Stdout: &out, Stderr: &errb})
		if code != tt.code || tt.stdout != "" && out.String() != tt.stdout || errb.String() != tt.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
		}
		mu.Lock()
		if len(calls) != i+1 {
			t.Fatalf("%q: the daemon got %d calls, want %d", tt.args, len(calls), i+1)
		}
		c := calls[i]
		mu.Unlock()
		if c.Tool != tt.call.Tool || string(c.Input) != string(tt.call.Input) || c.Continue != tt.call.Continue || c.MaxTokens != tt.call.MaxTokens {
			t.Errorf("%q: call %+v, want %+v", tt.args, c, tt.call)
		}
		if c.Cwd != cwd || c.Session != "s1" || c.Env["PLAIN_VAR"] != "kept" || c.Env["GITHUB_TOKEN"] != "" {
			t.Errorf("%q: call cwd %q session %q env PLAIN_VAR %q GITHUB_TOKEN %q", tt.args, c.Cwd, c.Session, c.Env["PLAIN_VAR"], c.Env["GITHUB_TOKEN"])
		}
	}

	// --format json is the same envelope as a built-in's.
	var out strings.Builder
	proxy.Main(t.Context(), []string{hello, "--name", "x", "--format", "json"}, proxy.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &strings.Builder{}})
	var env proxy.Envelope
	if err := json.Unmarshal([]byte(out.String()), &env); err != nil || env.Data != "hello ann" || env.Continue != "c42" || env.ExitCode == nil || *env.ExitCode != 3 {
		t.Errorf("--format json: %s (%v)", out.String(), err)
	}
}

// What the proxy finds wrong with a plugin tool's command line, or its
// layout, it says before any daemon is asked; --help needs none either.
func TestPluginWithoutDaemon(t *testing.T) {
	dir, hello := layOut(t)
	t.Setenv("CONTEXTD_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	tests := []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // prefix
	}{
		{[]string{"--help"}, 0, "# hello\nGreets.\nusage: hello --name STRING [--times INTEGER] | hello --json", ""},
		{[]string{"--times", "2"}, catalog.ExitUsage, "", "CTXD-E001: hello: --name is required; usage: hello --name STRING"},
		{[]string{"ann"}, catalog.ExitUsage, "", "CTXD-E001"},
		{[]string{"--json", "[]"}, catalog.ExitDataErr, "", "CTXD-E002"},
		{[]string{"--name", "x"}, catalog.ExitUnavailable, "", "CTXD-E010"},
	}
	for _, tt := range tests {
		r := run(t, "", append([]string{hello}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stdout, tt.stdout) || !strings.HasPrefix(r.stderr, tt.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
	// The schema gone from beside the symlink: install is to be run again.
	if err := os.Remove(filepath.Join(dir, "hello", "schema.json")); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "", hello, "--name", "x"); r.code != catalog.ExitUnavailable || !strings.HasPrefix(r.stderr, "CTXD-E080: ") || !strings.Contains(r.stderr, "install again") {
		t.Errorf("without schema.json: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The built proxy, started through a plugin tool's symlink by path and
// through PATH by name alone (argv[0] as a shell leaves it), sends the
// tool's call.
func TestPluginSymlinkBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds contextd-proxy")
	}
	bin := filepath.Join(t.TempDir(), "contextd-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/contextd/contextd/cmd/contextd-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "tools")
	if _, err := install.Install(dir, bin, install.Plugin{Name: "hello", Schema: []byte(helloSchema)}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *lite.Call, 2)
	sock := daemontest.Fake(t, func(c *lite.Call) ([]byte, *lite.Result) {
		got <- c
		return []byte("hi " + c.Tool + "\n"), &lite.Result{ExitCode: 5}
	})
	link := filepath.Join(dir, "hello", "hello")
	for _, argv0 := range []string{link, "hello"} {
		cmd := exec.Command(link, "--name", "ann")
		cmd.Args[0] = argv0 // as a shell that found it on PATH sets it
		cmd.Env = append(os.Environ(), "CONTEXTD_SOCKET="+sock, "PATH="+filepath.Join(dir, "hello"))
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 5 || string(out) != "hi hello\n" {
			t.Errorf("%s: %v, stdout %q; want exit 5 and the tool's output", argv0, err, out)
			continue
		}
		if c := <-got; c.Tool != "hello" || string(c.Input) != `{"name":"ann"}` {
			t.Errorf("%s: call %+v", argv0, c)
		}
	}
}
