package ns

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// ErrSetup is wrapped by every error that means the sandbox could not be set
// up: the command did not run (fail closed). errors.As(err, &*SetupError)
// gives the failed step.
var ErrSetup = errors.New("sandbox setup failed")

// Steps named in SetupError.Step, in the order the init runs them.
const (
	StepValidate     = "validate"      // the spec itself (daemon side, before anything starts)
	StepStart        = "start"         // creating the child (clone, uid/gid maps, re-exec)
	StepSpec         = "spec"          // reading the spec from its pipe
	StepMounts       = "mounts"        // building the new root (Path names the mount)
	StepPivotRoot    = "pivot_root"    // switching to it and dropping the old root
	StepChdir        = "chdir"         // entering Spec.Dir
	StepNetwork      = "network"       // bringing lo up
	StepHostname     = "hostname"      // sethostname
	StepRlimits      = "rlimits"       // setrlimit
	StepResolve      = "resolve"       // finding Argv[0] in PATH (exec mode)
	StepSeccompParse = "seccomp_parse" // parsing/compiling the profile
	StepSync         = "sync"          // the ready/release handshake
	StepFds          = "fds"           // closing inherited descriptors
	StepCaps         = "capabilities"  // dropping every capability
	StepNoNewPrivs   = "no_new_privs"  // PR_SET_NO_NEW_PRIVS
	StepSeccompLoad  = "seccomp_load"  // installing the filter
	StepExec         = "exec"          // execve / execveat
)

// SetupError tells which step of the sandbox setup failed and how. It wraps
// ErrSetup and, when set, Errno (so errors.Is(err, syscall.ENOENT) works).
type SetupError struct {
	Step    string        `json:"step"`
	Syscall string        `json:"syscall,omitempty"` // the failing system call, e.g. "mount"
	Path    string        `json:"path,omitempty"`    // what it was applied to
	Errno   syscall.Errno `json:"errno,omitempty"`
	Msg     string        `json:"msg,omitempty"` // extra detail
}

func (e *SetupError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox setup failed at step %s", e.Step)
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", e.Path)
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Syscall != "" || e.Errno != 0 {
		b.WriteString(": ")
		if e.Syscall != "" {
			b.WriteString(e.Syscall)
			if e.Errno != 0 {
				b.WriteString(": ")
			}
		}
		if e.Errno != 0 {
			fmt.Fprintf(&b, "%v (%s)", e.Errno, errnoName(e.Errno))
		}
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrSetup) and errors.Is(err, e.Errno) true.
func (e *SetupError) Unwrap() []error {
	if e.Errno != 0 {
		return []error{ErrSetup, e.Errno}
	}
	return []error{ErrSetup}
}

func invalid(msg string) *SetupError {
	return &SetupError{Step: StepValidate, Msg: msg}
}

// sysErr builds a SetupError from a failed system call.
func sysErr(step, call, path string, err error) *SetupError {
	e := &SetupError{Step: step, Syscall: call, Path: path}
	var se *SetupError
	if errors.As(err, &se) {
		return se
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		e.Errno = errno
	} else if err != nil {
		e.Msg = err.Error()
	}
	return e
}

// errnoName gives the symbolic name of the common errnos, for messages that
// are read by people who then search for them.
func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES",
		syscall.EINVAL: "EINVAL", syscall.EROFS: "EROFS", syscall.ENOTDIR: "ENOTDIR",
		syscall.EEXIST: "EEXIST", syscall.ELOOP: "ELOOP", syscall.EBUSY: "EBUSY",
		syscall.ENOSYS: "ENOSYS", syscall.ENOEXEC: "ENOEXEC", syscall.ENOMEM: "ENOMEM",
		syscall.EBADF: "EBADF", syscall.EFAULT: "EFAULT", syscall.ENOSPC: "ENOSPC",
		syscall.E2BIG: "E2BIG", syscall.ENODEV: "ENODEV", syscall.EISDIR: "EISDIR",
		syscall.EXDEV: "EXDEV", syscall.EPIPE: "EPIPE", syscall.ESRCH: "ESRCH",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}
