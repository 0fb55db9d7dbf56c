// Package mcpwrap is the daemon's side of `contextd-proxy mcp wrap`: it
// launches an MCP server in the sandbox (or reaches one at a URL), relays the
// conversation between it and the agent through the intercept engine, records
// it, and lets `contextd inspect` watch and steer a live session.
package mcpwrap

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
)

// Profile is the seccomp profile (and scope name) a wrapped server runs under.
const Profile = "mcp-server"

// process is an MCP server running in the sandbox, seen through its stdin and
// stdout: the two pipes are the server's own descriptors, so a message
// crosses no copying goroutine between the relay and the server.
type process struct {
	stdin  *os.File // the relay writes the client's messages here
	stdout *os.File // and reads the server's from here

	cancel context.CancelFunc
	done   chan struct{}
	exit   runner.Exit
	err    error
}

// launch starts spec (Exec mode) under r in the background. The process runs
// until it exits, its stdin is closed and it exits, or stop is called.
func launch(ctx context.Context, r runner.Runner, spec runner.Spec, log *slog.Logger, scrub func([]byte) []byte) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &process{stdin: inW, stdout: outR, cancel: cancel, done: make(chan struct{})}
	spec.Tool = Profile
	spec.Mode = runner.Exec
	spec.Input = inR       // the runner owns and closes it
	spec.OutputFile = outW // likewise
	spec.Stderr = &stderrLog{log: log, scrub: scrub}
	go func() {
		defer close(p.done)
		p.exit, p.err = r.Run(ctx, spec)
		// Should the runner have failed before handing them to the
		// process, its ends are closed here; closing twice is harmless.
		inR.Close()
		outW.Close()
	}()
	return p, nil
}

// stop ends the server: its stdin is closed (a well-behaved server exits on
// that), then, if it is still there after the runner's own grace, it is
// killed with its sandbox.
func (p *process) stop() (runner.Exit, error) {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.cancel()
		<-p.done
	}
	p.cancel()
	return p.exit, p.err
}

// stopGrace is how long a server has to exit after its stdin closed before
// its sandbox is killed.
const stopGrace = 2 * time.Second

// failure describes how the server ended, for the log and the caller.
func (p *process) failure() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	if p.err != nil {
		return fmt.Errorf("MCP server: %w", p.err)
	}
	if p.exit.Code != 0 && !p.exit.Canceled {
		return fmt.Errorf("MCP server exited with status %d: %w", p.exit.Code, catalog.ErrLaunch)
	}
	return nil
}

// stderrLog writes a server's stderr to the daemon's log, a line at a time
// and at most maxStderrLines lines: a chatty or hostile server cannot flood
// the journal. Each line is scrubbed first: a server may print its tokens.
type stderrLog struct {
	log   *slog.Logger
	scrub func([]byte) []byte
	mu    sync.Mutex
	buf   []byte
	n     int
	lost  int
}

const maxStderrLines = 200

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			if len(s.buf) > 4096 {
				s.line(s.buf)
				s.buf = s.buf[:0]
			}
			return len(p), nil
		}
		s.line(s.buf[:i])
		s.buf = s.buf[i+1:]
	}
}

func (s *stderrLog) line(b []byte) {
	if s.n >= maxStderrLines {
		s.lost++
		if s.lost == 1 {
			s.log.Warn("MCP server stderr: further lines not logged", "after_lines", maxStderrLines)
		}
		return
	}
	s.n++
	s.log.Info("MCP server stderr", "line", string(s.scrub(b)))
}
