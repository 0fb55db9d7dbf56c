package proxy_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/daemontest"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/toolspec"
)

func TestToolName(t *testing.T) {
	tests := []struct {
		argv0 string
		name  string
		ok    bool
	}{
		{"/x/y/.claude/tools/safe_bash/safe_bash", "safe_bash", true},
		{"safe_read", "safe_read", true},
		{"./safe_write", "safe_write", true},
		{"/usr/bin/contextd-proxy", "contextd-proxy", false},
		{"contextd-proxy", "contextd-proxy", false},
		{"/x/safe_bash/other", "other", false},
		{"/x/safe_bash/", "safe_bash", true}, // filepath.Base drops the trailing slash
		{"safe_rm", "safe_rm", false},
		{"SAFE_BASH", "SAFE_BASH", false},
		{"", ".", false},
	}
	for _, tt := range tests {
		name, ok := proxy.ToolName(tt.argv0)
		if name != tt.name || ok != tt.ok {
			t.Errorf("ToolName(%q) = %q, %v; want %q, %v", tt.argv0, name, ok, tt.name, tt.ok)
		}
	}
	for _, s := range toolspec.All() {
		if _, ok := proxy.ToolName("/opt/tools/" + s.Name + "/" + s.Name); !ok {
			t.Errorf("tool %s is not dispatched by argv[0]", s.Name)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, stdin string, argv ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := proxy.Main(context.Background(), argv, proxy.IO{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
	})
	return result{code, out.String(), errb.String()}
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		argv []string
		code int
		err  string // stderr prefix
		out  string // substring of stdout
	}{
		{[]string{"contextd-proxy", "nonsense"}, 64, "CTXD-E001", ""},
		{[]string{"/usr/local/bin/contextd-proxy", "--frobnicate"}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy", "install", "--frobnicate"}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy", "install", "--agent", "vim"}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy", "uninstall", "extra"}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy", "install", "a", "b"}, 64, "CTXD-E001", ""},
		{[]string{}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy"}, 0, "", "contextd-proxy install"},
		{[]string{"contextd-proxy", "help"}, 0, "", "CONTEXTD_SOCKET"},
		{[]string{"contextd-proxy", "version"}, 0, "", "contextd-proxy " + proxy.Version},
		{[]string{"contextd-proxy", "tools"}, 0, "", "safe_bash\nsafe_read\nsafe_write\n"},
		// Tool usage errors are found before any daemon is needed.
		{[]string{"safe_bash", "--bogus"}, 64, "CTXD-E001", ""},
		{[]string{"safe_read"}, 64, "CTXD-E001", ""},
		{[]string{"contextd-proxy", "safe_read", "a", "b"}, 64, "CTXD-E001", ""},
		{[]string{"safe_bash", "--json", "{"}, 65, "CTXD-E002", ""},
		// --help prints the tool's manual without a daemon.
		{[]string{"/t/safe_read/safe_read", "--help"}, 0, "", "usage: safe_read PATH"},
		{[]string{"contextd-proxy", "safe_write", "-h"}, 0, "", "safe_write --continue REF"},
	}
	t.Setenv("CONTEXTD_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	for _, tt := range tests {
		r := run(t, "", tt.argv...)
		if r.code != tt.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.argv, r.code, tt.code, r.stderr)
		}
		if tt.err != "" && !strings.HasPrefix(r.stderr, tt.err+": ") {
			t.Errorf("%q: stderr %q, want it to start with %s", tt.argv, r.stderr, tt.err)
		}
		if tt.err != "" && !strings.Contains(r.stderr, "\nhint: ") {
			t.Errorf("%q: stderr %q has no hint", tt.argv, r.stderr)
		}
		if tt.err == "" && r.stderr != "" {
			t.Errorf("%q: unexpected stderr %q", tt.argv, r.stderr)
		}
		if !strings.Contains(r.stdout, tt.out) {
			t.Errorf("%q: stdout %q lacks %q", tt.argv, r.stdout, tt.out)
		}
	}
}

// With no daemon behind the socket path, every tool fails with E010, exit 69, and
// says where it looked and how to start the daemon.
func TestMainNoDaemon(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")

	// A stale socket file: bound once, its listener closed without unlinking.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()

	for _, sock := range []string{missing, stale} {
		t.Setenv("CONTEXTD_SOCKET", sock)
		for _, tc := range []struct {
			stdin string
			argv  []string
		}{
			{"", []string{"/x/y/.claude/tools/safe_bash/safe_bash", "echo hi"}},
			{"", []string{"safe_read", "go.mod"}},
			{"content", []string{"safe_write", "out.txt"}},
			{"", []string{"contextd-proxy", "safe_bash", "--", "true"}},
			{"", []string{"safe_bash", "--format", "json", "true"}},
		} {
			r := run(t, tc.stdin, tc.argv...)
			if r.code != 69 || catalog.ExitUnavailable != 69 {
				t.Errorf("%s %q: exit %d, want 69", filepath.Base(sock), tc.argv, r.code)
			}
			if !strings.HasPrefix(r.stderr, "CTXD-E010: ") {
				t.Errorf("%q: stderr %q, want CTXD-E010 first", tc.argv, r.stderr)
			}
			if !strings.Contains(r.stderr, sock) {
				t.Errorf("%q: stderr %q does not name the socket %s", tc.argv, r.stderr, sock)
			}
			if !strings.Contains(r.stderr, "systemctl --user start contextd.socket") {
				t.Errorf("%q: stderr %q does not say how to start the daemon", tc.argv, r.stderr)
			}
			// Nothing ran, so nothing is printed as a result.
			if r.stdout != "" {
				t.Errorf("%q: stdout %q, want nothing", tc.argv, r.stdout)
			}
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("the proxy created the socket path")
	}
}

// startDaemon serves the real daemon until the test ends.
func startDaemon(t *testing.T) string { return daemontest.Start(t) }

// Main against a real daemon: argv[0] picks the tool, the command's exit status is
// the proxy's, and contextd's own failures are catalog codes with sysexits.
func TestMainAgainstDaemon(t *testing.T) {
	sock := startDaemon(t)
	t.Setenv("CONTEXTD_SOCKET", sock)
	t.Setenv("CONTEXTD_SESSION", "test-session")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)

	tests := []struct {
		stdin  string
		argv   []string
		code   int
		stdout string // exact, unless prefixed with "~" (substring)
		stderr string // prefix
	}{
		{"", []string{"/p/.claude/tools/safe_bash/safe_bash", "echo hi; exit 3"}, 3, "hi\n", ""},
		{"", []string{"safe_bash", "printf", "%s|", "a b", "$HOME"}, 0, "a b|$HOME|", ""},
		{"", []string{"safe_bash", "kill -TERM $$"}, 143, "", ""},
		{"exit 7\n", []string{"safe_bash"}, 7, "", ""},
		{"", []string{"safe_bash", "--timeout", "1", "--", "sleep 30"}, 124, "", "CTXD-E030"},
		{"line one\nline two\n", []string{"safe_write", "sub/f.txt"}, 0, "created sub/f.txt: 18 bytes, 2 lines, mode 0644\n", ""},
		{"", []string{"contextd-proxy", "safe_read", "sub/f.txt", "--offset", "2"}, 0, "     2\tline two\n", ""},
		{"", []string{"safe_read", ws + "/sub/f.txt", "--limit", "1"}, 0, "     1\tline one\n", ""},
		{"", []string{"safe_read", "../outside.txt"}, 77, "", "CTXD-E020"},
		{"", []string{"safe_write", "../outside.txt", "--content", "x"}, 77, "", "CTXD-E020"},
		{"", []string{"safe_read", "missing.txt"}, 66, "", "CTXD-E021"},
		{"", []string{"safe_read", "sub"}, 65, "", "CTXD-E022"},
		{"", []string{"safe_bash", "--cwd", "..", "pwd"}, 77, "", "CTXD-E020"},
		{"", []string{"safe_bash", "--json", `{"command":"true","extra":1}`}, 65, "", "CTXD-E002"},
		{"", []string{"safe_read", "--continue", "nope"}, 65, "", "CTXD-E040"},
		{"", []string{"safe_bash", "--format", "json", "echo out"}, 0, `~"data":"out\n"`, ""},
	}
	for _, tt := range tests {
		r := run(t, tt.stdin, tt.argv...)
		if r.code != tt.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.argv, r.code, tt.code, r.stderr)
		}
		if want, ok := strings.CutPrefix(tt.stdout, "~"); ok {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%q: stdout %q lacks %q", tt.argv, r.stdout, want)
			}
		} else if r.stdout != tt.stdout {
			t.Errorf("%q: stdout %q, want %q", tt.argv, r.stdout, tt.stdout)
		}
		if !strings.HasPrefix(r.stderr, tt.stderr) || tt.stderr == "" && r.stderr != "" {
			t.Errorf("%q: stderr %q, want prefix %q", tt.argv, r.stderr, tt.stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside.txt")); string(b) != "SECRET\n" {
		t.Errorf("outside file changed: %q", b)
	}

	// A daemon that does not run as the expected uid gets no call.
	t.Setenv("CONTEXTD_DAEMON_UID", strconv.Itoa(os.Getuid()+1))
	r := run(t, "", "safe_write", "never.txt", "--content", "x")
	if r.code != 77 || !strings.HasPrefix(r.stderr, "CTXD-E015: ") {
		t.Errorf("daemon of another uid: exit %d, stderr %q; want 77 CTXD-E015", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "never.txt")); err == nil {
		t.Error("the call reached a daemon of another uid")
	}
}
