// Package daemontest runs the real daemon in a test, for the packages that talk
// to it (the proxy, its hook, its MCP face).
package daemontest

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/daemon"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/daemon/tools/inside"
)

// Start serves the daemon, its whole response pipeline included, on a socket
// of its own until the test ends, and returns the socket's path. Its tools run
// through runnertest.Unsandboxed, without the namespace sandbox: the callers' contracts
// are under test, and the sandbox has tests of its own. A test that must not
// touch the user's state sets XDG_STATE_HOME and friends before.
func Start(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "contextd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, ln, &daemon.Options{
			Logger: slog.New(slog.DiscardHandler),
			Notify: func(string) error { return nil },
			Runner: runnertest.Unsandboxed{ToolMain: inside.MainUnsandboxed},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return sock
}
