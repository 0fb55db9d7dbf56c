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
	"github.com/contextd/contextd/daemon/config"
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
	sock, _ := start(t, false, nil)
	return sock
}

// StartConfig is Start with cfg as the daemon's configuration (served MCP
// servers, search settings), used as given, without the checks of loading.
func StartConfig(t testing.TB, cfg *config.Config) string {
	t.Helper()
	sock, _ := start(t, false, cfg)
	return sock
}

// StartHTTP is Start with the HTTP API served too, on a Unix socket of its
// own: it returns both sockets' paths.
func StartHTTP(t testing.TB) (sock, httpSock string) {
	t.Helper()
	return start(t, true, nil)
}

// StartHTTPConfig is StartHTTP with cfg as the daemon's configuration (an
// [http] tcp address, allowed origins); cfg is used as given, without the
// checks of loading.
func StartHTTPConfig(t testing.TB, cfg *config.Config) (sock, httpSock string) {
	t.Helper()
	return start(t, true, cfg)
}

func start(t testing.TB, withHTTP bool, cfg *config.Config) (sock, httpSock string) {
	t.Helper()
	dir := t.TempDir()
	sock = filepath.Join(dir, "contextd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	opts := &daemon.Options{
		Config: cfg,
		Logger: slog.New(slog.DiscardHandler),
		Notify: func(string) error { return nil },
		Runner: runnertest.Unsandboxed{ToolMain: inside.MainUnsandboxed},
	}
	if withHTTP {
		httpSock = filepath.Join(dir, "http.sock")
		if opts.HTTP, err = net.Listen("unix", httpSock); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return sock, httpSock
}
