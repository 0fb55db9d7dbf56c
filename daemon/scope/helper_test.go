package scope

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/victim"
)

// These tests run against a real systemd user manager, as an unprivileged
// user (root hides the permission problems real users hit):
//
//   - run as root (CI), TestMain boots a user manager for the test user
//     ctxd-scope with e2e/usermgr.sh, copies the test binary where that
//     user can run it, runs it as that user inside the manager's mount
//     namespace and cgroup subtree with CONTEXTD_SCOPE_INNER=1 and the same
//     -test.* flags, passes its output and exit status through, and stops
//     the manager again (CONTEXTD_SCOPE_KEEP=1 keeps it for reruns);
//   - run as a normal user (a workstation, or the inner run above), the
//     tests use that user's manager and fail, not skip, when there is none.
//
// The test binary also doubles as a helper process (CONTEXTD_SCOPE_HELPER)
// for what must run inside a scope: a fork loop and a memory hog.
const (
	innerEnv  = "CONTEXTD_SCOPE_INNER"
	keepEnv   = "CONTEXTD_SCOPE_KEEP"
	helperEnv = "CONTEXTD_SCOPE_HELPER"
	testUser  = "ctxd-scope"
)

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helperMain(h))
	}
	victim.UserManager{Name: "scope tests", User: testUser, InnerEnv: innerEnv, KeepEnv: keepEnv}.IfRoot()
	os.Exit(m.Run())
}

// helperMain runs the helper processes. Each waits for one line on stdin
// (it is "held" until the test has put it into a scope), then:
//
//	forkloop: starts 64 `sleep 30`, prints "started=N eagain=M other=K"
//	alloc:    allocates and touches 200 MiB, prints "survived"
func helperMain(mode string) int {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("no release line:", err)
		return 2
	}
	switch mode {
	case "forkloop":
		// Raw fork+exec: no new OS thread is needed for it (the runtime
		// must not try to create one near the task limit: it would die).
		var started, eagain, other int
		var lastErr error
		for range 64 {
			_, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "30"}, &syscall.ProcAttr{})
			switch {
			case err == nil:
				started++
			case errors.Is(err, syscall.EAGAIN):
				eagain++
			default:
				other++
				lastErr = err
			}
		}
		fmt.Printf("started=%d eagain=%d other=%d\n", started, eagain, other)
		if lastErr != nil {
			fmt.Println("last other error:", lastErr)
		}
		return 0
	case "alloc":
		b := make([]byte, 200<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("survived", len(b))
		return 0
	}
	fmt.Println("unknown helper mode", mode)
	return 2
}

// held is a child process started held: it blocks reading one line from
// stdin until Release, so that the test can put it into a scope first
// (the daemon does the same with its sandbox child).
type held struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *strings.Builder
	done    chan struct{}
	waitErr error
}

// startHeldShell runs SCRIPT with sh once released.
func startHeldShell(t testing.TB, script string) *held {
	t.Helper()
	// Not `read x && SCRIPT`: a trailing `&` in SCRIPT would put the read
	// into the background too, where stdin is /dev/null.
	return startHeld(t, exec.Command("sh", "-c", "read x || exit 99\n"+script))
}

// startHelper runs this test binary in helper mode.
func startHelper(t testing.TB, mode string) *held {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "GOMAXPROCS=1", "GOGC=off")
	return startHeld(t, cmd)
}

func startHeld(t testing.TB, cmd *exec.Cmd) *held {
	t.Helper()
	h := &held{cmd: cmd, out: &strings.Builder{}, done: make(chan struct{})}
	var err error
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// One writer for both: exec then writes from one goroutine at a time.
	cmd.Stdout, cmd.Stderr = h.out, h.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.waitErr = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.done
	})
	return h
}

func (h *held) pid() int { return h.cmd.Process.Pid }

func (h *held) release(t testing.TB) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatalf("releasing pid %d: %v", h.pid(), err)
	}
	h.stdin.Close()
}

// wait waits (bounded) for the process to end and returns its wait status.
func (h *held) wait(t testing.TB, timeout time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(timeout):
		t.Fatalf("pid %d (%v) still running after %v", h.pid(), h.cmd.Args, timeout)
	}
	return h.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// output is the process's stdout+stderr; call it only after wait.
func (h *held) output() string { return h.out.String() }
