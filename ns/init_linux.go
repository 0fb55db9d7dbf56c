package ns

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// initExitCode is the init's exit status when setup fails (the reason went
// to the daemon on the sync socket).
const initExitCode = 125

// Init runs the sandbox init if this process was started as one by Start,
// and then never returns: it execs the command or exits. Otherwise it
// returns at once. The binary's main must call it first thing, before
// anything else starts goroutines or opens files:
//
//	func main() {
//		ns.Init()
//		...
//	}
//
// Package initialisers of the binary still run before it, in every sandbox
// start: keep them cheap.
func Init() { InitWith(Hooks{}) }

// Hooks are what a binary lets its sandbox init do besides executing a
// command.
type Hooks struct {
	// Func runs a ModeFunc spec inside the init, after every last step
	// (descriptors, limits, capabilities, no_new_privs, seccomp); its result
	// is the exit status. Nil: ModeFunc specs fail at setup.
	Func func(args []string) int
	// Warm runs in a pooled init while it waits for a call, on another
	// goroutine, for work that does not depend on the call (building tables
	// Func will need). Func must wait for anything it shares with Warm.
	Warm func()
}

// hooks are the binary's Hooks, set by InitWith before anything else runs.
var hooks Hooks

// InitWith is Init for a binary that runs ModeFunc specs.
func InitWith(h Hooks) {
	if len(os.Args) == 0 || os.Args[0] != initArgv0 {
		return
	}
	hooks = h
	// Capabilities, no_new_privs and the exec are per thread: everything
	// from here on runs on this one.
	runtime.LockOSThread()
	os.Exit(runInit(len(os.Args) == 2 && os.Args[1] == pooledArg))
}

// Reexec is Init for test binaries, which are re-executed as the sandbox
// init just like contextd: call it first in TestMain.
//
//	func TestMain(m *testing.M) {
//		ns.Reexec()
//		os.Exit(m.Run())
//	}
//
// It never returns in a sandbox init and returns false otherwise.
func Reexec() bool {
	Init()
	return false
}

// ReexecWith is Reexec with Hooks (InitWith).
func ReexecWith(h Hooks) bool {
	InitWith(h)
	return false
}

// report sends a setup error to the daemon. Best effort: if the daemon is
// gone there is nobody to tell.
func report(e *SetupError) {
	sendMsg(syncMsg{Err: e})
}

func sendMsg(m syncMsg) error { return sendMsgFds(m, nil) }

// sendMsgFds sends m with descriptors (SCM_RIGHTS) in the same message.
func sendMsgFds(m syncMsg, fds []int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for {
		err = unix.Sendmsg(fdSync, b, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return err
		}
	}
}

// runInit is the sandbox init. It returns an exit status only on failure.
func runInit(pooled bool) int {
	if pooled {
		// Started by a Pool before there was a call: nothing so far
		// depended on one (the runtime and package initialisers ran with
		// /dev/null as stdio and an empty environment). Say so, and wait.
		if err := sendMsg(syncMsg{Parked: true}); err != nil {
			return initExitCode // the daemon is gone
		}
		if hooks.Warm != nil {
			go hooks.Warm()
		}
		claimed, e := awaitClaim()
		if e != nil {
			report(e)
			return initExitCode
		}
		if !claimed {
			return initExitCode // the pool closed or the daemon died
		}
	}
	sb := &sandbox{t0: time.Now(), times: map[string]float64{}}
	spec, bpf, e := readSpec()
	if e != nil {
		report(e)
		return initExitCode
	}
	sb.spec, sb.bpf = spec, bpf
	sb.mark("spec")
	if e := sb.setup(); e != nil {
		report(e)
		return initExitCode
	}
	sb.mark("ready")
	err := sendMsgFds(syncMsg{Ready: true, Listening: sb.listening, Times: sb.times}, sb.listenFds)
	// The daemon has its copies now (or is gone); the command never holds
	// them (and in func mode the init itself goes on running).
	for _, fd := range sb.listenFds {
		unix.Close(fd)
	}
	if err != nil {
		return initExitCode // the daemon is gone
	}
	// Held here until the daemon has done its part (the systemd scope).
	// EOF means the daemon closed the socket or died: do not run.
	var b [1]byte
	for {
		n, err := unix.Read(fdSync, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 || b[0] != goByte {
			return initExitCode
		}
		break
	}
	e = sb.finish()
	report(e)
	return initExitCode
}

// awaitClaim blocks until the daemon hands this pooled init a call: one
// message on the sync socket, claimByte followed by the target number of
// each attached descriptor. It puts those descriptors in place as 0, 1 and
// 2 (not close-on-exec), before anything reads or writes them; the ones not
// sent stay /dev/null, as with Start. false, nil: the socket reached EOF.
func awaitClaim() (bool, *SetupError) {
	buf := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(3*4))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(fdSync, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return false, sysErr(StepSync, "recvmsg", "claim", err)
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return false, sysErr(StepSync, "recvmsg", "claim", err)
		}
		for i := range msgs {
			got, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				continue
			}
			fds = append(fds, got...)
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if n == 0 && oobn == 0 {
		return false, nil
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || n < 1 || buf[0] != claimByte || len(fds) != n-1 {
		closeAll()
		return false, &SetupError{Step: StepSync, Msg: "malformed claim message"}
	}
	for i, fd := range fds {
		target := int(buf[1+i])
		// 0-2 are open (/dev/null), so received descriptors are above 2.
		if target > 2 || fd <= 2 {
			closeAll()
			return false, &SetupError{Step: StepSync, Msg: "malformed claim message"}
		}
		if err := unix.Dup3(fd, target, 0); err != nil {
			closeAll()
			return false, sysErr(StepSync, "dup3", "stdio", err)
		}
	}
	closeAll()
	return true, nil
}

// readSpec reads the spec, and the compiled filter if the daemon sent one.
func readSpec() (*Spec, []byte, *SetupError) {
	var data []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(fdSpec, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, sysErr(StepSpec, "read", "", err)
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	unix.Close(fdSpec)
	var w wireSpec
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, nil, &SetupError{Step: StepSpec, Msg: "decode: " + err.Error()}
	}
	// The daemon validated it; check again what the init relies on.
	c, verr := w.Spec.normalize(len(w.BPF) > 0)
	if verr != nil {
		return nil, nil, verr
	}
	return c, w.BPF, nil
}

// sandbox is the init's state between the steps.
type sandbox struct {
	spec    *Spec
	bpf     []byte // the filter, compiled by the daemon (nil: compile spec.Seccomp)
	dir     string // Spec.Dir as it is seen inside the sandbox
	path    string // the resolved executable (exec mode)
	seccomp loadable

	listenFds []int    // Spec.Listen's sockets, for the ready message
	listening []string // their addresses, in the same order

	// t0 and times: when the init had its call (start, or the claim of a
	// pooled one), and the milliseconds since then at which each setup
	// step ended, for the ready message (Child.SetupTimes).
	t0    time.Time
	times map[string]float64
}

// mark records that the setup step name ended now.
func (sb *sandbox) mark(name string) {
	sb.times[name] = float64(time.Since(sb.t0).Microseconds()) / 1000
}

// setup runs every step that can run before the daemon releases the
// sandbox, so that a failure there is reported before anything is executed
// and the work overlaps with the daemon's.
func (sb *sandbox) setup() *SetupError {
	s := sb.spec
	dir, e := sb.buildRoot()
	if e != nil {
		return e
	}
	sb.dir = dir
	sb.mark("root")
	if err := unix.Chdir(sb.dir); err != nil {
		return sysErr(StepChdir, "chdir", sb.dir, err)
	}
	if !s.Network {
		if e := loopbackUp(); e != nil {
			return e
		}
		if e := sb.openListeners(); e != nil {
			return e
		}
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return sysErr(StepHostname, "sethostname", s.Hostname, err)
	}
	if s.Mode == ModeFunc && hooks.Func == nil {
		return &SetupError{Step: StepExec, Msg: "func mode, but this binary registered no function (ns.InitWith)"}
	}
	if s.Mode == ModeExec {
		p, e := lookPath(s.Argv[0], s.Env)
		if e != nil {
			return e
		}
		sb.path = p
	}
	if sb.bpf != nil {
		f, err := decodeBPF(sb.bpf)
		if err != nil {
			return &SetupError{Step: StepSeccompParse, Msg: "compiled filter: " + err.Error()}
		}
		sb.seccomp = f
		return nil
	}
	f, err := parseSeccomp(s.Seccomp)
	if err != nil {
		return &SetupError{Step: StepSeccompParse, Msg: err.Error()}
	}
	sb.seccomp = f
	return nil
}

// finish runs the last steps, after the release, in the order that keeps
// each one possible: descriptors, limits, capabilities, no_new_privs,
// seccomp, exec. It returns only on failure.
func (sb *sandbox) finish() *SetupError {
	s := sb.spec
	if e := closeInheritedFds(); e != nil {
		return e
	}
	// Limits go on this late so that they bind the command but not the
	// init's own runtime (a small AS or DATA limit would break it).
	if e := setRlimits(s.Rlimits); e != nil {
		return e
	}
	if e := dropCapabilities(); e != nil {
		return e
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return sysErr(StepNoNewPrivs, "prctl", "PR_SET_NO_NEW_PRIVS", err)
	}
	argv, env := s.Argv, s.Env
	if s.Mode == ModeTestProbe {
		argv = append([]string{TestProbeArgv0}, s.Argv...)
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return &SetupError{Step: StepExec, Msg: "argv contains a NUL byte"}
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return &SetupError{Step: StepExec, Msg: "env contains a NUL byte"}
	}
	var pathp *byte
	if s.Mode == ModeExec {
		if pathp, err = unix.BytePtrFromString(sb.path); err != nil {
			return &SetupError{Step: StepExec, Msg: "path contains a NUL byte"}
		}
	}
	empty, _ := unix.BytePtrFromString("")

	// seccomp is installed last, immediately before execve, on purpose:
	// every system call made after the filter is loaded must be allowed by
	// the profile. Loading it earlier would force every profile (including
	// the tight allowlists of the file tools) to permit mount, pivot_root,
	// sethostname, capset, prctl, setrlimit, close_range and whatever the
	// Go runtime does meanwhile; loading it last leaves only execve or
	// execveat (and, if that fails, write + exit_group for the report).
	if s.Mode == ModeFunc {
		return sb.runFunc()
	}
	if err := sb.seccomp.Load(); err != nil {
		return &SetupError{Step: StepSeccompLoad, Msg: err.Error()}
	}
	var errno syscall.Errno
	if s.Mode == ModeTestProbe {
		// The descriptor is close-on-exec (closeInheritedFds): execveat of
		// a close-on-exec descriptor works for an ELF binary and leaves
		// nothing behind in the tool.
		_, _, errno = unix.RawSyscall6(unix.SYS_EXECVEAT, uintptr(fdExe),
			uintptr(unsafe.Pointer(empty)),
			uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])),
			unix.AT_EMPTY_PATH, 0)
		return &SetupError{Step: StepExec, Syscall: "execveat", Path: TestProbeArgv0, Errno: errno}
	}
	_, _, errno = unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	return &SetupError{Step: StepExec, Syscall: "execve", Path: sb.path, Errno: errno}
}

// FuncInitName is the process name (comm) of a ModeFunc init, PID 1 of its
// sandbox.
const FuncInitName = "contextd-init"

// runFunc is the end of a ModeFunc init: the descriptors only the init used
// are closed (close-on-exec does nothing without an exec), the process is
// made non-dumpable, the filter is loaded on every thread, and the function
// runs. It returns only if the filter could not be loaded.
//
// Without an exec, the Go runtime's other threads keep what the user
// namespace gave them at clone: capabilities are dropped per thread, and
// only this one (the thread group leader, whose state /proc shows) dropped
// them. They are worth little: only the user's own uid and gid are mapped,
// so they override nothing on files of other users; the seccomp filter,
// loaded with TSYNC, binds every thread; and a program the function starts
// (safe_bash's shell) gets none, since execve recomputes them for a non-root
// uid. One thing they could still undo is a mask (Spec.Masks): the init
// mounted it in this very mount namespace, so it is not locked, and
// unmounting it would show what it covers. Masks therefore rely, in this
// mode, on the function not unmounting and on the profile refusing umount2
// (the allowlists of the file tools do not allow it; safe_bash's and
// mcp-server's refuse the whole mount family). Non-dumpable keeps the
// command from reading or writing the init's memory through /proc/1/mem,
// which the filter's ptrace rule does not cover.
func (sb *sandbox) runFunc() *SetupError {
	// Without an exec the init would show as "exe" in the command's ps; the
	// name says what it is.
	name, _ := unix.BytePtrFromString(FuncInitName)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0); err != nil {
		return sysErr(StepExec, "prctl", "PR_SET_NAME", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return sysErr(StepExec, "prctl", "PR_SET_DUMPABLE", err)
	}
	if err := sb.seccomp.Load(); err != nil {
		return &SetupError{Step: StepSeccompLoad, Msg: err.Error()}
	}
	// The sync socket stays open (close-on-exec: nothing the function
	// starts inherits it) for the end message below.
	unix.Close(fdExe)
	code := hooks.Func(sb.spec.Argv)
	endEarly(code)
	os.Exit(code)
	return nil
}

// endEarly ends every other process of the sandbox and, once none is left,
// tells the daemon the function's exit code: the call's result is then
// complete, and the daemon need not wait for this process's own exit, in
// which the kernel tears down the namespaces and the Go runtime's memory
// (3-5 ms, the longest step of a short call). Without the message the
// daemon waits for the exit, as for an exec'd command; so whatever fails
// here only costs that time.
//
// The order is what makes the message true. SIGKILL to -1 from PID 1 of a
// PID namespace reaches every other process in it (nested namespaces
// included) and never the caller. wait4 then reaps until ECHILD: every
// process of the namespace is a descendant of this one, and an orphan is
// re-parented (to this init, or to a subreaper that is itself one of the
// killed processes) before its parent can be reaped, so ECHILD means none
// is left, and none can be made (only a process can fork, and this one
// does not). Any other error (a profile that refuses wait4: the file
// tools' allowlists, where nothing can fork anyway) means this is not
// proven, and no message is sent. Then descriptors 0-2 are closed, so that
// the daemon reads the output to its end (EOF) before it sees the message.
// write, not sendmsg: every profile allows it.
func endEarly(code int) {
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus // x/sys/unix stores it: not nil
		_, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == nil || err == unix.EINTR {
			continue
		}
		if err != unix.ECHILD {
			return
		}
		break
	}
	for fd := 0; fd <= 2; fd++ {
		unix.Close(fd)
	}
	b, err := json.Marshal(syncMsg{Ended: true, Code: code})
	if err != nil {
		return
	}
	unix.Write(fdSync, b)
}

// lookPath finds file the way execvp does, in the PATH of the command's
// environment (not the daemon's), inside the sandbox. A name with a slash is
// used as it is (relative to the working directory).
func lookPath(file string, env []string) (string, *SetupError) {
	check := func(p string) error {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return unix.EACCES
		}
		return unix.Access(p, unix.X_OK)
	}
	if strings.Contains(file, "/") {
		if err := check(file); err != nil {
			return "", sysErr(StepResolve, "stat", file, err)
		}
		return file, nil
	}
	pathEnv, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathEnv, ok = v, true
		}
	}
	if !ok {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	var first error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		err := check(p)
		if err == nil {
			return p, nil
		}
		if first == nil && err != unix.ENOENT && err != unix.ENOTDIR {
			first = err
		}
	}
	e := &SetupError{Step: StepResolve, Syscall: "execve", Path: file, Errno: unix.ENOENT,
		Msg: "command not found in PATH " + pathEnv}
	if errno, ok := first.(syscall.Errno); ok {
		e.Errno = errno
		e.Msg = "command found in PATH but not executable"
	}
	return "", e
}
