package runnertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/runner/runnertest"
)

func sh(script string) runner.Spec {
	return runner.Spec{
		Path: "/bin/sh",
		Args: []string{"sh", "-c", script},
		Dir:  "/",
		Env:  []string{"PATH=/usr/bin:/bin"},
	}
}

func run(t *testing.T, ctx context.Context, s runner.Spec) (runner.Exit, string, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	s.Output = &out
	start := time.Now()
	ex, err := runnertest.Unsandboxed{}.Run(ctx, s)
	if err != nil {
		t.Fatalf("Run(%q): %v", s.Args, err)
	}
	return ex, out.String(), time.Since(start)
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script string
		code   int
		out    string
	}{
		{"true", 0, ""},
		{"exit 3", 3, ""},
		{"exit 255", 255, ""},
		{"echo out; echo err >&2; echo out2; exit 1", 1, "out\nerr\nout2\n"},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM), ""},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL), ""},
		{"kill -SEGV $$", 128 + int(syscall.SIGSEGV), ""},
		{"kill -INT $$", 128 + int(syscall.SIGINT), ""},
	}
	for _, tt := range tests {
		ex, out, _ := run(t, context.Background(), sh(tt.script))
		if ex.Code != tt.code || ex.TimedOut || ex.Canceled {
			t.Errorf("%q: %+v, want code %d", tt.script, ex, tt.code)
		}
		if out != tt.out {
			t.Errorf("%q: output %q, want %q", tt.script, out, tt.out)
		}
	}
}

func TestSpecPassedThrough(t *testing.T) {
	dir := t.TempDir()
	env := []string{"A=1", "B=two words", "PATH=/usr/bin:/bin"}
	ex, out, _ := run(t, context.Background(), runner.Spec{
		Path: "/usr/bin/env", Args: []string{"env"}, Dir: dir, Env: env,
	})
	if ex.Code != 0 || out != strings.Join(env, "\n")+"\n" {
		t.Errorf("environment %q (exit %d), want exactly %q", out, ex.Code, env)
	}
	_, out, _ = run(t, context.Background(), runner.Spec{Path: "/bin/pwd", Args: []string{"pwd"}, Dir: dir})
	if out != dir+"\n" {
		t.Errorf("working directory %q, want %s", out, dir)
	}
	// argv[0] and the other arguments arrive as given.
	_, out, _ = run(t, context.Background(), runner.Spec{
		Path: "/bin/sh", Args: []string{"custom-argv0", "-c", `printf '%s|' "$0" "$@"`, "x", "a b", ""}, Dir: dir,
	})
	if out != "x|a b||" {
		t.Errorf("args came through as %q", out)
	}
}

func TestLaunchErrors(t *testing.T) {
	for _, s := range []runner.Spec{
		{Path: "/nonexistent/prog", Args: []string{"prog"}, Dir: "/"},
		{Path: "/bin/sh", Args: []string{"sh", "-c", "true"}, Dir: "/nonexistent/dir"},
		{Path: "/etc/passwd", Args: []string{"passwd"}, Dir: "/"},
	} {
		s.Output = &bytes.Buffer{}
		_, err := runnertest.Unsandboxed{}.Run(context.Background(), s)
		if !errors.Is(err, catalog.ErrLaunch) {
			t.Errorf("Run(%s in %s) = %v, want %s", s.Path, s.Dir, err, catalog.ErrLaunch.Code)
		}
	}
}

// gone reports whether pid has exited (a zombie waiting for a slow init counts as
// exited: it runs no more).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived the call", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pids reads the pids a script printed, one per line.
func pids(t *testing.T, out string) []int {
	t.Helper()
	var ps []int
	for _, f := range strings.Fields(out) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q", out)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		t.Fatalf("no pid in output %q", out)
	}
	return ps
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	s := sh("sleep 60 & echo $!; sh -c 'sleep 60' & echo $!; wait")
	s.Timeout = 300 * time.Millisecond
	ex, out, took := run(t, context.Background(), s)
	if !ex.TimedOut || ex.Canceled {
		t.Errorf("%+v, want TimedOut", ex)
	}
	if ex.Code != 128+int(syscall.SIGKILL) {
		t.Errorf("code %d, want %d", ex.Code, 128+int(syscall.SIGKILL))
	}
	if took > 2*time.Second {
		t.Errorf("took %v for a 300ms timeout", took)
	}
	for _, pid := range pids(t, out) {
		waitGone(t, pid)
	}
}

// A command that leaves a background process holding the output pipe returns when
// the command does, not when the background process would end.
func TestBackgroundHoldingPipeReturnsPromptly(t *testing.T) {
	s := sh("sleep 60 & echo $!; echo done")
	ex, out, took := run(t, context.Background(), s)
	if ex.Code != 0 || ex.TimedOut || ex.Canceled {
		t.Errorf("%+v, want a plain exit 0", ex)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("took %v: waited on the background process", took)
	}
	if !strings.HasSuffix(out, "done\n") {
		t.Errorf("output %q", out)
	}
	waitGone(t, pids(t, strings.TrimSuffix(out, "done\n"))[0])
}

// A descendant that left the process group (setsid) cannot be killed with it; the
// call still returns after a bounded grace instead of waiting for it.
func TestEscapedDescendantBounded(t *testing.T) {
	// setsid in a child that is not a group leader makes a new session in place,
	// so $! is the escaped sleep itself; the pause lets it escape before the
	// shell's exit kills the group.
	s := sh("setsid sleep 60 </dev/null & echo $!; sleep 0.3")
	ex, out, took := run(t, context.Background(), s)
	pid := pids(t, out)[0]
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if ex.Code != 0 {
		t.Errorf("%+v", ex)
	}
	if took > 5*time.Second {
		t.Errorf("took %v with a descendant holding the pipe", took)
	}
	if gone(pid) {
		t.Fatalf("the escaped process %d is gone: the test did not exercise the escape", pid)
	}
	if sid, _ := unix.Getsid(pid); sid != pid {
		t.Fatalf("process %d is in session %d, not its own", pid, sid)
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := sh("sleep 60 & echo $!; wait")
	s.Timeout = time.Minute
	time.AfterFunc(200*time.Millisecond, cancel)
	ex, out, took := run(t, ctx, s)
	if !ex.Canceled || ex.TimedOut {
		t.Errorf("%+v, want Canceled", ex)
	}
	if ex.Code != 128+int(syscall.SIGKILL) {
		t.Errorf("code %d", ex.Code)
	}
	if took > 2*time.Second {
		t.Errorf("cancel took %v", took)
	}
	waitGone(t, pids(t, out)[0])

	// Already canceled: the process is killed at once.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	ex, _, took = run(t, ctx, sh("sleep 60"))
	if !ex.Canceled || took > 2*time.Second {
		t.Errorf("pre-canceled: %+v after %v", ex, took)
	}
}

// Large output is delivered whole and in order.
func TestLargeOutput(t *testing.T) {
	ex, out, _ := run(t, context.Background(), sh("seq 1 200000"))
	if ex.Code != 0 {
		t.Fatalf("%+v", ex)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 200000 || lines[0] != "1" || lines[199999] != "200000" {
		t.Errorf("%d lines, first %q last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}
