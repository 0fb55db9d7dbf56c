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
		return d.runTool(ctx, s)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return runner.Exit{}, fmt.Errorf("pipe: %w", catalog.ErrLaunch)
	}
	defer r.Close()
	cmd := command(s, w)
	if s.OutputFile != nil {
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

	ex, werr := wait(ctx, s.Timeout, pgid, waited)
	// The shell is gone; whatever it left running in its group goes too, so nothing
	// outlives the call and the pipe reaches EOF.
	unix.Kill(-pgid, unix.SIGKILL)
	dr.Ended()
	<-copied

	ex.Code, err = exitCode(werr)
	return ex, err
}

// runTool runs a Tool-mode spec in the test's own process, through ToolMain.
func (d Unsandboxed) runTool(ctx context.Context, s runner.Spec) (runner.Exit, error) {
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

// command is the process s describes, its output to w unless s sends it
// elsewhere.
func command(s runner.Spec, w *os.File) *exec.Cmd {
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
	}
	return cmd
}

// wait waits for the process whose Wait reports on waited, killing its
// group pgid at the timeout (0: none) or when ctx ends.
func wait(ctx context.Context, timeout time.Duration, pgid int, waited <-chan error) (ex runner.Exit, werr error) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case werr = <-waited:
	case <-expired:
		ex.TimedOut = true
		unix.Kill(-pgid, unix.SIGKILL)
		werr = <-waited
	case <-ctx.Done():
		ex.Canceled = true
		unix.Kill(-pgid, unix.SIGKILL)
		werr = <-waited
	}
	return ex, werr
}

// exitCode is the exit code of a process whose Wait returned werr: 128 plus
// the signal's number for one killed by a signal, as a shell reports it.
func exitCode(werr error) (int, error) {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, nil
	case errors.As(werr, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ws.ExitStatus(), nil
	}
	return 0, fmt.Errorf("wait: %v: %w", werr, catalog.ErrInternal)
}
