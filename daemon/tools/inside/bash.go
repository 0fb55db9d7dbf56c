package inside

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/internal/drain"
	"github.com/contextd/contextd/scrub"
)

// drainGrace is how long the pump waits for more output once the shell exited
// and the pipe is empty: processes the command left behind may still write,
// and die with the sandbox right after. What the shell wrote before it exited
// is read whatever the pump's pace (package drain).
const drainGrace = 100 * time.Millisecond

// bashMain is safe_bash inside its sandbox: it runs the shell as a child (the
// sandbox init is pid 1 and reaps), pumps its output (stdout and stderr, in
// the order written) through the scrubber as it comes, and reports the exit
// status. The seccomp profile is already loaded and binds the shell too.
func bashMain(ctx context.Context, proc process, op toolproto.Op, stdout io.Writer) error {
	fw := toolproto.NewWriter(stdout)
	sc, err := toolScrubber(op.Rules)
	if err != nil {
		return fmt.Errorf("safe_bash: scrubber: %v: %w", err, catalog.ErrConfig)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("safe_bash: pipe2: %v: %w", err, catalog.ErrLaunch)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("safe_bash: open %s: %v: %w", os.DevNull, err, catalog.ErrLaunch)
	}
	threadsOnce.Do(func() { reserveThreads(runtime.GOMAXPROCS(0) + 6) })
	// Outside a sandbox (a test's process) the shell gets its own process
	// group, killed when ctx ends; in the sandbox the daemon kills the whole
	// sandbox.
	sandboxed := proc == sandboxInit
	shell, err := os.StartProcess(op.Shell, []string{filepath.Base(op.Shell), "-c", op.Command},
		&os.ProcAttr{Dir: op.Dir, Env: op.Env, Files: []*os.File{null, pw, pw},
			Sys: &syscall.SysProcAttr{Setpgid: !sandboxed}})
	pw.Close()
	null.Close()
	if err != nil {
		return fmt.Errorf("safe_bash: start %s: %v: %w", op.Shell, err, catalog.ErrLaunch)
	}
	fw.Mark("shell_started")
	dr := drain.New(pr, drainGrace)
	pumped := make(chan error, 1)
	go func() {
		// Each piece goes out at once: the caller sees a long command's
		// progress.
		st := scrub.NewStream(sc, func(text []byte, fs []scrub.Finding) error {
			if err := fw.Scrubbed(text, fs); err != nil {
				return err
			}
			return fw.Flush()
		})
		_, err := io.Copy(st, dr)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		pumped <- err
	}()
	var code int
	if sandboxed {
		code = reap(shell.Pid)
	} else {
		stop := context.AfterFunc(ctx, func() { syscall.Kill(-shell.Pid, syscall.SIGKILL) })
		st, _ := shell.Wait()
		stop()
		code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		syscall.Kill(-shell.Pid, syscall.SIGKILL) // what it left behind
	}
	fw.Mark("shell_exited")
	dr.Ended()
	if err := <-pumped; err != nil {
		return fmt.Errorf("safe_bash: output: %v: %w", err, catalog.ErrIO)
	}
	fw.Mark("output_sent")
	if err := fw.Meta(toolproto.Meta{ExitCode: &code}); err != nil {
		return fmt.Errorf("safe_bash: send output: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

// reserveThreads makes the Go runtime start n OS threads now and keep them
// idle for later. The shell's processes and this init share the scope's
// TasksMax, and a fork bomb takes every task the limit leaves: a runtime that
// then needs a thread (a goroutine blocked in a system call, the garbage
// collector) cannot get one and aborts, and the call's output is lost. The
// runtime keeps idle threads and reuses them before it creates new ones.
func reserveThreads(n int) {
	var ready sync.WaitGroup
	release := make(chan struct{})
	for range n {
		ready.Add(1)
		go func() {
			// A locked goroutine blocked here holds its thread, so each one
			// makes the runtime start another; unlocked, it returns it to the
			// idle pool (exiting while locked would end the thread).
			runtime.LockOSThread()
			ready.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	close(release)
}

// reap waits for pid, reaping every other child on the way (as pid 1 of the
// sandbox, the init inherits whatever the command orphans), and returns its
// exit status the way a shell reports it (128+N for signal N).
func reap(pid int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 127 // ECHILD: nothing left to wait for
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
