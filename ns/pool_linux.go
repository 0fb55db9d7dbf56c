package ns

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPoolSize is the pool size the daemon should use. Two covers a tool
// call that starts while the previous call's replacement is still starting
// (about 20 ms of CPU each); more only helps bursts of parallel calls,
// which then fall back to Start, and every idle init holds memory (a Go
// runtime, 5-10 MB resident) in the daemon's cgroup.
const DefaultPoolSize = 2

// Pool keeps sandbox inits started ahead of time, so that a call does not
// wait for the contextd binary to be executed and initialised (most of the
// time of Start). A pooled init has done nothing that depends on a call: it
// is the re-executed binary in its new namespaces, waiting, with /dev/null
// as stdio. Pool.Start hands one the call's stdio and spec and it goes on
// exactly as an init of Start does.
//
// Pooled inits always have a network namespace of their own, so a spec with
// Network true is started fresh (Start). They are started on one OS thread
// that never exits, so their Pdeathsig (SIGKILL) fires only when the daemon
// dies, whichever goroutine claims them.
//
// Staleness: a pooled init's mount namespace is a copy of the daemon's made
// when it was started. Mounts that reach the daemon's namespace by
// propagation reach the copy as well (its mounts are slaves of the
// daemon's), but a mount or unmount made in the daemon's own namespace
// does not. The pool watches the daemon's mount table (poll on
// /proc/self/mountinfo) and discards every idle init started before it
// changed; as a second check, it does not use an init in which the
// workspace is not the same directory as in the daemon. In both cases Start
// falls back to a fresh start, once, before anything is handed over: a
// pooled init whose setup fails later reports the failure like any other
// (the caller has already put its Pid into a scope, so it cannot be
// replaced then).
//
// Idle inits live in the daemon's cgroup until claimed (they count against
// its TasksMax and MemoryMax), and each holds two descriptors in the daemon.
//
// A Pool is safe for concurrent use. The zero Pool and a nil *Pool are
// valid and disabled: Start is then exactly Start.
type Pool struct {
	size int
	// mounts is the daemon's /proc/self/mountinfo: poll reports POLLPRI
	// once after each change of its mount table. A raw descriptor, not an
	// *os.File: the runtime's netpoller would poll it too (epoll), and
	// each poll consumes the change.
	mounts int

	mu        sync.Mutex
	idle      []*pooledInit // oldest first
	gen       uint64        // bumped whenever the daemon's mount table changed
	closed    bool
	refilling bool
	inflight  int           // calls started by Start whose process is not reaped yet
	short     time.Time     // when the pool last went below size (zero: full)
	failures  int           // inits that could not be used since the last claim (failedLocked)
	failedAt  time.Time     // when the last failure was
	timer     *time.Timer   // a pending kick (refill delayed or backing off)
	closing   chan struct{} // closed by Close
	// wg counts the refill goroutine, the watchers and discards in progress;
	// Close waits for it.
	wg sync.WaitGroup
}

// pooledInit is an idle init.
type pooledInit struct {
	c     *Child
	specW *os.File      // write end of its spec pipe
	gen   uint64        // Pool.gen when it was started
	out   chan struct{} // closed when it leaves the idle list
}

// NewPool returns a pool that keeps size inits ready (0: none; the daemon
// should use DefaultPoolSize) and starts filling it in the background. If
// the daemon's mount table cannot be watched, the pool is disabled (a
// stale init could be handed out unnoticed). Close it when done.
func NewPool(size int) *Pool {
	p := &Pool{closing: make(chan struct{})}
	if size <= 0 {
		return p
	}
	fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return p
	}
	p.size, p.mounts = size, fd
	p.mu.Lock()
	p.kickLocked()
	p.mu.Unlock()
	return p
}

// Start is Start (same Child, same errors, same guarantees), taking an
// idle init from the pool when there is one that fits: spec.Network is
// false and the init is not stale. Otherwise, and whenever handing over to
// an idle init fails, it starts a fresh one. It never waits for the pool;
// refills run in the background, one at a time.
func (p *Pool) Start(spec *Spec, stdin, stdout, stderr *os.File) (*Child, error) {
	s, data, err := prepare(spec)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return start(s, data, stdin, stdout, stderr)
	}
	var c *Child
	if !s.Network {
		c = p.claim(s, data, stdin, stdout, stderr)
	}
	if c == nil {
		if c, err = start(s, data, stdin, stdout, stderr); err != nil {
			return nil, err
		}
	}
	p.track(c)
	return c, nil
}

// refillDelay bounds how long a refill waits for the calls in flight to
// end. Starting an init costs about 20 ms of CPU (the re-exec); on a small
// machine that slows down a call running at the same time (measured on 2
// CPUs: a pooled `true` took 18 ms instead of 9), so the pool refills when
// no call started through it is running, or at the latest this long after
// it went short (so that a steady stream of calls cannot starve it).
const refillDelay = 200 * time.Millisecond

// track counts c as a call in flight until its process is reaped.
func (p *Pool) track(c *Child) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.size == 0 {
		return
	}
	p.inflight++
	c.onExit = func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.inflight--
		p.kickLocked()
	}
}

// Close kills the idle inits and waits until they and any init being
// started for the pool are reaped. Children already handed out are not
// affected. Start after Close starts fresh inits.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	wasClosed := p.closed
	p.closed = true
	if !wasClosed && p.closing != nil {
		close(p.closing)
	}
	idle := p.idle
	p.idle = nil
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	for _, e := range idle {
		close(e.out)
	}
	p.mu.Unlock()
	for _, e := range idle {
		e.discard()
	}
	p.wg.Wait()
	if !wasClosed && p.size > 0 {
		unix.Close(p.mounts)
	}
}

// Reserve takes an idle init for a call in workspace whose spec is not
// known yet, hands it the call's stdio, and returns it, or nil when none
// is idle (or p is nil or disabled): the caller then uses Start once the
// spec is known. The init waits for its spec (Child.Send); meanwhile the
// caller can do its own work for Child.Pid() (the systemd scope) and for
// the spec. A reserved Child that is not sent a spec must be killed and
// waited for. A spec with Network true cannot be sent to it (pooled inits
// have a network namespace of their own).
func (p *Pool) Reserve(workspace string, stdin, stdout, stderr *os.File) *Child {
	if p == nil {
		return nil
	}
	if !filepath.IsAbs(workspace) {
		return nil // Start refuses it with the reason
	}
	c := p.claim(&Spec{Workspace: filepath.Clean(workspace)}, nil, stdin, stdout, stderr)
	if c != nil {
		p.track(c)
	}
	return c
}

// claim takes an idle init and hands it the call, or returns nil. With
// nil data the spec is not sent: the Child is reserved (Reserve), and
// Send sends it.
func (p *Pool) claim(s *Spec, data []byte, stdin, stdout, stderr *os.File) *Child {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.size == 0 {
		return nil
	}
	defer p.kickLocked()
	p.dropStaleLocked()
	for len(p.idle) > 0 {
		e := p.idle[0]
		p.idle = p.idle[1:]
		close(e.out)
		p.noteShortLocked()
		if e.dead() {
			p.diedLocked(e)
			p.discardLocked(e)
			continue
		}
		// Hand over without the lock: the checks and sendmsg take
		// microseconds, but a concurrent claim need not wait for them.
		// The WaitGroup token keeps Close from returning meanwhile.
		p.wg.Add(1)
		p.mu.Unlock()
		err := errStale
		if e.workspaceVisible(s.Workspace) {
			err = e.handOver(s.Workspace, data, stdin, stdout, stderr)
		}
		p.mu.Lock()
		if err == nil {
			p.failures = 0
			p.wg.Done()
			return e.c
		}
		p.discardLocked(e)
		p.wg.Done()
		if p.closed {
			return nil
		}
		if err == errStale {
			// Every init started before this one is stale too: do what a
			// mount-table change does, and start this call fresh. Counted
			// as a failure, so that a workspace that never looks the same
			// in a copy of the namespace (where the mount-table check saw
			// no change) slows the refills down instead of wasting an
			// init on every call.
			p.gen++
			p.dropStaleLocked()
			p.failedLocked()
			return nil
		}
		// The init died meanwhile (sendmsg: EPIPE): try the next one.
	}
	return nil
}

// diedLocked counts an init that died while idle, after it was up. (One that
// dies before it is up is counted by refill.)
func (p *Pool) diedLocked(e *pooledInit) {
	select {
	case <-e.c.parkedc:
		p.failedLocked()
	default:
	}
}

var errStale = errors.New("stale pooled init")

// dropStaleLocked discards the idle inits started before the daemon's mount
// table last changed.
func (p *Pool) dropStaleLocked() {
	if p.mountsChangedLocked() {
		p.gen++
	}
	keep := p.idle[:0]
	for _, e := range p.idle {
		if e.gen == p.gen {
			keep = append(keep, e)
			continue
		}
		close(e.out)
		p.discardLocked(e)
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.noteShortLocked()
}

// noteShortLocked records when the pool went below its size.
func (p *Pool) noteShortLocked() {
	if len(p.idle) < p.size && p.short.IsZero() {
		p.short = time.Now()
	}
}

// mountsChangedLocked says whether the daemon's mount table changed since
// the last call (the kernel reports it once per change, as POLLPRI|POLLERR
// on mountinfo). An error counts as a change.
func (p *Pool) mountsChangedLocked() bool {
	fds := []unix.PollFd{{Fd: int32(p.mounts), Events: unix.POLLPRI}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return true
		}
		return n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR|unix.POLLNVAL) != 0
	}
}

// discardLocked kills and reaps e in the background.
func (p *Pool) discardLocked(e *pooledInit) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		e.discard()
	}()
}

// kickLocked starts the refill goroutine if the pool is short, none runs,
// and it is time (refillDue); if it is not time yet, it sets a timer.
func (p *Pool) kickLocked() {
	if p.closed || p.size == 0 || p.refilling || len(p.idle) >= p.size {
		return
	}
	at := p.refillDue()
	if wait := time.Until(at); wait > 0 {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(wait, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.timer = nil
			p.kickLocked()
		})
		return
	}
	p.refilling = true
	p.wg.Add(1)
	go p.refill()
}

// refillDue is when the next init may be started: not while calls are in
// flight (up to refillDelay after the pool went short), and, after inits
// died before they were claimed (the binary may not start at all: an
// upgrade in progress, a broken environment), only after a back-off.
func (p *Pool) refillDue() time.Time {
	var at time.Time
	if p.inflight > 0 && !p.short.IsZero() {
		at = p.short.Add(refillDelay)
	}
	if p.failures > 0 {
		backoff := min(100*time.Millisecond<<min(p.failures-1, 10), 30*time.Second)
		if t := p.failedAt.Add(backoff); t.After(at) {
			at = t
		}
	}
	return at
}

// failedLocked counts an init that could not be used: it did not start,
// died before it was claimed, or was stale when the mount table said it was
// not. A successful claim resets the count.
func (p *Pool) failedLocked() {
	p.failures++
	p.failedAt = time.Now()
}

// parkTimeout bounds how long refill waits for a new init to come up before
// it starts the next one anyway.
const parkTimeout = 10 * time.Second

// refill starts inits until the pool is full, one at a time: each new init
// is waited for until it is up (parked) before the next starts, so that
// refilling takes at most one CPU from the calls.
func (p *Pool) refill() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.size || time.Now().Before(p.refillDue()) {
			p.refilling = false
			if len(p.idle) >= p.size {
				p.short = time.Time{}
			}
			p.kickLocked() // sets the timer if it is not time yet
			p.mu.Unlock()
			return
		}
		if p.mountsChangedLocked() {
			p.gen++
		}
		gen := p.gen
		p.mu.Unlock()

		var e *pooledInit
		var err error
		onSpawnerThread(func() { e, err = spawnPooled() })

		p.mu.Lock()
		if err != nil {
			p.failedLocked()
			p.refilling = false
			p.kickLocked() // sets the timer for the retry
			p.mu.Unlock()
			return
		}
		e.gen = gen
		if p.closed {
			p.refilling = false
			p.mu.Unlock()
			e.discard()
			return
		}
		p.idle = append(p.idle, e)
		p.wg.Add(1)
		go p.watch(e)
		p.mu.Unlock()

		t := time.NewTimer(parkTimeout)
		select {
		case <-e.c.parkedc:
		case <-e.c.donec:
		case <-t.C:
		case <-p.closing:
		}
		t.Stop()
		p.mu.Lock()
		select {
		case <-e.c.parkedc:
		default:
			select {
			case <-e.c.donec:
				// It died before it was up: stop, and retry later.
				p.failedLocked()
				p.refilling = false
				p.kickLocked()
				p.mu.Unlock()
				return
			default: // slow to come up: go on with the next one anyway
			}
		}
		p.mu.Unlock()
	}
}

// watch reaps e if it dies while idle.
func (p *Pool) watch(e *pooledInit) {
	defer p.wg.Done()
	select {
	case <-e.out:
		return
	case <-e.c.donec:
	case <-e.c.readyc: // an error report: it is about to exit
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == e {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			close(e.out)
			p.noteShortLocked()
			p.diedLocked(e)
			p.discardLocked(e)
			p.kickLocked()
			return
		}
	}
}

// spawnPooled starts an init for the pool. It must run on the spawner
// thread (Pdeathsig).
func spawnPooled() (*pooledInit, error) {
	// Descriptors as Start gives them to a test probe (fdExe included: it is
	// close-on-exec by the time an exec-mode command runs); stdio /dev/null
	// until the claim.
	c, specW, err := launch(launchOpts{exe: true, pooled: true})
	if err != nil {
		return nil, err
	}
	c.pooled = true
	return &pooledInit{c: c, specW: specW, out: make(chan struct{})}, nil
}

// dead says whether e exited or reported an error while idle.
func (e *pooledInit) dead() bool {
	select {
	case <-e.c.donec:
		return true
	case <-e.c.readyc:
		return true
	default:
		return false
	}
}

// discard kills an idle init and reaps it.
func (e *pooledInit) discard() {
	e.specW.Close()
	e.c.Kill()
	e.c.Wait()
}

// workspaceVisible checks that the workspace is, in e's mount namespace,
// the directory it is in the daemon's: false means e is stale (a mount made
// since it started). If the workspace is missing on the host too, or e's
// view cannot be inspected, it answers true: the init then reports the
// error (or succeeds) exactly as a fresh one would.
func (e *pooledInit) workspaceVisible(ws string) bool {
	var host, in unix.Stat_t
	if unix.Stat(ws, &host) != nil {
		return true
	}
	err := unix.Stat("/proc/"+strconv.Itoa(e.c.Pid())+"/root"+ws, &in)
	if err == unix.EACCES || err == unix.EPERM {
		return true
	}
	return err == nil && in.Dev == host.Dev && in.Ino == host.Ino
}

// handOver claims e for a call: it passes the call's stdio (SCM_RIGHTS) and
// then the spec. An error means e got nothing usable and must be discarded.
func (e *pooledInit) handOver(workspace string, data []byte, stdin, stdout, stderr *os.File) error {
	msg := []byte{claimByte}
	var fds []int
	for i, f := range []*os.File{stdin, stdout, stderr} {
		if f != nil {
			msg = append(msg, byte(i))
			// Fd puts the file in blocking mode, as os/exec does for the
			// files it passes to Start's init: the command gets the same
			// descriptors either way.
			fds = append(fds, int(f.Fd()))
		}
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	rc, err := e.c.sync.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), msg, oob, nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	runtime.KeepAlive(stdin)
	runtime.KeepAlive(stdout)
	runtime.KeepAlive(stderr)
	if err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	// The descriptors are in the init's socket now; from here on the init
	// owns the call, and a failure is reported through the Child.
	if data == nil {
		e.c.pending = &pendingSpec{w: e.specW, workspace: workspace}
		return nil
	}
	sendSpec(e.specW, data)
	return nil
}

// sendSpec writes a pooled init's spec to its pipe, in the background (the
// init reads it as it can), and closes the pipe.
func sendSpec(w *os.File, data []byte) {
	go func() {
		writeAll(w, data)
		w.Close()
	}()
}

// pendingSpec is what a reserved Child (Pool.Reserve) still needs: its
// spec pipe, and the workspace the claim checked.
type pendingSpec struct {
	w         *os.File
	workspace string
}

// Send sends a reserved Child (Pool.Reserve) its spec, once. The spec's
// workspace must be the one it was reserved for: the claim checked that
// the init sees that one as the daemon does. On error the Child is left as
// it was: kill it and wait for it.
func (c *Child) Send(spec *Spec) error {
	c.mu.Lock()
	pend := c.pending
	c.pending = nil
	c.mu.Unlock()
	if pend == nil {
		return &SetupError{Step: StepValidate, Msg: "Send: the sandbox was not reserved, or has its spec already"}
	}
	s, data, err := prepare(spec)
	switch {
	case err != nil:
	case s.Workspace != pend.workspace:
		err = &SetupError{Step: StepValidate, Msg: "Send: the spec's workspace " + s.Workspace + " is not the one the sandbox was reserved for, " + pend.workspace}
	case s.Network:
		err = &SetupError{Step: StepValidate, Msg: "Send: a pooled sandbox has a network namespace of its own; a spec with the host network needs Start"}
	}
	if err != nil {
		pend.w.Close() // the init reads EOF and exits: nothing runs
		return err
	}
	sendSpec(pend.w, data)
	return nil
}

// spawner is the goroutine, locked to its OS thread for good, that starts
// every pooled init. Pdeathsig is sent when the thread that started a
// child exits, not the process; a thread of the Go runtime exits when a
// goroutine that locked it returns without unlocking. This one never
// returns, so pooled inits (and the commands they become) get SIGKILL only
// when the daemon dies. It is shared by all pools and lives as long as the
// process.
var spawner struct {
	once sync.Once
	reqs chan func()
}

func onSpawnerThread(f func()) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
}
