package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/plugins/pluginpolicy"
	"github.com/contextd/contextd/daemon/plugins/pluginrun"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
	"github.com/contextd/contextd/wire/toolplugin"
)

// startTimeout bounds an instance's start: its sandbox and the handshake.
const startTimeout = 20 * time.Second

// poolKey names an instance: a tool, at the version the lock pins, serving
// one workspace.
type poolKey struct{ workspace, tool, checksum string }

// slot is a place in the pool: the calls that find it while its instance
// starts wait on ready, so that concurrent first calls start one instance.
type slot struct {
	ready chan struct{} // closed once the start ended
	inst  *instance
	err   error
}

// failedStart is a start that failed, kept for Options.RetryStart: a
// plugin that cannot start (or never completes its handshake) must not get
// a sandbox made, and held for the start timeout, for every call.
type failedStart struct {
	at  time.Time
	err error
}

// stop ends the slot's instance, once it started.
func (s *slot) stop(why string) {
	<-s.ready
	if s.inst != nil {
		s.inst.kill(why)
	}
}

// instance is one running plugin in its sandbox.
type instance struct {
	rt      *Runtime
	key     poolKey
	client  *toolplugin.Client
	starter *pluginrun.Starter
	env     *sandboxenv.Env
	scratch string
	started time.Time

	// guard is the git guard's snapshot of a read-write workspace, taken
	// before the plugin ran: after each call what it changed of what git
	// runs is put back (guardMu: one check at a time). Nil otherwise.
	guard   *gitguard.Snapshot
	guardMu sync.Mutex

	mu       sync.Mutex
	inflight int
	calls    int
	last     time.Time
	idle     *time.Timer
	stopped  bool
	why      string        // why it was stopped
	gone     chan struct{} // closed once kill has ended the sandbox
}

// get is the running instance of e for workspace, started when there is
// none (or the one there ended). note says, once, what happened to the
// instance a call before found ended.
func (r *Runtime) get(ctx context.Context, e *entry, workspace string) (inst *instance, note string, err error) {
	k := poolKey{workspace: workspace, tool: e.tool.Name, checksum: e.tool.Checksum}
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, "", fmt.Errorf("tool %s: %w", e.tool.Name, catalog.ErrShuttingDown)
		}
		s, mine := r.pool[k], false
		if s != nil {
			select {
			case <-s.ready:
				if s.err != nil || !s.inst.usable() {
					delete(r.pool, k)
					if s.inst != nil {
						note = s.inst.endedNote()
						go s.inst.kill("it ended")
					}
					s = nil
				}
			default:
			}
		}
		if s == nil {
			if f, ok := r.failed[k]; ok && time.Since(f.at) < r.opts.RetryStart {
				r.mu.Unlock()
				return nil, note, fmt.Errorf("%w (the start %s ago failed so; the next is tried %s after it)",
					f.err, time.Since(f.at).Round(time.Second), r.opts.RetryStart)
			}
			delete(r.failed, k)
			s, mine = &slot{ready: make(chan struct{})}, true
			r.pool[k] = s
		}
		r.mu.Unlock()
		if mine {
			s.inst, s.err = r.start(k, e)
			close(s.ready)
			if s.err != nil {
				r.mu.Lock()
				if r.pool[k] == s {
					delete(r.pool, k)
				}
				r.failed[k] = failedStart{at: time.Now(), err: s.err}
				r.mu.Unlock()
				return nil, note, s.err
			}
		} else {
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, note, context.Cause(ctx)
			}
			if s.err != nil {
				return nil, note, s.err
			}
		}
		if s.inst.acquire() {
			return s.inst, note, nil
		}
		// Stopped between the start and this call (idle, updated):
		// start another.
	}
}

// start runs a new instance of e for k's workspace.
func (r *Runtime) start(k poolKey, e *entry) (*instance, error) {
	t, m := e.tool, e.m
	if err := r.opts.Store.Verify(t); err != nil {
		return nil, err
	}
	if err := pluginpolicy.Of(&r.opts.Config.Plugins).Check(m); err != nil {
		return nil, fmt.Errorf("tool %s was approved for more than [plugins] allows now (install it again, or widen the configuration): %w", t.Name, err)
	}
	if err := os.MkdirAll(r.opts.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("tool %s: %v: %w", t.Name, err, catalog.ErrIO)
	}
	scratch, err := os.MkdirTemp(r.opts.RunDir, "s-")
	if err != nil {
		return nil, fmt.Errorf("tool %s: %v: %w", t.Name, err, catalog.ErrIO)
	}
	env, err := r.opts.Sandbox.Plugin(sandboxenv.PluginRequest{Name: t.Name, Workspace: k.workspace, Access: m.Permissions.Workspace,
		Scratch: scratch, Tree: r.opts.Store.Tree(t), ReadOnly: m.Permissions.ReadOnly, Egress: e.egress,
		Credentials: m.Permissions.Credentials, Vault: scrub.NewVault(),
		Limits: runner.Limits{MemoryMax: m.Permissions.Memory, TasksMax: m.Permissions.Tasks}})
	if err != nil {
		env.Release(nil)
		os.RemoveAll(scratch)
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	var guard *gitguard.Snapshot
	if m.Permissions.Workspace == toolmanifest.AccessReadWrite {
		// Before the plugin runs: the state every call is put back to.
		if guard, err = gitguard.TakeLayout(k.workspace, env.Git); err != nil {
			env.Release(nil)
			toolstore.RemoveTree(scratch)
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	argv := append([]string{filepath.Join(sandboxenv.ToolRoot, m.Run.Command[0])}, m.Run.Command[1:]...)
	dir := k.workspace
	if m.Permissions.Workspace == toolmanifest.AccessNone {
		dir = scratch
	}
	spec := runner.Spec{Tool: "plugin", Path: argv[0], Args: argv, Dir: dir, Env: env.Vars}
	env.Apply(&spec)
	st := pluginrun.New(r.opts.Runner, spec, toolplugin.Handshake.MagicCookieKey)
	client, err := toolplugin.Start(toolplugin.Config{StartTimeout: startTimeout,
		Sandboxed: &toolplugin.Sandboxed{RunnerFunc: st.RunnerFunc, SocketBase: r.opts.RunDir, Dial: st.Dial, Abort: st.Abort}})
	if err != nil {
		inst := &instance{rt: r, key: k, env: env, scratch: scratch, guard: guard}
		inst.afterCall()
		inst.releaseViews()
		return nil, fmt.Errorf("tool %s: %v: %w", t.Name, err, catalog.ErrPluginStart)
	}
	inst := &instance{rt: r, key: k, client: client, starter: st, env: env, scratch: scratch, guard: guard,
		started: time.Now(), gone: make(chan struct{})}
	r.log.Info("plugin tool started", "tool", t.Name, "workspace", k.workspace, "instance", inst.id(),
		"layers", fmt.Sprintf("%+v", st.Layers()))
	return inst, nil
}

// usable reports whether calls may still go to the instance.
func (i *instance) usable() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return !i.stopped && !i.client.Exited()
}

// acquire counts a call in, unless the instance is stopped.
func (i *instance) acquire() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return false
	}
	i.inflight++
	i.calls++
	if i.idle != nil {
		i.idle.Stop()
		i.idle = nil
	}
	return true
}

// release counts a call out; the last one out arms the idle stop.
func (i *instance) release() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.inflight--
	i.last = time.Now()
	if i.inflight == 0 && !i.stopped {
		i.idle = time.AfterFunc(i.rt.idleStop(), i.idleStop)
	}
}

// idleStop stops the instance if still no call came.
func (i *instance) idleStop() {
	r := i.rt
	r.mu.Lock()
	i.mu.Lock()
	idle := i.inflight == 0 && !i.stopped && time.Since(i.last) >= r.idleStop()
	if idle {
		if s := r.pool[i.key]; s != nil && s.inst == i {
			delete(r.pool, i.key)
		}
	}
	i.mu.Unlock()
	r.mu.Unlock()
	if idle {
		i.kill("idle for " + r.idleStop().String())
	}
}

// kill ends the instance with its whole sandbox and returns once it is
// gone, for every caller; the first reason given is kept.
func (i *instance) kill(why string) {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		<-i.gone
		return
	}
	i.stopped, i.why = true, why
	if i.idle != nil {
		i.idle.Stop()
	}
	i.mu.Unlock()
	defer close(i.gone)
	// Bounded: a plugin that withholds its answer to the graceful stop
	// has its sandbox ended (toolplugin.KillGrace).
	i.client.Kill()
	if ws, err := i.afterCall(); len(ws) > 0 || err != nil {
		i.rt.log.Warn("plugin tool: put back what it changed in the workspace", "tool", i.key.tool, "warnings", ws, "err", err)
	}
	i.releaseViews()
	i.rt.log.Info("plugin tool stopped", "tool", i.key.tool, "workspace", i.key.workspace, "instance", i.id(), "why", why, "calls", i.calls)
}

// releaseViews lets go of the instance's proxy, views and scratch, once no
// process of it is left.
func (i *instance) releaseViews() {
	if sum := i.env.Finish(); sum != nil && len(sum.Lines) > 0 {
		i.rt.log.Warn("plugin tool: egress refused", "tool", i.key.tool, "lines", sum.Lines)
	}
	i.guardMu.Lock()
	if i.guard != nil {
		i.guard.Close()
		i.guard = nil
	}
	i.guardMu.Unlock()
	i.env.Release(nil)
	if err := toolstore.RemoveTree(i.scratch); err != nil {
		i.rt.log.Warn("plugin tool: its scratch directory stays", "tool", i.key.tool, "err", err)
	}
}

// afterCall puts back what the instance changed, in a read-write
// workspace, of what the host runs on its own: git's entries (to their
// state before the plugin ran) and agent configuration created in nested
// directories (set aside). It returns what it did, for the call's result.
func (i *instance) afterCall() ([]string, error) {
	i.guardMu.Lock()
	defer i.guardMu.Unlock()
	var ws []string
	var err error
	if i.guard != nil {
		rep := i.guard.Recheck(gitguard.DefaultDir())
		ws, err = rep.Warnings(), rep.Err()
	}
	return append(ws, i.env.SetAside()...), err
}

// endedNote says what became of an instance a call found ended.
func (i *instance) endedNote() string {
	i.mu.Lock()
	why := i.why
	i.mu.Unlock()
	if why == "" {
		why = i.exitText()
	}
	return fmt.Sprintf("the previous instance of tool %s ended (%s); this call started a fresh one", i.key.tool, why)
}

// exitText says how the instance's process ended, as far as is known.
func (i *instance) exitText() string {
	ex, err, ok := i.starter.Ended()
	switch {
	case !ok:
		return "its connection broke"
	case err != nil:
		return err.Error()
	case ex.Code > 128:
		return fmt.Sprintf("killed by signal %d", ex.Code-128)
	}
	return fmt.Sprintf("exit status %d", ex.Code)
}

// id names the instance in logs and records: its scope.
func (i *instance) id() string {
	if l := i.starter.Layers(); l.Scope != "" {
		return l.Scope
	}
	return fmt.Sprintf("%s@%s", i.key.tool, i.started.Format(time.RFC3339Nano))
}

// layers are what protects the instance.
func (i *instance) layers() sandboxinfo.Layers { return i.starter.Layers() }
