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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/sandboxinfo"
)

// Profile is the seccomp profile (and scope name) a wrapped server runs under.
const Profile = "mcp-server"

// process is an MCP server running in the sandbox, seen through its stdin and
// stdout: the two pipes are the server's own descriptors, so a message
// crosses no copying goroutine between the relay and the server.
type process struct {
	stdin  *os.File // the relay writes the client's messages here
	stdout *os.File // and reads the server's from here

	stderr *stderrLog // keeps the last of it, for the message of an early exit

	cancel context.CancelFunc
	layers chan sandboxinfo.Layers // what the runner applied, once the server runs
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
	p := &process{stdin: inW, stdout: outR, stderr: &stderrLog{log: log, scrub: scrub}, cancel: cancel,
		layers: make(chan sandboxinfo.Layers, 1), done: make(chan struct{})}
	spec.Tool = Profile
	spec.Mode = runner.Exec
	spec.Input = inR       // the runner owns and closes it
	spec.OutputFile = outW // likewise
	spec.Stderr = p.stderr
	spec.Started = func(l sandboxinfo.Layers) { p.layers <- l }
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

// applied waits until the server runs and returns the sandbox layers the
// runner put in place; false when the runner ended first (the sandbox or the
// server could not be started: the session's end says why).
func (p *process) applied() (sandboxinfo.Layers, bool) {
	select {
	case l := <-p.layers:
		return l, true
	case <-p.done:
		select {
		case l := <-p.layers: // it ran, and has already ended
			return l, true
		default:
			return sandboxinfo.Layers{}, false
		}
	}
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

// stderrLog writes a server's stderr to the daemon's log, a line at a time
// and at most maxStderrLines lines: a chatty or hostile server cannot flood
// the journal. Each line is scrubbed first: a server may print its tokens.
// It also keeps the last maxTail bytes, for lastLines.
type stderrLog struct {
	log   *slog.Logger
	scrub func([]byte) []byte
	mu    sync.Mutex
	buf   []byte
	n     int
	lost  int
	tail  []byte // the last bytes written, at most 2*maxTail
	cut   bool   // tail starts inside a line: bytes before it were dropped
}

// maxTail bounds the stderr kept for lastLines.
const maxTail = 8 << 10

const maxStderrLines = 200

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(p)
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

// keep appends p to the tail, dropping its oldest bytes past 2*maxTail.
func (s *stderrLog) keep(p []byte) {
	s.tail = append(s.tail, p...)
	if len(s.tail) > 2*maxTail {
		drop := len(s.tail) - maxTail
		s.cut = s.tail[drop-1] != '\n'
		s.tail = append(s.tail[:0], s.tail[drop:]...)
	}
}

// lastLines returns the last n non-blank lines the server wrote to stderr,
// scrubbed of secrets, stripped of control characters, each cut to maxLine
// runes: what a person needs to see why it failed, and no more. The whole
// tail is scrubbed before it is cut, so that a secret is never cut in two
// halves that the scrubber would no longer recognise; a first line that
// began before the kept bytes is left out for the same reason.
func (s *stderrLog) lastLines(n, maxLine int) []string {
	s.mu.Lock()
	b := append([]byte(nil), s.tail...)
	cut := s.cut
	s.mu.Unlock()
	if cut {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	if s.scrub != nil {
		b = s.scrub(b)
	}
	var out []string
	lines := strings.Split(strings.ToValidUTF8(string(b), "\uFFFD"), "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := strings.TrimSpace(strings.Map(printable, lines[i]))
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > maxLine {
			l = string(r[:maxLine]) + "…"
		}
		out = append(out, l)
	}
	slices.Reverse(out)
	return out
}

// printable replaces control characters with a space: the lines end up in
// messages on a terminal (which would act on an escape sequence) and in a
// table (where a tab would shift the columns).
func printable(r rune) rune {
	if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
		return ' '
	}
	return r
}
