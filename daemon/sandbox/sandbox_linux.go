// Package sandbox is the runner every tool call goes through: contextd re-executed
// as a namespace init (package ns) under the tool's seccomp profile (package
// profiles), placed into its own transient systemd scope (package daemon/scope)
// while it sets itself up, and released to exec only once the scope holds it.
package sandbox

import (
	"encoding/json"
	"net"

	"golang.org/x/sys/unix"

	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/internal/drain"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/sandboxinfo"
)

// Runner runs each call in a fresh sandbox. It implements runner.Runner.
type Runner struct {
	// Scopes creates the call's systemd scope. Nil: no user manager is reachable;
	// calls still run in namespaces under seccomp, with rlimits, and every
	// result says the scope layer was missing (ScopeNote).
	Scopes *scope.Manager
	// ScopeNote says why Scopes is nil.
	ScopeNote string
	// Pool holds sandbox inits started ahead of calls, so a call does not wait
	// for contextd to re-execute itself. Nil: every call starts its own.
	Pool *ns.Pool
	Log  *slog.Logger

	seq      atomic.Uint64
	profiles profiles.Cache
}

// stopTimeout bounds stopping a scope; the call's own context may already be
// over when it is needed.
const stopTimeout = 5 * time.Second

// drainGrace is how long the output pipes may stay empty and open after the
// sandbox ended before the call stops reading them (package drain: what is
// already in them is read however long the caller takes).
const drainGrace = 2 * time.Second

// Run implements runner.Runner.
func (r *Runner) Run(ctx context.Context, s runner.Spec) (runner.Exit, error) {
	var ex runner.Exit
	t0 := time.Now()
	var tStarted, tScoped, tReleased, tEnded time.Duration
	var setup map[string]float64 // the init's own, from its claim
	defer func() {
		r.log().Debug("sandbox stages", "tool", s.Tool, "start_ms", ms(tStarted), "scope_ms", ms(tScoped),
			"released_ms", ms(tReleased), "ended_ms", ms(tEnded), "total_ms", ms(time.Since(t0)), "init_setup", setup)
	}()
	if log := r.log(); log.Enabled(ctx, slog.LevelDebug) {
		// What the sandbox shows, exactly as asked (contextd sandbox show
		// prints the same; an e2e test compares the two).
		if v, err := json.Marshal(s.View()); err == nil {
			log.Debug("sandbox view", "tool", s.Tool, "view", string(v))
		}
	}
	if s.Reserved != nil {
		// Whatever way Run ends, a reservation it did not take is ended
		// (a no-op once taken: Run owns it then).
		defer s.Reserved.Cancel()
	}
	profJSON, source, err := r.profiles.JSON(s.Tool)
	if err != nil {
		// Fail closed: no profile, no call.
		return ex, fmt.Errorf("seccomp profile for %s: %v: %w", s.Tool, err, catalog.ErrSandbox)
	}
	if len(s.Listen) > 0 && s.Serve == nil {
		return ex, fmt.Errorf("sandbox: listen addresses without anyone to serve them: %w", catalog.ErrSandbox)
	}
	sb, err := r.launch(ctx, s, r.nsSpec(s, profJSON))
	if err != nil {
		return ex, err
	}
	defer sb.closePipes()
	tStarted = sb.started.Sub(t0)
	ex.Layers = sandboxinfo.Layers{Namespaces: true, Seccomp: source, Network: s.Network}
	switch {
	case sb.scopeErr != nil:
		// A user manager that is there but refuses the scope is a failed
		// layer, not a missing one: refuse the call.
		sb.child.Kill()
		sb.child.Wait()
		return ex, fmt.Errorf("systemd scope for %s: %v: %w", s.Tool, sb.scopeErr, catalog.ErrSandbox)
	case sb.sc != nil:
		ex.Layers.Scope = sb.sc.Name()
	default:
		ex.Layers.ScopeNote = r.ScopeNote
	}

	tScoped = time.Since(t0)
	child := sb.child
	if err := child.Ready(); err != nil {
		child.Kill()
		child.Wait()
		sb.stopScope(ctx)
		return ex, setupError(s, err)
	}
	if len(s.Listen) > 0 {
		ls := child.Listeners()
		nls := make([]net.Listener, len(ls))
		for i, l := range ls {
			nls[i] = l.Listener
		}
		// Closed when the call ends, whatever way it ends; connections
		// made through them are the server's to end.
		defer func() {
			for _, l := range nls {
				l.Close()
			}
		}()
		s.Serve(nls)
	}
	if err := child.Release(); err != nil {
		child.Kill()
		child.Wait()
		sb.stopScope(ctx)
		return ex, setupError(s, err)
	}
	setup = child.SetupTimes()
	tReleased = time.Since(t0)
	if s.Started != nil {
		s.Started(ex.Layers)
	}
	code, err := sb.await(ctx, s, &ex)
	if !sb.ended.IsZero() {
		tEnded = sb.ended.Sub(t0)
	}
	if err != nil {
		return ex, err
	}
	ex.Code = code
	return ex, nil
}

// nsSpec is the sandbox s asks for, with profJSON as its seccomp profile.
func (r *Runner) nsSpec(s runner.Spec, profJSON []byte) *ns.Spec {
	spec := &ns.Spec{
		Env:       s.Env,
		Dir:       s.Dir,
		Workspace: s.Workspace,
		Home:      s.Home,
		ReadWrite: s.ReadWrite,
		Pins:      s.Pins,
		Network:   s.Network,
		Listen:    s.Listen,
		Seccomp:   profJSON,
	}
	if len(s.ReadOnly) > 0 {
		spec.ReadOnly = append(append([]string{}, ns.DefaultReadOnly...), s.ReadOnly...)
	}
	spec.HomeDir, spec.Masks = s.HomeDir, s.Masks
	for _, b := range s.Binds {
		spec.Binds = append(spec.Binds, ns.Bind{Source: b.Source, Target: b.Target})
	}
	for _, o := range s.Overlays {
		spec.Overlays = append(spec.Overlays, ns.Overlay{Lower: o.Lower, Upper: o.Upper, Work: o.Work})
	}
	switch s.Mode {
	case runner.Exec:
		spec.Mode, spec.Argv = ns.ModeExec, append([]string{s.Path}, s.Args[1:]...)
	case runner.Tool:
		// The tool runs in the init itself (no second start of the binary).
		spec.Mode, spec.Argv = ns.ModeFunc, s.Args
	}
	if r.Scopes == nil {
		// Without a scope nothing else bounds the number of processes.
		spec.Rlimits = []ns.Rlimit{{Resource: "NPROC", Soft: tasksMax(s.Limits), Hard: tasksMax(s.Limits)}}
	}
	return spec
}

// launched is a call's sandbox once started: its init, the daemon's ends
// of its output pipes (nil where the caller reads its own), and its scope
// or why there is none.
type launched struct {
	child      *ns.Child
	outR, errR *os.File
	sc         *scope.Scope
	scopeErr   error
	started    time.Time // when the init had its spec
	ended      time.Time // when the init said "ended" (zero: it did not)
	log        *slog.Logger
}

// launch starts the sandbox of s: the reserved one (Reserve) when s has
// one Run can take, sending it its spec and operation; else a fresh (or
// pooled) one, with its scope made while it sets up. A scope that could
// not be made is in scopeErr, for Run to refuse the call with.
func (r *Runner) launch(ctx context.Context, s runner.Spec, spec *ns.Spec) (*launched, error) {
	res, _ := s.Reserved.(*reservation)
	if res != nil && !res.take(r, s) {
		res.Cancel()
		res = nil
	}
	if res == nil {
		child, outR, errR, err := r.start(spec, s)
		if err != nil {
			return nil, err
		}
		sb := &launched{child: child, outR: outR, errR: errR, started: time.Now(), log: r.log()}
		// The scope is created while the child builds its namespaces:
		// both take a few milliseconds, so they overlap. The child execs
		// only after Release.
		if r.Scopes != nil {
			sb.sc, sb.scopeErr = r.Scopes.Start(ctx, r.scopeSpec(s, child.Pid()))
		}
		return sb, nil
	}
	// Reserved: the init has the call's stdio and waits for its spec; the
	// scope's start job went out meanwhile.
	sb := &launched{child: res.child, outR: res.outR, errR: res.errR, log: r.log()}
	go func(w *os.File, data []byte) {
		w.Write(data) // EPIPE if the init is gone: no concern here
		w.Close()
	}(res.stdinW, s.Stdin)
	if err := sb.child.Send(spec); err != nil {
		sb.child.Kill()
		sb.child.Wait()
		sb.closePipes()
		sb.sc = (<-res.scope).sc
		sb.stopScope(ctx)
		return nil, fmt.Errorf("start sandbox: %v: %w", err, catalog.ErrSandbox)
	}
	sb.started = time.Now()
	got := <-res.scope
	sb.sc, sb.scopeErr = got.sc, got.err
	return sb, nil
}

func (sb *launched) closePipes() {
	for _, f := range []*os.File{sb.outR, sb.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// stopScope stops the call's scope, if it has one; the call's own context
// may already be over when it is needed.
func (sb *launched) stopScope(ctx context.Context) {
	if sb.sc == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if err := sb.sc.Stop(sctx); err != nil {
		sb.log.Warn("stop scope", "scope", sb.sc.Name(), "err", err)
	}
}

// await copies the released sandbox's output to s.Output and s.Stderr and
// waits for its end: the init's "ended" (Exit.Gone follows later), its exit,
// s.Timeout or ctx. It sets ex's TimedOut, Canceled and Gone, and returns
// the exit code.
func (sb *launched) await(ctx context.Context, s runner.Spec, ex *runner.Exit) (int, error) {
	var copies sync.WaitGroup
	var drains []*drain.Reader
	copyOut := func(dst io.Writer, src *drain.Reader) {
		defer copies.Done()
		// Large reads: a tool's output arrives in fewer, larger writes to
		// dst (the frame decoder, the response pipe).
		buf := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(buf)
		io.CopyBuffer(dst, onlyReader{src}, *buf)
	}
	for _, p := range []struct {
		dst io.Writer
		src *os.File
	}{{s.Output, sb.outR}, {s.Stderr, sb.errR}} {
		if p.src != nil {
			d := drain.New(p.src, drainGrace)
			drains = append(drains, d)
			copies.Add(1)
			go copyOut(p.dst, d)
		}
	}

	type waited struct {
		code int
		err  error
	}
	child := sb.child
	done := make(chan waited, 1)
	gone := make(chan struct{})
	ex.Gone = gone
	go func() {
		code, _, err := child.Wait()
		done <- waited{code, err}
		close(gone)
	}()
	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var w waited
	select {
	case w = <-done:
	case <-child.Ended():
		// A tool's init reported that nothing else of the sandbox is
		// left: the call is over, though its namespaces are still being
		// torn down (Exit.Gone).
		w = waited{code: child.EndCode()}
		sb.ended = time.Now()
	case <-timeout:
		ex.TimedOut = true
	case <-ctx.Done():
		ex.Canceled = true
	}
	if ex.TimedOut || ex.Canceled {
		// Killing the namespace's init ends every process of its pid namespace;
		// stopping the scope also catches anything that got out of it.
		child.Kill()
		sb.stopScope(ctx)
		w = <-done
	}
	for _, d := range drains {
		d.Ended()
	}
	copies.Wait()

	if w.err != nil && !ex.TimedOut && !ex.Canceled {
		var se *ns.SetupError
		if errors.As(w.err, &se) {
			return 0, setupError(s, se)
		}
		return 0, fmt.Errorf("sandbox: %v: %w", w.err, catalog.ErrSandbox)
	}
	return w.code, nil
}

// start starts a fresh sandbox (or a pooled one, given its spec at once)
// with the call's stdio: stdin carries Spec.Stdin (or Input); stdout, and
// stderr unless asked apart, come back on pipes read by Run (outR, errR;
// nil where the caller reads its own).
func (r *Runner) start(spec *ns.Spec, s runner.Spec) (child *ns.Child, outR, errR *os.File, err error) {
	var stdin *os.File
	if f, ok := s.Input.(*os.File); ok {
		// A pipe's read end: the process reads it directly, with no copy
		// in between (an MCP server's every message crosses here).
		stdin = f
	} else if s.Input != nil {
		stdin, err = streamFile(s.Input)
	} else {
		stdin, err = inputFile(s.Stdin)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	defer stdin.Close()
	var outW *os.File
	if s.OutputFile != nil {
		// The caller reads the process's stdout itself, from its own pipe.
		outW = s.OutputFile
	} else {
		if outR, outW, err = os.Pipe(); err != nil {
			return nil, nil, nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
		}
		// A larger pipe lets a tool with a large output write it in fewer
		// rounds of wake-ups (the default is 64 KiB). Best effort: the limit
		// for unprivileged users (/proc/sys/fs/pipe-max-size) may be lower.
		unix.FcntlInt(outW.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
	errW := outW
	if s.Stderr != nil {
		if errR, errW, err = os.Pipe(); err != nil {
			outW.Close()
			if outR != nil {
				outR.Close()
			}
			return nil, nil, nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
		}
	}
	child, err = r.Pool.Start(spec, stdin, outW, errW) // a nil Pool starts a fresh init
	outW.Close()
	if errW != outW {
		errW.Close()
	}
	if err != nil {
		for _, f := range []*os.File{outR, errR} {
			if f != nil {
				f.Close()
			}
		}
		return nil, nil, nil, fmt.Errorf("start sandbox: %v: %w", err, catalog.ErrSandbox)
	}
	return child, outR, errR, nil
}

// setupError is the error of a sandbox whose setup failed: a
// runner.StartError when the sandbox was sound but an Exec spec's program
// could not be found or executed in it (what the caller can fix: not there
// as the sandbox shows it, not executable, not a program), else a failed
// layer, refused as such (fail closed).
func setupError(s runner.Spec, err error) error {
	var se *ns.SetupError
	if s.Mode == runner.Exec && errors.As(err, &se) &&
		(se.Step == ns.StepResolve || se.Step == ns.StepExec && se.Syscall == "execve") {
		switch se.Errno {
		case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EACCES, unix.ENOEXEC:
			return &runner.StartError{Path: s.Path, Errno: se.Errno, Detail: se.Msg, Exec: se.Step == ns.StepExec}
		}
	}
	return fmt.Errorf("sandbox setup: %v: %w", err, catalog.ErrSandbox)
}

// log is r.Log, or a logger that discards when none was given (contextd
// doctor and status run a sandbox without the daemon's logger).
func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func tasksMax(l runner.Limits) uint64 {
	if l.TasksMax == 0 {
		return scope.DefaultTasksMax
	}
	return l.TasksMax
}

// inputFile returns a file to read data from: a pipe filled by a goroutine, or
// /dev/null when there is no data.
func inputFile(data []byte) (*os.File, error) {
	if len(data) == 0 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("open %s: %v: %w", os.DevNull, err, catalog.ErrSandbox)
		}
		return f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
	}
	go func() {
		// The reader may exit without reading it all; the write then fails
		// with EPIPE, which is no concern of ours.
		w.Write(data)
		w.Close()
	}()
	return r, nil
}

// streamFile returns the read end of a pipe that a goroutine fills from r
// until r ends or the process stops reading.
func streamFile(r io.Reader) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %v: %w", err, catalog.ErrSandbox)
	}
	go func() {
		io.CopyBuffer(pw, onlyReader{r}, make([]byte, 64<<10))
		pw.Close()
	}()
	return pr, nil
}

// copyBufs recycles the output copy buffers: a fresh 256 KiB costs 64 page
// faults on first touch, which on a virtual machine is more than copying a
// megabyte through it.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// onlyReader hides *os.File's WriterTo, which io.CopyBuffer would use
// instead of the buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
