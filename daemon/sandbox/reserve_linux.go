package sandbox

import (
	"context"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/ns"
)

// reservation is a tool call's sandbox init, claimed from the pool with the
// call's stdio before its spec is known, and its scope, whose start job
// runs meanwhile (runner.Reserver): the daemon's own work before a call
// (the shield, the home view) and the user manager's work for the scope
// then overlap, instead of one waiting for the other.
type reservation struct {
	r     *Runner
	early runner.Spec // what it was reserved for
	child *ns.Child
	// The daemon's ends of the call's stdio: the operation is written to
	// stdinW once Run has it; out and err are read as in Run.
	stdinW, outR, errR *os.File
	scope              chan scoped // the scope's start, once

	mu    sync.Mutex
	taken bool // by Run, which then owns all of it
	ended bool // Cancel ran
}

type scoped struct {
	sc  *scope.Scope
	err error
}

// Reserve implements runner.Reserver, for tool calls (runner.Tool) without
// the host network, when the pool has an init ready; nil otherwise. The
// scope's start job is sent at once; its limits and time limit are early's,
// and Run takes the reservation only for a Spec with the same.
func (r *Runner) Reserve(ctx context.Context, early runner.Spec) runner.Reservation {
	if r.Pool == nil || early.Network || early.Mode != runner.Tool {
		return nil
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{stdinR, stdinW, outR, outW} {
			f.Close()
		}
		return nil
	}
	unix.FcntlInt(outW.Fd(), unix.F_SETPIPE_SZ, 1<<20) // as in Run
	child := r.Pool.Reserve(early.Workspace, stdinR, outW, errW)
	// The init has its own copies now (or there is no init).
	for _, f := range []*os.File{stdinR, outW, errW} {
		f.Close()
	}
	if child == nil {
		for _, f := range []*os.File{stdinW, outR, errR} {
			f.Close()
		}
		return nil
	}
	res := &reservation{r: r, early: early, child: child, stdinW: stdinW, outR: outR, errR: errR,
		scope: make(chan scoped, 1)}
	if r.Scopes == nil {
		res.scope <- scoped{}
		return res
	}
	go func() {
		sc, err := r.Scopes.Start(ctx, r.scopeSpec(early, child.Pid()))
		res.scope <- scoped{sc, err}
	}()
	return res
}

// scopeSpec is the scope of a call of s whose sandbox init is pid.
func (r *Runner) scopeSpec(s runner.Spec, pid int) scope.Spec {
	return scope.Spec{
		Tool:            s.Tool,
		ID:              strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(r.seq.Add(1), 10),
		PID:             pid,
		MemoryMax:       s.Limits.MemoryMax,
		TasksMax:        s.Limits.TasksMax,
		CPUQuotaPercent: s.Limits.CPUQuotaPercent,
		RuntimeMax:      s.Timeout,
	}
}

// take gives the reservation to Run for s, if s is what it was reserved
// for (the same tool, workspace, limits and time limit: the scope has
// them already) and needs what it has (the operation on stdin, stdout and
// stderr apart, no host network). false: Run starts afresh, and the
// reservation is cancelled.
func (res *reservation) take(r *Runner, s runner.Spec) bool {
	e := res.early
	ok := res.r == r && s.Mode == runner.Tool && !s.Network && s.Tool == e.Tool && s.Workspace == e.Workspace &&
		s.Limits == e.Limits && s.Timeout == e.Timeout && s.Input == nil && s.OutputFile == nil && s.Stderr != nil
	res.mu.Lock()
	defer res.mu.Unlock()
	if !ok || res.taken || res.ended {
		return false
	}
	res.taken = true
	return true
}

// Cancel implements runner.Reservation: unless Run took it, the init is
// killed (it ran nothing: it was waiting for its spec) and its scope, if it
// was made, stopped, in the background.
func (res *reservation) Cancel() {
	res.mu.Lock()
	if res.taken || res.ended {
		res.mu.Unlock()
		return
	}
	res.ended = true
	res.mu.Unlock()
	for _, f := range []*os.File{res.stdinW, res.outR, res.errR} {
		f.Close()
	}
	res.child.Kill()
	go func() {
		res.child.Wait()
		if s := <-res.scope; s.sc != nil {
			ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
			defer cancel()
			if err := s.sc.Stop(ctx); err != nil {
				res.r.log().Warn("stop scope", "scope", s.sc.Name(), "err", err)
			}
		}
	}()
}
