package mcpwrap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/mcp/jsonrpc"
	mcpstore "github.com/contextd/contextd/mcp/store"
	"github.com/contextd/contextd/mcp/transport"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/wire/lite"
)

// A GitHub token of the documented shape: ghp_ and 36 letters and digits.
const testToken = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"

var testScrubber = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

// failRunner fails every call with err, as the sandbox does for a program it
// cannot start, without running anything.
type failRunner struct{ err error }

func (f failRunner) Run(context.Context, runner.Spec) (runner.Exit, error) {
	return runner.Exit{}, f.err
}

// wrapEnv is a Wrapper on a temporary home, project, record store and page
// store.
type wrapEnv struct {
	t       *testing.T
	w       *Wrapper
	home    string
	project string
	cfg     *config.Config
}

func newWrapEnv(t *testing.T, r runner.Runner) *wrapEnv {
	t.Helper()
	dir := t.TempDir()
	e := &wrapEnv{t: t, home: filepath.Join(dir, "home"), cfg: config.Default()}
	e.project = filepath.Join(e.home, "proj")
	if err := os.MkdirAll(filepath.Join(e.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.cfg.Source = filepath.Join(e.home, ".config", "contextd", "config.toml")
	st, err := mcpstore.Open(&mcpstore.Options{Path: filepath.Join(dir, "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pg, err := pages.Open(&pages.Options{Dir: filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	sc, err := testScrubber()
	if err != nil {
		t.Fatal(err)
	}
	vault := scrub.NewVault()
	e.w = New(Deps{
		Runner: r, Config: e.cfg, Log: slog.New(slog.DiscardHandler), Scrubber: sc,
		Vault: func(string) *scrub.Vault { return vault }, Pages: pg, Counter: budget.Default(),
		Stores: func(context.Context) (Stores, error) { return st, nil },
		// The daemon's own builder (a wrap without one is refused), with no
		// home view and no proxy.
		Sandbox: &sandboxenv.Builder{Config: e.cfg, HomeDir: e.home},
	})
	return e
}

// wrapRun is one wrap session driven as the proxy drives it.
type wrapRun struct {
	conn   net.Conn
	lines  *bufio.Reader
	served chan error
}

// start opens a wrap session of command and returns once the daemon said
// it is ready.
func (e *wrapEnv) start(name string, command ...string) *wrapRun {
	e.t.Helper()
	client, daemon := net.Pipe()
	r := &wrapRun{conn: client, served: make(chan error, 1)}
	go func() {
		r.served <- e.w.Serve(context.Background(), daemon, &lite.Wrap{Name: name, Command: command, Cwd: e.project,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}}, "sess-1")
		daemon.Close()
	}()
	e.t.Cleanup(func() { client.Close() })
	client.SetDeadline(time.Now().Add(30 * time.Second))
	var ev lite.Event
	if err := lite.Read(client, &ev, 1<<20); err != nil || ev.Wrap == nil {
		e.t.Fatalf("wrap %v: no WrapReady: %+v, %v", command, ev, err)
	}
	r.lines = bufio.NewReader(client)
	return r
}

func (r *wrapRun) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(r.conn, msg+"\n"); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

// answer reads the next message from the server (or its stand-in).
func (r *wrapRun) answer(t *testing.T) map[string]any {
	t.Helper()
	line, err := r.lines.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer: %v (read %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return m
}

// end closes the client's side and waits for the session to end.
func (r *wrapRun) end(t *testing.T) error {
	t.Helper()
	r.conn.Close()
	select {
	case err := <-r.served:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the wrap session did not end 30 s after its client closed")
	}
	return nil
}

// wrapEnd asks what the proxy asks once its conversation ended.
func (e *wrapEnv) wrapEnd(record string) error {
	e.t.Helper()
	args, _ := json.Marshal(lite.WrapEndArgs{Record: record})
	raw, err := e.w.Admin(context.Background(), lite.OpWrapEnd, args)
	if err != nil {
		e.t.Fatal(err)
	}
	var end lite.WrapEnd
	if err := json.Unmarshal(raw, &end); err != nil {
		e.t.Fatal(err)
	}
	return catalog.FromDetail(end.Failure)
}

// newest is the newest recorded session, as `contextd mcp sessions list`
// gets it.
func (e *wrapEnv) newest() SessionInfo {
	e.t.Helper()
	raw, err := e.w.Admin(context.Background(), OpSessions, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	var ss []SessionInfo
	if err := json.Unmarshal(raw, &ss); err != nil || len(ss) == 0 {
		e.t.Fatalf("sessions %s: %v", raw, err)
	}
	return ss[0]
}

// The client's initialize is answered with an error saying what happened
// and what to do, whether the server never started or exited at once; the
// record and the wrap's question after the end say the same.
func TestWrapServerFailure(t *testing.T) {
	outside := t.TempDir() // neither the project nor a system directory
	entry := filepath.Join(outside, "srv", "node_modules", "mcp-server-outside", "index.js")
	bin := filepath.Join(outside, "srv", "node_modules", ".bin", "mcp-server-outside")
	for _, d := range []string{filepath.Dir(entry), filepath.Dir(bin)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(entry, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../mcp-server-outside/index.js", bin); err != nil {
		t.Fatal(err)
	}
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	tests := []struct {
		name    string
		runner  runner.Runner
		command []string
		class   *catalog.Class
		want    []string // in the message
		notWant []string
	}{{
		name:    "not visible in the sandbox",
		runner:  failRunner{&runner.StartError{Path: bin, Errno: syscall.ENOENT}},
		command: []string{bin},
		class:   catalog.ErrServerStart,
		want: []string{"CTXD-E033: mcp wrap: the wrapped server could not be started: " + bin + " is not visible in the sandbox",
			`put read_only = ["` + filepath.Join(outside, "srv") + `"] under [mcp.servers.outside]`,
			"restart contextd", "\nhint: "},
	}, {
		name:    "a failed sandbox layer stays one",
		runner:  failRunner{fmt.Errorf("systemd scope for mcp-server: refused: %w", catalog.ErrSandbox)},
		command: []string{bin},
		class:   catalog.ErrSandbox,
		want:    []string{"CTXD-E032: mcp wrap: the wrapped server could not be started: systemd scope for mcp-server: refused", "contextd doctor"},
	}, {
		name:    "not there at all",
		runner:  runnertest.Unsandboxed{},
		command: []string{filepath.Join(outside, "no-such-server")},
		class:   catalog.ErrServerStart,
		want:    []string{filepath.Join(outside, "no-such-server") + " does not exist"},
	}, {
		name:   "exits at once with a secret on stderr",
		runner: runnertest.Unsandboxed{},
		command: []string{"/bin/sh", "-c", "echo starting the outside server >&2; echo using token " + testToken + " >&2; " +
			"printf '\\033[31mfatal:\\033[0m no API key\\n' >&2; exit 3"},
		class: catalog.ErrServerExited,
		want: []string{"CTXD-E034: mcp wrap: the wrapped server exited with status 3; the last lines it wrote to stderr: " +
			"starting the outside server | using token [REDACTED:", " [31mfatal: [0m no API key"},
		notWant: []string{testToken, "\033"},
	}, {
		name:    "exits 0 without answering",
		runner:  runnertest.Unsandboxed{},
		command: []string{"/bin/sh", "-c", "read request; exit 0"},
		class:   catalog.ErrServerExited,
		want:    []string{"the wrapped server exited (status 0) without answering; it wrote nothing to stderr"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newWrapEnv(t, tt.runner)
			r := e.start("outside", tt.command...)
			r.send(t, initialize)
			a := r.answer(t)
			ae, _ := a["error"].(map[string]any)
			msg, _ := ae["message"].(string)
			data, _ := ae["data"].(map[string]any)
			if a["id"] != 0.0 || ae["code"] != -32603.0 || data["contextd"] != tt.class.Code {
				t.Fatalf("initialize answered %v, want a JSON-RPC error -32603 with data.contextd %s", a, tt.class.Code)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q\ndoes not contain %q", msg, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("message %q contains %q", msg, w)
				}
			}
			// A request after the failure is answered the same way.
			r.send(t, `{"jsonrpc":"2.0","id":"again","method":"tools/list"}`)
			if b := r.answer(t); b["id"] != "again" || b["error"] == nil {
				t.Errorf("tools/list after the failure: %v", b)
			}
			served := r.end(t)
			if !errors.Is(served, tt.class) {
				t.Errorf("Serve returned %v, want %s", served, tt.class.Code)
			}
			line, _, _ := strings.Cut(msg, "\n")
			if n := strings.Count(line, tt.class.Name); n != 1 {
				t.Errorf("the message names its class %d times: %q", n, line)
			}
			s := e.newest()
			if s.Live || s.Ended.IsZero() || s.Failure != line {
				t.Errorf("session record: live %v, ended %v, failure %q; want %q", s.Live, s.Ended, s.Failure, line)
			}
			if err := e.wrapEnd(s.ID); !errors.Is(err, tt.class) || err.Error() != strings.TrimPrefix(line, tt.class.Code+": ") {
				t.Errorf("the wrap's question after the end: %v, want %q", err, line)
			}
		})
	}
}

// A healthy server is relayed as before: its answer byte for byte, and no
// failure recorded; a server that exits cleanly with nothing left waiting
// ends the session as before.
func TestWrapServerHealthy(t *testing.T) {
	e := newWrapEnv(t, runnertest.Unsandboxed{})
	const hello = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}`
	r := e.start("sh", "/bin/sh", "-c", "read request; echo '"+hello+"'; cat >/dev/null")
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	line, err := r.lines.ReadString('\n')
	if err != nil || line != hello+"\n" {
		t.Fatalf("initialize answered %q, %v; want the server's answer as it was", line, err)
	}
	if err := r.end(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	s := e.newest()
	if s.Failure != "" || e.wrapEnd(s.ID) != nil {
		t.Errorf("a healthy session recorded a failure: %+v", s)
	}

	r = e.start("true", "/bin/true")
	if _, err := r.lines.ReadByte(); err != io.EOF {
		t.Errorf("a server that exited cleanly: read %v, want the end of the conversation", err)
	}
	if err := r.end(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if s := e.newest(); s.Failure != "" || e.wrapEnd(s.ID) != nil {
		t.Errorf("a clean exit recorded a failure: %+v", s)
	}
}

// What the message says for each way a program cannot start, and what it
// never suggests: showing the home directory.
func TestStartFailure(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	project := filepath.Join(home, "proj")
	write := func(p string, mode os.FileMode, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	optBin := write(filepath.Join(dir, "opt", "srv", "bin", "server"), 0o755, "#!/bin/sh\n")
	inHome := write(filepath.Join(home, "server"), 0o755, "#!/bin/sh\n")
	homeBin := write(filepath.Join(home, ".local", "bin", "mcp-x"), 0o755, "#!/bin/sh\n")
	plain := write(filepath.Join(dir, "opt", "plain.js"), 0o644, "console.log(1)\n")
	script := write(filepath.Join(dir, "opt", "s", "run"), 0o755, "#!"+filepath.Join(dir, "interp", "python3")+" -u\n")
	pathDir := filepath.Join(dir, "tools", "bin")
	write(filepath.Join(pathDir, "npx-like"), 0o755, "#!/bin/sh\n")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		name2    string // the server's name, when not "srv"
		command  string
		se       runner.StartError
		readOnly []string
		want     []string
		notWant  []string
	}{
		{name: "a bin directory shows its prefix", command: optBin, se: runner.StartError{Errno: syscall.ENOENT},
			want: []string{optBin + " is not visible in the sandbox (it sees the project, the system directories and the paths [mcp.servers.srv] read_only and read_write list)",
				`put read_only = ["` + filepath.Join(dir, "opt", "srv") + `"] under [mcp.servers.srv] in /cfg.toml`}},
		{name: "more read_only paths", command: optBin, se: runner.StartError{Errno: syscall.ENOENT}, readOnly: []string{"/srv/x"},
			want: []string{`add "` + filepath.Join(dir, "opt", "srv") + `" to read_only under [mcp.servers.srv]`}},
		{name: "a name that needs quotes", name2: "a.b", command: optBin, se: runner.StartError{Errno: syscall.ENOENT},
			want: []string{`under [mcp.servers."a.b"]`}},
		{name: "never the home directory", command: inHome, se: runner.StartError{Errno: syscall.ENOENT},
			want:    []string{"install the server inside the project, or in a directory of its own"},
			notWant: []string{`read_only = ["` + home + `"]`}},
		{name: "a bin directory in the home is shown alone", command: homeBin, se: runner.StartError{Errno: syscall.ENOENT},
			want: []string{`read_only = ["` + filepath.Dir(homeBin) + `"]`}},
		{name: "found in the caller's PATH", command: "npx-like", se: runner.StartError{Errno: syscall.ENOENT, Detail: "command not found in PATH /usr/bin"},
			want: []string{"npx-like (" + filepath.Join(pathDir, "npx-like") + " on this machine) is not visible in the sandbox",
				`read_only = ["` + filepath.Join(dir, "tools") + `"]`}},
		{name: "found nowhere", command: "no-such-mcp-server", se: runner.StartError{Errno: syscall.ENOENT},
			want: []string{"no-such-mcp-server: command not found in PATH, the sandbox's nor yours"}},
		{name: "not there", command: filepath.Join(dir, "nothing"), se: runner.StartError{Errno: syscall.ENOENT},
			want: []string{filepath.Join(dir, "nothing") + " does not exist"}},
		{name: "not executable", command: plain, se: runner.StartError{Errno: syscall.EACCES},
			want: []string{plain + " is not executable: make it executable (chmod +x " + plain + "), or put its interpreter first (node " + plain}},
		{name: "a directory", command: filepath.Dir(plain), se: runner.StartError{Errno: syscall.EACCES},
			want: []string{filepath.Dir(plain) + " is a directory"}},
		{name: "no #! line", command: plain, se: runner.StartError{Errno: syscall.ENOEXEC, Exec: true},
			want: []string{"is not a program the system can run (a script needs a #! line)"}},
		{name: "an interpreter not visible", command: script, se: runner.StartError{Errno: syscall.ENOENT, Exec: true},
			want: []string{script + " runs with " + filepath.Join(dir, "interp", "python3") + ", which is not visible in the sandbox",
				`read_only = ["` + filepath.Join(dir, "interp") + `"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.name2
			if name == "" {
				name = "srv"
			}
			in := &serverInfo{name: name, command: []string{tt.command}, cwd: project, path: "/nonexistent:" + pathDir,
				workspace: project, home: home, config: "/cfg.toml", readOnly: tt.readOnly}
			se := tt.se
			se.Path = tt.command
			err := in.startFailure(&se)
			if !errors.Is(err, catalog.ErrServerStart) || catalog.ClassOf(err) != catalog.ErrServerStart {
				t.Fatalf("%v: not %s", err, catalog.ErrServerStart.Code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q\ndoes not contain %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("%q contains %q", err, w)
				}
			}
		})
	}
}

func TestExitFailure(t *testing.T) {
	tests := []struct {
		exit runner.Exit
		tail []string
		want string
	}{
		{runner.Exit{Code: 1}, []string{"a", "b"}, "mcp wrap: the wrapped server exited with status 1; the last lines it wrote to stderr: a | b"},
		{runner.Exit{Code: 0}, nil, "mcp wrap: the wrapped server exited (status 0) without answering; it wrote nothing to stderr"},
		{runner.Exit{Code: 137}, nil, "mcp wrap: the wrapped server exited: killed by signal 9 (SIGKILL), maybe for its memory limit (memory_max under [mcp.servers.NAME]); it wrote nothing to stderr"},
		{runner.Exit{Code: 143}, []string{"bye"}, "mcp wrap: the wrapped server exited: killed by signal 15 (SIGTERM); the last lines it wrote to stderr: bye"},
	}
	for _, tt := range tests {
		err := exitFailure(tt.exit, tt.tail)
		if !errors.Is(err, catalog.ErrServerExited) || err.Error() != tt.want {
			t.Errorf("exitFailure(%+v) = %q (%s), want %q", tt.exit, err, catalog.ClassOf(err).Code, tt.want)
		}
		if f := failureText(err); f != "CTXD-E034: "+tt.want {
			t.Errorf("failureText = %q", f)
		}
	}
}

// The stderr kept for the message: its last lines, scrubbed as a whole before
// it is cut, bounded, and without what a terminal would act on.
func TestStderrLastLines(t *testing.T) {
	sc, err := testScrubber()
	if err != nil {
		t.Fatal(err)
	}
	vault := scrub.NewVault()
	redact := func(b []byte) []byte { out, _ := vault.Scrub(sc, b, "test"); return out }
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"a few lines", []string{"one\n", "two\n\n  \nthree"}, []string{"one", "two", "three"}},
		{"the last five", []string{"1\n2\n3\n4\n5\n6\n7\n"}, []string{"3", "4", "5", "6", "7"}},
		{"a secret, written in pieces", []string{"token " + testToken[:10], testToken[10:] + " used\n"}, []string{"token [REDACTED:"}},
		{"a long line is cut", []string{strings.Repeat("x", 300) + "\n"}, []string{strings.Repeat("x", 200) + "…"}},
		{"control characters", []string{"\x1b[2Jcleared\r\tok\n"}, []string{"[2Jcleared  ok"}},
		{"only the last bytes, from a whole line", []string{strings.Repeat("y", 3*maxTail) + "\nlast\n"}, []string{"last"}},
		{"one line longer than what is kept", []string{strings.Repeat("z", 3*maxTail)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stderrLog{log: slog.New(slog.DiscardHandler), scrub: redact}
			for _, w := range tt.writes {
				s.Write([]byte(w))
			}
			got := s.lastLines(stderrLines, stderrLineMax)
			if len(got) != len(tt.want) {
				t.Fatalf("lastLines = %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) || strings.Contains(got[i], testToken) {
					t.Errorf("line %d = %q, want %q...", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// goneConn is the stdio of a server that has ended: its output is at its
// end, its input a broken pipe.
type goneConn struct{}

func (goneConn) Read(context.Context) ([]byte, error) { return nil, io.EOF }
func (goneConn) Write(context.Context, []byte) error {
	return fmt.Errorf("mcp stdio: write: %w", syscall.EPIPE)
}
func (goneConn) Close() error { return nil }

// The stand-in answers each request once: those left waiting, those written
// after (a batch with an array), not a waiting one whose write comes late;
// and disconnects a client that does not read its answers.
func TestServerConnAnswers(t *testing.T) {
	done := make(chan struct{})
	close(done)
	p := &process{done: done, exit: runner.Exit{Code: 1}, stderr: &stderrLog{}}
	var failed error
	c := newServerConn(goneConn{}, p,
		func() []json.RawMessage { return []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`"a"`)} },
		func(unanswered bool) error {
			if !unanswered {
				t.Error("explain was told nothing was waiting")
			}
			return exitFailure(p.exit, nil)
		},
		func(err error) { failed = err })
	ctx := context.Background()
	// Written before the failure is known: left to Read.
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)); err != nil {
		t.Fatalf("Write to a server just gone: %v", err)
	}
	read := func() string {
		t.Helper()
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return string(m)
	}
	first := read()
	if !errors.Is(failed, catalog.ErrServerExited) || !strings.HasPrefix(first, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"CTXD-E034: mcp wrap: the wrapped server exited with status 1`) ||
		!strings.HasSuffix(first, `"data":{"contextd":"CTXD-E034"}}}`) {
		t.Fatalf("first answer %s (failure %v)", first, failed)
	}
	if second := read(); !strings.HasPrefix(second, `{"jsonrpc":"2.0","id":"a","error":`) {
		t.Fatalf("second answer %s", second)
	}
	// The late write of a request answered already, then a batch.
	for _, m := range []string{`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if err := c.Write(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var batch []map[string]any
	if err := json.Unmarshal([]byte(read()), &batch); err != nil || len(batch) != 2 || batch[0]["id"] != 2.0 || batch[1]["id"] != 3.0 {
		t.Fatalf("batch answered %v, %v", batch, err)
	}
	// What the relay writes comes with its classification, which is taken
	// as given rather than worked out again (here it names id 5 where the
	// bytes say 4, to tell which was read).
	if err := c.WriteClassified(ctx, []byte(`{"jsonrpc":"2.0","id":4,"method":"ping"}`),
		&jsonrpc.Info{Kind: jsonrpc.KindRequest, ID: json.RawMessage(`5`), Method: "ping"}); err != nil {
		t.Fatal(err)
	}
	if got := read(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":5,"error":`) {
		t.Fatalf("answer to a classified write: %s", got)
	}
	var err error
	for i := 0; i <= maxStandInQueue && err == nil; i++ {
		err = c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+fmt.Sprint(100+i)+`,"method":"ping"}`))
	}
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("a client that reads no answer: %v, want it disconnected", err)
	}
	c.Close()
}
