// Package runnertest is a runner without a sandbox, for the tests of the layers above the runner.
package runnertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/internal/drain"
	"github.com/contextd/contextd/sandboxinfo"
)

// Unsandboxed runs the process as a plain child of the test in its own
// process group: no namespaces, no seccomp, no scope. It lets the tests of
// the daemon, the tools and the proxy run without the sandbox, whose own
// tests are in daemon/sandbox and ns. It lives apart from package runner so
// that no production code can pick it: the binaries do not link this package
// (internal/layering).
type Unsandboxed struct {
	// ToolMain runs Tool-mode specs in the test's own process
	// (inside.MainUnsandboxed); the context ends at the spec's timeout or the
	// call's end. Nil: Tool mode is refused.
	ToolMain func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// drainGrace is how long output may keep arriving after the process group was
// killed (a descendant that left the group can hold the pipe open forever).
const drainGrace = 2 * time.Second

// Run implements runner.Runner.
func (d Unsandboxed) Run(ctx context.Context, s runner.Spec) (runner.Exit, error) {
	if s.Mode == runner.Tool {
		if d.ToolMain == nil {
			return runner.Exit{}, fmt.Errorf("unsandboxed runner: no in-process tool main: %w", catalog.ErrLaunch)
		}
		stderr := s.Stderr
		if stderr == nil {
			stderr = s.Output
		}
		tctx, cancel := ctx, context.CancelFunc(func() {})
		if s.Timeout > 0 {
			tctx, cancel = context.WithTimeout(ctx, s.Timeout)
		}
		defer cancel()
		if s.Started != nil {
			s.Started(sandboxinfo.Layers{})
		}
		code := d.ToolMain(tctx, s.Args, bytes.NewReader(s.Stdin), s.Output, stderr)
		ex := runner.Exit{Code: code}
		switch {
		case ctx.Err() != nil:
			ex.Canceled = true
		case tctx.Err() != nil:
			ex.TimedOut = true
		}
		return ex, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return runner.Exit{}, fmt.Errorf("pipe: %w", catalog.ErrLaunch)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:   s.Path,
		Args:   s.Args,
		Dir:    s.Dir,
		Env:    s.Env,
		Stdin:  bytes.NewReader(s.Stdin),
		Stdout: w, // one pipe for both keeps their interleaving
		Stderr: w,
		SysProcAttr: &syscall.SysProcAttr{
			// Own process group, so a timeout kills what the command started too.
			Setpgid: true,
			// If the daemon dies, its commands die with it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	}
	if s.Input != nil {
		cmd.Stdin = s.Input
	}
	if s.OutputFile != nil {
		cmd.Stdout = s.OutputFile
		if s.Stderr == nil {
			cmd.Stderr = s.OutputFile
		}
		defer s.OutputFile.Close()
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		if errno := syscall.Errno(0); errors.As(err, &errno) {
			return runner.Exit{}, &runner.StartError{Path: s.Path, Errno: errno}
		}
		return runner.Exit{}, fmt.Errorf("start %s: %v: %w", s.Path, err, catalog.ErrLaunch)
	}
	w.Close()
	if s.Started != nil {
		s.Started(sandboxinfo.Layers{}) // no sandbox: no layer
	}
	pgid := cmd.Process.Pid

	dr := drain.New(r, drainGrace)
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(s.Output, dr)
		copied <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var ex runner.Exit
	var werr error
	select {
	case werr = <-waited:
	case <-timeout:
		ex.TimedOut = true
		unix.Kill(-pgid, unix.SIGKILL)
		werr = <-waited
	case <-ctx.Done():
		ex.Canceled = true
		unix.Kill(-pgid, unix.SIGKILL)
		werr = <-waited
	}
	// The shell is gone; whatever it left running in its group goes too, so nothing
	// outlives the call and the pipe reaches EOF.
	unix.Kill(-pgid, unix.SIGKILL)
	dr.Ended()
	<-copied

	var ee *exec.ExitError
	switch {
	case werr == nil:
		ex.Code = 0
	case errors.As(werr, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			ex.Code = 128 + int(ws.Signal())
		} else {
			ex.Code = ws.ExitStatus()
		}
	default:
		return ex, fmt.Errorf("wait: %v: %w", werr, catalog.ErrInternal)
	}
	return ex, nil
}
