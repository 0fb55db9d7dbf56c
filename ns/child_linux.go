package ns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// initArgv0 is argv[0] of the re-executed binary when it must act as the
// sandbox init. It is not a path, so it cannot be reached by accident from a
// shell, and Init recognises it exactly.
const initArgv0 = "contextd-sandbox-init"

// Descriptor numbers in the sandbox init (ExtraFiles start at 3).
const (
	fdSpec = 3 // read end of the spec pipe
	fdSync = 4 // the init's end of the sync socket
	fdExe  = 5 // O_PATH descriptor of the binary (ModeTestProbe, and every pooled init)
)

// goByte is what Release sends.
const goByte = 'g'

// claimByte starts the message with which a Pool hands one of its inits a
// call: claimByte, then for each descriptor attached (SCM_RIGHTS) the
// number (0, 1 or 2) it is to become in the init. These two are the only
// messages from the daemon to the init.
const claimByte = 'c'

// pooledArg is argv[1] of an init started by a Pool: it waits for the claim
// message before it reads its spec.
const pooledArg = "pooled"

// initCaps are the capabilities (in the new user namespace only) the init
// keeps across the re-exec of /proc/self/exe. A process that creates a user
// namespace has every capability in it, but execve as a non-zero uid (the
// caller's uid is mapped to itself, not to 0) clears them; raising them as
// ambient capabilities keeps exactly these. All are dropped again before the
// command is executed.
//
// CAP_DAC_OVERRIDE is for overlayfs (Spec.Overlays), which does every
// operation on its layers with the credentials the mounter had at mount
// time: it makes its work directory mode 0 and then creates files in it,
// and copy-up writes user.overlay.* attributes on copies of read-only files.
// Without it the mount fails with EACCES. The command's own permissions are
// still checked on the overlay's files first. In a user namespace the
// capability only overrides permissions on files whose owner and group are
// both mapped, here the caller's own uid and gid: files the user could
// chmod anyway.
var initCaps = []uintptr{
	unix.CAP_SYS_ADMIN,    // mount, pivot_root, sethostname
	unix.CAP_NET_ADMIN,    // bring lo up
	unix.CAP_SETPCAP,      // empty the bounding set
	unix.CAP_DAC_OVERRIDE, // overlayfs' own work, done with the mounter's credentials
}

// syncMsg is one message from the init to the daemon on the sync socket
// (SOCK_SEQPACKET, so one Read is one message).
type syncMsg struct {
	Ready bool `json:"ready,omitempty"`
	// Listening are the addresses of Spec.Listen the init listens on, in
	// the order of the descriptors that come with the ready message.
	Listening []string    `json:"listening,omitempty"`
	Parked    bool        `json:"parked,omitempty"` // a pool's init waits for its claim
	Err       *SetupError `json:"error,omitempty"`
	// Ended: a ModeFunc init's function returned Code, and no other
	// process of the sandbox is left (see endEarly).
	Ended bool `json:"ended,omitempty"`
	Code  int  `json:"code,omitempty"`
	// Times come with the ready message: when each setup step ended, in
	// milliseconds since the init had its call (Child.SetupTimes).
	Times map[string]float64 `json:"times,omitempty"`
}

// Child is a sandbox init started by Start or Pool.Start: first setting up
// its namespaces, then held until Release, then the command itself (the init
// execs it, so Pid stays the same).
type Child struct {
	cmd  *exec.Cmd
	sync *os.File // daemon's end of the sync socket

	readyOnce sync.Once
	readyc    chan struct{} // closed at the first message (but "parked") or at EOF
	donec     chan struct{} // closed at EOF: the init exec'd or exited
	endedc    chan struct{} // closed at the "ended" message (ModeFunc only)
	endCode   int           // its code; set before endedc is closed

	// Pool's inits only: parkedc is closed when the init reports that it
	// is up and waiting to be claimed; pooled says the Child came from a
	// Pool rather than from a fresh start.
	parkOnce sync.Once
	parkedc  chan struct{}
	pooled   bool
	// onExit, if set (by Pool.Start), is called once the process is reaped.
	onExit func()

	mu        sync.Mutex
	err       *SetupError // reported by the init
	ready     bool
	listeners []Listener // came with the ready message; the caller owns them
	times     map[string]float64
	pending   *pendingSpec // a reserved pooled init's spec pipe (Pool.Reserve), until Send
	released  bool
	killed    bool

	waitOnce sync.Once
	code     int
	signaled bool
	waitErr  error
}

// Start starts a sandbox for spec and returns as soon as the child process
// exists: the init sets up its namespaces while the caller does its own work
// for Child.Pid() (for example creating the systemd scope); the command runs
// only after Release. stdin, stdout and stderr become the command's
// descriptors 0, 1 and 2 (nil: /dev/null).
//
// A spec that is not valid is refused with a SetupError (step "validate")
// before anything starts; failures in the sandbox come back from Ready,
// Release or Wait as a SetupError naming the step. Every such error wraps
// ErrSetup, and in every such case the command did not run.
//
// The child gets SIGKILL if the thread that called Start exits (Pdeathsig);
// do not call Start from a goroutine that has locked its OS thread and may
// exit without unlocking it. (Pool.Start has no such restriction for the
// inits it hands out: they were started on a thread that never exits.)
func Start(spec *Spec, stdin, stdout, stderr *os.File) (*Child, error) {
	s, data, err := prepare(spec)
	if err != nil {
		return nil, err
	}
	return start(s, data, stdin, stdout, stderr)
}

// wireSpec is what travels on the spec pipe: the Spec and, when the daemon
// could compile the profile, its BPF program (host byte order, as libseccomp
// exports it). With BPF the profile itself is left out: the init loads the
// program as it is and needs neither the profile nor libseccomp.
type wireSpec struct {
	Spec
	BPF []byte `json:"bpf,omitempty"`
}

// prepare validates spec, fills in the defaults and encodes it for the init.
func prepare(spec *Spec) (*Spec, []byte, error) {
	s, verr := spec.withDefaults()
	if verr != nil {
		return nil, nil, verr
	}
	w := wireSpec{Spec: *s}
	if bpf := precompile(s.Seccomp); bpf != nil {
		w.BPF, w.Seccomp = bpf, nil
	}
	// Otherwise the init parses and compiles the profile itself, and
	// reports a bad one as a SetupError (step seccomp_parse).
	data, err := json.Marshal(&w)
	if err != nil {
		return nil, nil, &SetupError{Step: StepValidate, Msg: "encode spec: " + err.Error()}
	}
	return s, data, nil
}

// start is Start after prepare.
func start(s *Spec, data []byte, stdin, stdout, stderr *os.File) (*Child, error) {
	c, specW, err := launch(launchOpts{
		network: s.Network,
		exe:     s.Mode == ModeTestProbe,
		stdin:   stdin, stdout: stdout, stderr: stderr,
	})
	if err != nil {
		return nil, err
	}
	// The spec is written while the child starts; the pipe holds 64 KiB, and
	// the init reads it first thing, so this finishes at once. If the init
	// dies first, its end of the pipe closes and the write fails with EPIPE.
	go func() {
		writeAll(specW, data)
		specW.Close()
	}()
	return c, nil
}

// launchOpts says how to start an init.
type launchOpts struct {
	network bool // keep the host's network namespace (no CLONE_NEWNET)
	exe     bool // pass an O_PATH descriptor of the binary as fdExe
	pooled  bool // a pool's init: it waits for a claim before it reads the spec
	stdin   *os.File
	stdout  *os.File
	stderr  *os.File
}

// launch starts an init and returns it with the write end of its spec pipe,
// which the caller writes the spec to and closes.
func launch(o launchOpts) (*Child, *os.File, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, sysErr(StepStart, "pipe", "", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, nil, sysErr(StepStart, "socketpair", "", err)
	}
	// Non-blocking, so that reads go through the runtime's poller.
	if err := unix.SetNonblock(pair[0], true); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		specR.Close()
		specW.Close()
		return nil, nil, sysErr(StepStart, "fcntl", "", err)
	}
	parentSync := os.NewFile(uintptr(pair[0]), "ns-sync")
	childSync := os.NewFile(uintptr(pair[1]), "ns-sync-init")

	extra := []*os.File{specR, childSync}
	if o.exe {
		// After pivot_root the binary is not reachable by any path, so the
		// init gets it as a descriptor opened here. O_PATH: nothing can be
		// read or written through it, only executed.
		fd, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			parentSync.Close()
			childSync.Close()
			specR.Close()
			specW.Close()
			return nil, nil, sysErr(StepStart, "open", "/proc/self/exe", err)
		}
		exe := os.NewFile(uintptr(fd), "contextd-exe")
		defer exe.Close()
		extra = append(extra, exe)
	}

	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !o.network {
		flags |= unix.CLONE_NEWNET
	}
	args := []string{initArgv0}
	if o.pooled {
		args = append(args, pooledArg)
	}
	// An unprivileged process may map exactly its effective ids.
	uid, gid := os.Geteuid(), os.Getegid()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe", // the running binary, even if replaced on disk since
		Args:       args,
		Env:        []string{}, // the init needs none; the command's comes in the spec
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                initCaps,
			Setsid:                     true, // no controlling terminal of the daemon
			Pdeathsig:                  syscall.SIGKILL,
		},
	}
	// An *os.File that is nil must not become a non-nil io.Reader/Writer.
	if o.stdin != nil {
		cmd.Stdin = o.stdin
	}
	if o.stdout != nil {
		cmd.Stdout = o.stdout
	}
	if o.stderr != nil {
		cmd.Stderr = o.stderr
	}

	err = cmd.Start()
	specR.Close()
	childSync.Close()
	if err != nil {
		parentSync.Close()
		specW.Close()
		return nil, nil, sysErr(StepStart, "fork/exec", "/proc/self/exe", err)
	}

	c := &Child{
		cmd:    cmd,
		sync:   parentSync,
		readyc: make(chan struct{}),
		donec:  make(chan struct{}),
		endedc: make(chan struct{}),
	}
	if o.pooled {
		c.parkedc = make(chan struct{})
	}
	go c.readLoop()
	return c, specW, nil
}

func writeAll(f *os.File, b []byte) {
	for len(b) > 0 {
		n, err := f.Write(b)
		if err != nil {
			return
		}
		b = b[n:]
	}
}

// readLoop collects the init's messages until the socket reaches EOF, which
// happens when the init execs the command (the socket is close-on-exec) or
// exits.
func (c *Child) readLoop() {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(MaxListen*4))
	for {
		n, fds, err := c.recv(buf, oob)
		if errors.Is(err, syscall.ECONNRESET) {
			// The init exited with a message of ours unread (a Release
			// that came before its setup error). The kernel reports that
			// once, before the messages still queued here: read on.
			continue
		}
		if err != nil || n == 0 {
			break
		}
		var m syncMsg
		if err := json.Unmarshal(buf[:n], &m); err != nil {
			m.Err = &SetupError{Step: StepSync, Msg: "malformed message from the sandbox init"}
		}
		if m.Parked && m.Err == nil && !m.Ready && c.parkedc != nil {
			// A pool's init is up and waits to be claimed; not a step of
			// the setup.
			c.parkOnce.Do(func() { close(c.parkedc) })
			continue
		}
		if m.Ended && m.Err == nil {
			// Once: a second one would be a protocol error, and a
			// closed channel cannot be closed again.
			select {
			case <-c.endedc:
			default:
				c.endCode = m.Code
				close(c.endedc)
			}
			continue
		}
		c.mu.Lock()
		switch {
		case m.Err != nil:
			if c.err == nil {
				c.err = m.Err
			}
		case m.Ready:
			c.ready = true
			c.times = m.Times
			ls, err := fileListeners(m.Listening, fds)
			fds = nil
			if err != nil {
				c.err = &SetupError{Step: StepSync, Msg: "listeners from the sandbox init: " + err.Error()}
			}
			c.listeners = ls
		}
		for _, fd := range fds {
			unix.Close(fd) // not asked for: never keep them
		}
		c.mu.Unlock()
		c.readyOnce.Do(func() { close(c.readyc) })
	}
	c.readyOnce.Do(func() { close(c.readyc) })
	close(c.donec)
}

// recv reads one message from the init and the descriptors that came with
// it.
func (c *Child) recv(buf, oob []byte) (n int, fds []int, err error) {
	rc, err := c.sync.SyscallConn()
	if err != nil {
		return 0, nil, err
	}
	var oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				if got, perr := unix.ParseUnixRights(&msgs[i]); perr == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return 0, nil, err
	}
	return n, fds, nil
}

// Listeners returns the listeners of Spec.Listen, in the sandbox's network
// namespace, once Ready returned nil (nil before, or when the spec had
// none; an IPv6 address the namespace cannot have is left out). The caller
// owns them: it serves them, and closes them when the call ends.
func (c *Child) Listeners() []Listener {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listeners
}

// Pid is the process ID of the sandbox (in the daemon's PID namespace). It
// is the init until Release and the command after it: the init execs.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Ready waits until the sandbox is set up and held before its last steps
// (dropping privileges, seccomp, exec), and returns the setup error if it
// failed instead. Calling it is optional: Release and Wait report the same.
func (c *Child) Ready() error {
	<-c.readyc
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.ready {
		return nil
	}
	return &SetupError{Step: StepSync, Msg: "the sandbox init exited before it was ready"}
}

// Release lets the sandbox go on: close descriptors, drop capabilities, set
// no_new_privs, load seccomp and exec the command. It does not wait for
// Ready; an init that already failed makes it return that failure.
func (c *Child) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.released {
		return nil
	}
	c.released = true
	if _, err := c.sync.Write([]byte{goByte}); err != nil {
		if c.err != nil {
			return c.err
		}
		return sysErr(StepSync, "write", "", err)
	}
	return nil
}

// SetupTimes are the init's own timings of its setup, once Ready returned
// nil: for each step ("spec", "plan", "mounts", "submounts", "root",
// "ready"), the milliseconds from the init's start (or the claim of a
// pooled one) to the step's end. For the daemon's debug log.
func (c *Child) SetupTimes() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.times
}

// Ended is closed when a ModeFunc sandbox's function has returned and no
// other process of the sandbox is left (its output is complete, its
// descriptors closed); EndCode is then the function's exit code. The init
// itself may still be exiting: its namespaces and mounts last until Wait
// returns. A sandbox that cannot prove it (see endEarly), and every other
// mode, never closes it: Wait is then the end.
func (c *Child) Ended() <-chan struct{} { return c.endedc }

// EndCode is the exit code of the "ended" message, once Ended is closed.
func (c *Child) EndCode() int {
	<-c.endedc
	return c.endCode
}

// Kill kills the sandbox with SIGKILL. The sandbox process is the init of
// its PID namespace, so the kernel then kills every process in it,
// backgrounded and daemonized ones included.
func (c *Child) Kill() error {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	err := c.cmd.Process.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Wait waits for the sandbox to end and returns the command's exit code.
// When the process was killed by a signal, signaled is true and exitCode is
// 128 + the signal number (the shell's convention). err is a SetupError
// (wrapping ErrSetup) when the sandbox failed before the command ran; then
// exitCode is -1. A sandbox that is neither released nor killed waits for
// that forever, and so does Wait. Wait may be called more than once.
func (c *Child) Wait() (exitCode int, signaled bool, err error) {
	c.waitOnce.Do(c.wait)
	return c.code, c.signaled, c.waitErr
}

func (c *Child) wait() {
	werr := c.cmd.Wait()
	<-c.donec
	c.sync.Close()
	if c.onExit != nil {
		c.onExit()
	}

	c.mu.Lock()
	setupErr, released, killed := c.err, c.released, c.killed
	c.mu.Unlock()

	c.code = -1
	if setupErr != nil {
		c.waitErr = setupErr
		return
	}
	st := c.cmd.ProcessState
	if st == nil {
		c.waitErr = sysErr(StepStart, "wait", "", werr)
		return
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		c.code, c.signaled = 128+int(ws.Signal()), true
	default:
		c.code = ws.ExitStatus()
	}
	if !released && !killed {
		// The init ended without exec and without saying why (a crash, or
		// the daemon closed the socket): still a setup failure.
		c.waitErr = &SetupError{Step: StepSync, Msg: fmt.Sprintf("the sandbox init ended before release (%v)", st)}
		c.code, c.signaled = -1, false
	}
}
