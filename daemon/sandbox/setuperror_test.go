package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/ns"
)

// A program the sandbox cannot start although the sandbox itself is sound
// is the caller's to fix: a runner.StartError (catalog.ErrLaunch, with the
// errno), not a failed layer. The program is judged as the sandbox shows
// it: one that exists on the host but outside the sandbox's view is not
// there.
func TestProgramNotStartable(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		write := func(name, content string, mode os.FileMode) string {
			p := filepath.Join(ws, name)
			writeProgram(t, p, []byte(content), mode)
			return p
		}
		dir := filepath.Join(ws, "dir")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A working program in $HOME, outside the workspace.
		trueBin, err := os.ReadFile("/bin/true")
		if err != nil {
			t.Fatal(err)
		}
		hidden := filepath.Join(homeDir(t), "ctxd-sandbox-prog-"+strconv.Itoa(os.Getpid())+"-"+v.name)
		writeProgram(t, hidden, trueBin, 0o755)
		t.Cleanup(func() { os.Remove(hidden) })
		if err := exec.Command(hidden).Run(); err != nil {
			t.Fatalf("%s does not run on the host: %v", hidden, err)
		}

		for _, tt := range []struct {
			name  string
			path  string
			errno syscall.Errno
			exec  bool // found, but execve failed
		}{
			{"missing", "/nonexistent/prog", syscall.ENOENT, false},
			{"outside the sandbox's view", hidden, syscall.ENOENT, false},
			{"not executable", write("plain", "echo hi\n", 0o644), syscall.EACCES, false},
			{"directory", dir, syscall.EACCES, false},
			{"interpreter missing", write("script", "#!/nonexistent/interp\necho hi\n", 0o755), syscall.ENOENT, true},
			{"not a program", write("garbage", "\x00\x01\x02\x03 not a program\n", 0o755), syscall.ENOEXEC, true},
		} {
			s := shSpec(t, ws, "")
			s.Path, s.Args = tt.path, []string{filepath.Base(tt.path)}
			_, err := tryRun(t, v.r, s, false)
			var se *runner.StartError
			if !errors.As(err, &se) {
				t.Errorf("%s: %v, want a *runner.StartError", tt.name, err)
				continue
			}
			if se.Path != tt.path || se.Errno != tt.errno || se.Exec != tt.exec {
				t.Errorf("%s: %+v, want path %s, errno %v, exec %v", tt.name, se, tt.path, tt.errno, tt.exec)
			}
			if !errors.Is(err, catalog.ErrLaunch) || !errors.Is(err, tt.errno) || errors.Is(err, catalog.ErrSandbox) {
				t.Errorf("%s: %v unwraps wrongly: want %s and %v, not %s", tt.name, err, catalog.ErrLaunch.Code, tt.errno, catalog.ErrSandbox.Code)
			}
		}
	})
}

// setupError tells the program's failure (StartError) from a failed layer
// (ErrSandbox, naming the step), by mode, step, system call and errno.
func TestSetupErrorClassification(t *testing.T) {
	execSpec := runner.Spec{Mode: runner.Exec, Path: "/usr/bin/prog"}
	toolSpec := runner.Spec{Mode: runner.Tool, Args: []string{"safe_read"}}
	for _, tt := range []struct {
		name  string
		spec  runner.Spec
		err   error
		start bool   // a StartError
		exec  bool   // its Exec
		step  string // else: the step the message names
	}{
		{"not found in PATH", execSpec, &ns.SetupError{Step: ns.StepResolve, Syscall: "execve", Errno: syscall.ENOENT, Msg: "command not found in PATH /bin"}, true, false, ""},
		{"path not a directory", execSpec, &ns.SetupError{Step: ns.StepResolve, Syscall: "stat", Errno: syscall.ENOTDIR}, true, false, ""},
		{"symlink loop", execSpec, &ns.SetupError{Step: ns.StepResolve, Syscall: "stat", Errno: syscall.ELOOP}, true, false, ""},
		{"execve EACCES", execSpec, &ns.SetupError{Step: ns.StepExec, Syscall: "execve", Errno: syscall.EACCES}, true, true, ""},
		{"execve ENOEXEC", execSpec, &ns.SetupError{Step: ns.StepExec, Syscall: "execve", Errno: syscall.ENOEXEC}, true, true, ""},
		{"execve denied by the filter", execSpec, &ns.SetupError{Step: ns.StepExec, Syscall: "execve", Errno: syscall.EPERM}, false, false, "exec"},
		{"execve E2BIG", execSpec, &ns.SetupError{Step: ns.StepExec, Syscall: "execve", Errno: syscall.E2BIG}, false, false, "exec"},
		{"resolve EPERM", execSpec, &ns.SetupError{Step: ns.StepResolve, Syscall: "stat", Errno: syscall.EPERM}, false, false, "resolve"},
		{"tool binary gone", toolSpec, &ns.SetupError{Step: ns.StepExec, Syscall: "execveat", Errno: syscall.ENOENT}, false, false, "exec"},
		{"tool mode resolve", toolSpec, &ns.SetupError{Step: ns.StepResolve, Errno: syscall.ENOENT}, false, false, "resolve"},
		{"mount failed", execSpec, &ns.SetupError{Step: ns.StepMounts, Syscall: "open", Path: "/home/u/ws", Errno: syscall.ENOENT}, false, false, "mounts"},
		{"chdir failed", execSpec, &ns.SetupError{Step: ns.StepChdir, Syscall: "chdir", Errno: syscall.ENOENT}, false, false, "chdir"},
		{"seccomp load failed", execSpec, &ns.SetupError{Step: ns.StepSeccompLoad, Msg: "bad filter"}, false, false, "seccomp_load"},
		{"init died", execSpec, &ns.SetupError{Step: ns.StepSync, Msg: "the sandbox init exited before it was ready"}, false, false, "sync"},
		{"wrapped", execSpec, fmt.Errorf("outer: %w", &ns.SetupError{Step: ns.StepResolve, Errno: syscall.ENOENT}), true, false, ""},
		{"not a setup error", execSpec, errors.New("something else"), false, false, ""},
	} {
		err := setupError(tt.spec, tt.err)
		var se *runner.StartError
		if got := errors.As(err, &se); got != tt.start {
			t.Errorf("%s: %v: StartError %v, want %v", tt.name, err, got, tt.start)
			continue
		}
		if tt.start {
			var in *ns.SetupError
			errors.As(tt.err, &in)
			if se.Path != tt.spec.Path || se.Errno != in.Errno || se.Exec != tt.exec || se.Detail != in.Msg {
				t.Errorf("%s: %+v, want path %s, errno %v, exec %v, detail %q", tt.name, se, tt.spec.Path, in.Errno, tt.exec, in.Msg)
			}
			if !errors.Is(err, catalog.ErrLaunch) || errors.Is(err, catalog.ErrSandbox) {
				t.Errorf("%s: %v, want %s, not %s", tt.name, err, catalog.ErrLaunch.Code, catalog.ErrSandbox.Code)
			}
			continue
		}
		if !errors.Is(err, catalog.ErrSandbox) || errors.Is(err, catalog.ErrLaunch) {
			t.Errorf("%s: %v, want %s, not %s", tt.name, err, catalog.ErrSandbox.Code, catalog.ErrLaunch.Code)
		}
		if tt.step != "" && !strings.Contains(err.Error(), "at step "+tt.step) {
			t.Errorf("%s: %q does not name the step %s", tt.name, err, tt.step)
		}
	}
}

// writeProgram writes a file to be executed. The tests run in parallel, and
// a fork of another test between the file's open and its close would hand
// the child the write descriptor until its exec, so that executing the
// file fails with ETXTBSY (golang/go#22315): the write holds the fork lock
// that os/exec takes for writing.
func writeProgram(t *testing.T, p string, content []byte, mode os.FileMode) {
	t.Helper()
	syscall.ForkLock.RLock()
	err := os.WriteFile(p, content, mode)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
}
