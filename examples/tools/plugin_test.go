package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/contextd/contextd/internal/syncbuf"
	"github.com/contextd/contextd/wire/toolplugin"
)

// plugin is one started example, as the daemon holds it.
type plugin struct {
	c       *toolplugin.Client
	sockDir string
	log     *syncbuf.Buffer
}

// start starts the program at path as a plain child process, with only the
// environment the daemon's sandbox gives a plugin: go-plugin's variables,
// including the socket directory it must listen in, and cwd = the workspace.
func start(t *testing.T, path, workspace string) *plugin {
	t.Helper()
	p := &plugin{sockDir: t.TempDir(), log: &syncbuf.Buffer{}}
	cmd := exec.Command(path)
	cmd.Dir = workspace
	cmd.Env = []string{"PLUGIN_UNIX_SOCKET_DIR=" + p.sockDir, "PYTHONDONTWRITEBYTECODE=1"}
	logger := hclog.New(&hclog.LoggerOptions{Output: p.log, Level: hclog.Debug})
	c, err := toolplugin.Start(toolplugin.Config{Cmd: cmd, Logger: logger})
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	p.c = c
	t.Cleanup(c.Kill)
	return p
}

// result is what one call streamed and how it ended.
type result struct {
	text   string
	frames int
	final  *toolplugin.Final
	data   map[string]any
}

// call runs input on p; each text frame is also handed to onText (which may be
// nil) as it arrives.
func (p *plugin) call(ctx context.Context, workspace, input string, onText func(string)) (result, error) {
	var r result
	var text strings.Builder
	fin, err := p.c.Execute(ctx, toolplugin.Call{Input: []byte(input), Workspace: workspace}, func(b []byte) error {
		r.frames++
		text.Write(b)
		if onText != nil {
			onText(string(b))
		}
		return nil
	})
	r.text, r.final = text.String(), fin
	if err == nil && len(fin.GetDataJson()) > 0 {
		if jerr := json.Unmarshal(fin.GetDataJson(), &r.data); jerr != nil {
			return r, jerr
		}
	}
	return r, err
}

// socketIn reports whether dir holds a unix socket.
func socketIn(t *testing.T, dir string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type()&os.ModeSocket != 0 {
			return true
		}
	}
	return false
}

// blocking names, for each example, a call that runs until it is stopped,
// after printing something.
type blocking struct {
	name      string
	start     func(t *testing.T, workspace string) *plugin
	input     string
	workspace func(t *testing.T) string
}

func examples() []blocking {
	return []blocking{
		{name: "logscan-py", start: startLogscan, input: `{"path": "app.log", "follow_seconds": 600}`, workspace: logWorkspace},
		{name: "smoke", start: startSmoke, input: `{"text": "waiting", "sleep_seconds": 600}`, workspace: func(t *testing.T) string { return t.TempDir() }},
	}
}

// TestListensInSocketDir: a plugin in the sandbox is reachable only through
// $PLUGIN_UNIX_SOCKET_DIR, so each example must listen there, and leave
// nothing behind once stopped.
func TestListensInSocketDir(t *testing.T) {
	for _, ex := range examples() {
		t.Run(ex.name, func(t *testing.T) {
			p := ex.start(t, ex.workspace(t))
			if !socketIn(t, p.sockDir) {
				t.Fatalf("no socket in %s", p.sockDir)
			}
			p.c.Kill()
			if socketIn(t, p.sockDir) {
				t.Errorf("the socket in %s outlived the plugin", p.sockDir)
			}
		})
	}
}

// TestCancelEndsCall: cancelling a running call ends it at once, and the
// plugin serves the next call.
func TestCancelEndsCall(t *testing.T) {
	for _, ex := range examples() {
		t.Run(ex.name, func(t *testing.T) {
			ws := ex.workspace(t)
			p := ex.start(t, ws)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			began := time.Now()
			_, err := p.call(ctx, ws, ex.input, func(string) { once.Do(cancel) })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v, want context.Canceled", err)
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("the cancelled call took %v", d)
			}
			ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel2()
			if r, err := p.call(ctx2, ws, quick(ex.name), nil); err != nil || r.final.GetError() != "" {
				t.Fatalf("call after the cancelled one: %v %q", err, r.final.GetError())
			}
		})
	}
}

// TestKillStopsPlugin: Kill in the middle of a call ends the call and the
// process, and quickly: go-plugin asks for a graceful Shutdown first and waits
// two seconds for it before it kills, so a plugin that ignored Shutdown would
// take longer.
func TestKillStopsPlugin(t *testing.T) {
	for _, ex := range examples() {
		t.Run(ex.name, func(t *testing.T) {
			ws := ex.workspace(t)
			p := ex.start(t, ws)
			pid := p.c.Pid()
			if pid == 0 {
				t.Fatal("no pid for a plain child")
			}
			running := make(chan struct{})
			var once sync.Once
			done := make(chan error, 1)
			go func() {
				_, err := p.call(context.Background(), ws, ex.input, func(string) { once.Do(func() { close(running) }) })
				done <- err
			}()
			select {
			case <-running:
			case err := <-done:
				t.Fatalf("the call ended before the kill: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the call printed nothing in 30s")
			}
			began := time.Now()
			p.c.Kill()
			if d := time.Since(began); d >= 2*time.Second {
				t.Errorf("Kill took %v: the plugin did not stop on Shutdown", d)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Error("the call succeeded although its plugin was killed")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not end after Kill")
			}
			if !p.c.Exited() {
				t.Error("Exited is false after Kill")
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d after Kill: %v, want ESRCH", pid, err)
			}
		})
	}
}

// quick is a call of the example that ends at once.
func quick(name string) string {
	if name == "logscan-py" {
		return `{"path": "app.log"}`
	}
	return `{"text": "again"}`
}

// waitFor polls the plugin's log for want.
func (p *plugin) waitFor(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(p.log.String(), want) {
			return
		}
	}
	t.Errorf("the plugin's log lacks %q:\n%s", want, p.log.String())
}
