package mcpwrap

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/sandboxinfo"
)

// layersRunner runs under runnertest.Unsandboxed (a real process, no sandbox) and
// reports, as a sandbox would, the layers it put in place.
type layersRunner struct {
	runnertest.Unsandboxed
	layers sandboxinfo.Layers
}

func (r layersRunner) Run(ctx context.Context, s runner.Spec) (runner.Exit, error) {
	started := s.Started
	s.Started = func(sandboxinfo.Layers) {
		if started != nil {
			started(r.layers)
		}
	}
	return r.Unsandboxed.Run(ctx, s)
}

// The wrap reports the layers the runner says it applied once the server
// runs, and none when the server could not be started.
func TestLaunchReportsAppliedLayers(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	want := sandboxinfo.Layers{Namespaces: true, Seccomp: "file:/home/u/.config/contextd/profiles/mcp-server.json", ScopeNote: "no systemd user manager"}
	p, err := launch(context.Background(), layersRunner{layers: want}, runner.Spec{Path: "/bin/cat", Args: []string{"cat"}, Dir: "/"}, log, func(b []byte) []byte { return b })
	if err != nil {
		t.Fatal(err)
	}
	got, ok := p.applied()
	if !ok || got != want {
		t.Errorf("applied = %+v, %v; want %+v", got, ok, want)
	}
	if _, err := p.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}

	p, err = launch(context.Background(), layersRunner{layers: want}, runner.Spec{Path: "/nonexistent/server", Args: []string{"server"}, Dir: "/"}, log, func(b []byte) []byte { return b })
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.applied(); ok {
		t.Errorf("a server that could not start reported layers %+v", got)
	}
	p.stop()
}
