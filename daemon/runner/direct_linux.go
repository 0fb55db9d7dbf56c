package runner

import (
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
)

// Direct runs the process as a plain child of the daemon in its own process group:
// no namespaces, no seccomp, no scope. It is the runner until the sandbox runner
// exists, and the sandbox's own last step.
type Direct struct{}

// drainGrace is how long output may keep arriving after the process group was
// killed (a descendant that left the group can hold the pipe open forever).
const drainGrace = 2 * time.Second

// Run implements Runner.
func (Direct) Run(ctx context.Context, s Spec) (Exit, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return Exit{}, fmt.Errorf("pipe: %w", catalog.ErrLaunch)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:   s.Path,
		Args:   s.Args,
		Dir:    s.Dir,
		Env:    s.Env,
		Stdout: w, // one pipe for both keeps their interleaving
		Stderr: w,
		SysProcAttr: &syscall.SysProcAttr{
			// Own process group, so a timeout kills what the command started too.
			Setpgid: true,
			// If the daemon dies, its commands die with it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return Exit{}, fmt.Errorf("start %s: %v: %w", s.Path, err, catalog.ErrLaunch)
	}
	w.Close()
	pgid := cmd.Process.Pid

	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(s.Output, r)
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
	var ex Exit
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
	r.SetReadDeadline(time.Now().Add(drainGrace))
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
