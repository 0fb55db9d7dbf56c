package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/daemon/tools/inside"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/wire"
	"github.com/contextd/contextd/wire/grpcclient"
)

// start runs a daemon on a fresh socket and returns its path and Run's result.
func start(t testing.TB, cfg *config.Config, ctx context.Context) (string, <-chan error, *notes) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	n := &notes{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, ln, &Options{Config: cfg, Notify: n.add, Runner: runnertest.Unsandboxed{ToolMain: inside.MainUnsandboxed}})
	}()
	return path, done, n
}

// notes records sd_notify states.
type notes struct {
	mu sync.Mutex
	s  []string
}

func (n *notes) add(s string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.s = append(n.s, s)
	return nil
}

func (n *notes) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.s, "|")
}

func TestIdleExit(t *testing.T) {
	cfg := config.Default()
	cfg.IdleTimeout.Duration = 300 * time.Millisecond
	path, done, n := start(t, cfg, context.Background())
	c, err := grpcclient.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(context.Background(), &wire.StatusRequest{}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("idle exit returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not exit when idle")
	}
	if s := n.all(); !strings.Contains(s, "READY=1") || !strings.Contains(s, "STOPPING=1") {
		t.Fatalf("sd_notify states: %s", s)
	}
}

// A call in flight keeps an idle daemon alive, and on SIGTERM (ctx canceled) it
// is drained: canceled after drain_timeout with CTXD-E014 and its command killed.
func TestDrainCancelsCallsInFlight(t *testing.T) {
	cfg := config.Default()
	// The idle timer runs from the daemon's start until the call arrives: a
	// timeout of a few seconds leaves a loaded machine time to connect (at
	// 100 ms the daemon sometimes left before the call came).
	cfg.IdleTimeout.Duration = 3 * time.Second
	cfg.DrainTimeout.Duration = 300 * time.Millisecond
	ctx, stop := context.WithCancel(context.Background())
	path, done, _ := start(t, cfg, ctx)
	c, err := grpcclient.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cwd := t.TempDir()
	marker := filepath.Join(cwd, "finished")
	s, err := c.Call(context.Background(), &wire.CallRequest{Tool: "safe_bash", Cwd: cwd,
		InputJson: []byte(`{"command":"touch started; sleep 60; touch finished"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The command has started when its first file is there (the first page
	// is decided when the output ends, so no output comes before).
	for {
		if _, err := os.Stat(filepath.Join(cwd, "started")); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("daemon exited before the command started: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	time.Sleep(4 * time.Second) // past the idle timeout: the call keeps it up
	select {
	case err := <-done:
		t.Fatalf("daemon exited with a call in flight: %v", err)
	default:
	}
	stop()
	var res *wire.Result
	for {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if r := ev.GetResult(); r != nil {
			res = r
		}
	}
	if res == nil || !errors.Is(wire.ErrorFrom(res.Error), catalog.ErrShuttingDown) {
		t.Fatalf("result %v, want CTXD-E014", res)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop after draining")
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran to its end after being canceled")
	}
}

// Bad input is a protocol error with its code; a tool's own failure is a result.
func TestErrorsTravelWithTheirCodes(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	c, err := grpcclient.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(tool, input string) (*wire.Result, error) {
		s, err := c.Call(context.Background(), &wire.CallRequest{Tool: tool, Cwd: t.TempDir(), InputJson: []byte(input)})
		if err != nil {
			return nil, err
		}
		for {
			ev, err := s.Recv()
			if err != nil {
				return nil, c.Classify(err, false)
			}
			if r := ev.GetResult(); r != nil {
				return r, nil
			}
		}
	}
	if _, err := call("nope", `{}`); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := call("safe_bash", `{"cmd":"x"}`); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("bad input: %v", err)
	}
	r, err := call("safe_read", `{"path":"missing"}`)
	if err != nil || !errors.Is(wire.ErrorFrom(r.Error), catalog.ErrNotFound) {
		t.Errorf("missing file: %v %v", r, err)
	}

	// Errors quoting the input are scrubbed, refusals and tool failures
	// alike, and keep their class.
	const tok = "ghp_Zq8mR2vL5xK9tW3nB7cY1dF6hJ4pS0aE2gUi"
	for _, c := range []struct {
		path  string
		class *catalog.Class
	}{{"/" + tok, catalog.ErrOutsideWorkspace}, {tok + ".txt", catalog.ErrNotFound}} {
		r, err = call("safe_read", `{"path":"`+c.path+`"}`)
		if err != nil || !errors.Is(wire.ErrorFrom(r.Error), c.class) || strings.Contains(r.Error.GetMessage(), tok) ||
			!strings.Contains(r.Error.GetMessage(), "[REDACTED:github-pat") {
			t.Errorf("tool failure quoting a secret: %v %v", r, err)
		}
	}
	if _, err := call(tok, `{}`); !errors.Is(err, catalog.ErrUnknownTool) || strings.Contains(err.Error(), tok) {
		t.Errorf("refusal quoting a secret: %v", err)
	}
}

// The daemon serves every published tool, and nothing else.
func TestRegistryMatchesToolspecs(t *testing.T) {
	got := Registry(config.Default()).Names()
	want := slices.Sorted(slices.Values(toolspec.Names()))
	if !slices.Equal(got, want) {
		t.Errorf("registry %v, published toolspecs %v", got, want)
	}
}
