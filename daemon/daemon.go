// Package daemon is contextd's server: it serves the tool protocol on a listener it
// is handed, checks every peer at accept time, dispatches calls to tools, exits by
// itself when idle and drains calls in flight when told to stop.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"google.golang.org/grpc"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/plugins"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/daemon/shield"
	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/toolstore"
)

// Options configure Run. A nil *Options, and every zero field, means the default
// named on the field.
type Options struct {
	// Config is the loaded configuration, each section checked by its
	// feature (configcheck.Load). Default: config.Default().
	Config *config.Config
	// Logger receives the daemon's log. Default: slog.Default().
	Logger *slog.Logger
	// Tools are the tools served. Default: Registry(Config), every tool.
	Tools *Tools
	// Runner starts tool processes. Default: the sandbox (sandbox.Runner), with
	// a systemd scope per call when the user manager is reachable.
	Runner runner.Runner
	// Home shows sandboxes what they need of $HOME (the home view, the
	// cache layers, the scratch home). Default: sandboxenv.NewHome
	// when Runner is the default sandbox; none (an empty home) with a
	// Runner of the caller's.
	Home *homemount.Setup
	// Net is the egress proxy's setup (sandboxenv.NewNet): what sandboxed
	// programs may reach beyond their own loopback. Default: made at start
	// when Runner is the default sandbox; with a Runner of the caller's,
	// none, and NetErr says why.
	Net    *netview.Setup
	NetErr error
	// Notify sends a state string to the service manager. Default: sd_notify
	// through go-systemd, a no-op when NOTIFY_SOCKET is unset.
	Notify func(state string) error
	// Activated records that the listener came from socket activation (Status).
	Activated bool
	// HTTP is the HTTP API's listener (nil: none). Run closes it when it
	// returns, as it does ln.
	HTTP net.Listener
	// Version is reported by Status. Default: "dev".
	Version string
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.Config == nil {
		v.Config = config.Default()
	}
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	if v.Tools == nil {
		v.Tools = Registry(v.Config)
	}
	if v.Notify == nil {
		v.Notify = func(state string) error { _, err := sddaemon.SdNotify(false, state); return err }
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	return v
}

// finalGrace is how long canceled calls get to send their last result after the
// drain timeout, before connections are cut.
const finalGrace = 5 * time.Second

// Run serves on ln until ctx ends (then it drains) or the daemon has been idle for
// the configured time (then it stops at once: nothing is in flight). It returns nil
// after a clean stop. Run closes ln.
func Run(ctx context.Context, ln net.Listener, opts *Options) error {
	o := opts.withDefaults()
	log := o.Logger
	if o.HTTP != nil {
		defer o.HTTP.Close()
	}
	cfg := o.Config

	defer defaultSandbox(ctx, &o, log)()
	home, _ := os.UserHomeDir()
	sandboxes := &sandboxenv.Builder{Config: cfg, Home: o.Home, Net: o.Net, NetErr: o.NetErr, HomeDir: home}
	sandboxes.ExpireCaches(ctx, log)
	if o.Tools.Plugins == nil {
		t := *o.Tools
		t.Plugins = pluginRuntime(o.Runner, sandboxes, cfg, log)
		o.Tools = &t
	}
	if o.Tools.Plugins != nil {
		// Deferred before the drain returns: the instances stop once no
		// call is left to use them.
		defer o.Tools.Plugins.Close()
	}

	// stopCalls cancels every call in flight; calls see ErrShuttingDown as the cause.
	callsCtx, stopCalls := context.WithCancelCause(context.Background())
	defer stopCalls(nil)

	resp, err := newResponder(cfg)
	if err != nil {
		return err
	}
	defer resp.close()
	svc := &service{opts: o, callsCtx: callsCtx, started: time.Now(), resp: resp, sandbox: sandboxes}
	// A daemon without its audit log still runs calls; its log says that
	// they are not audited.
	if svc.audit, err = audit.Open(&audit.Options{MaxFileSize: int64(cfg.Audit.MaxFileSize), Logger: log}); err != nil {
		log.Error("audit log unavailable: calls are not audited", "err", err)
	} else {
		defer svc.audit.Close()
	}
	svc.setupMCP(cfg)
	defer svc.closeMCP()
	svc.hooks = openHooks(cfg, log)
	defer svc.hooks.close()
	// The state store opens in the background: the first call need not
	// wait for it, and the daemon starts without one if it cannot be opened.
	svc.state = &stateStore{cfg: cfg.Store}
	go svc.state.get(ctx)
	defer svc.state.close()
	hs, err := svc.serveHTTP()
	if err != nil {
		ln.Close()
		return err
	}
	srv := newGRPCServer(svc, cfg.MaxRequestBytes)

	// Both protocols share the socket: the mux serves the proxy's light
	// protocol itself and hands gRPC connections to srv.
	pl := peer.NewListener(ln, cfg.AllowedUIDs, log)
	mx := newMux(svc, pl, cfg.MaxRequestBytes)
	go mx.serve(pl)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(mx.grpcLn) }()

	if err := o.Notify(fmt.Sprintf("READY=1\nSTATUS=serving on %s", ln.Addr())); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	log.Info("contextd serving", "addr", ln.Addr().String(), "socket_activated", o.Activated,
		"idle_timeout", cfg.IdleTimeout.String(), "config", cfg.Source)

	idleAfter := cfg.IdleTimeout.Duration
	if cfg.HTTP.TCP != "" && idleAfter > 0 {
		// Nothing starts the daemon again on a TCP connection (no socket
		// activation for it): a tunnel's upstream must stay up.
		log.Info("not exiting when idle: the HTTP API listens on TCP", "http_tcp", cfg.HTTP.TCP, "idle_timeout", cfg.IdleTimeout.String())
		idleAfter = 0
	}
	idle := svc.idleWatch(idleAfter)
	var reason string
	select {
	case err := <-served:
		// Serve returns only on a listener failure: nothing left to drain to.
		o.Notify("STOPPING=1")
		return fmt.Errorf("serve: %v: %w", err, catalog.ErrInternal)
	case <-idle:
		reason = "idle"
	case <-ctx.Done():
		reason = "signal"
	}

	o.Notify("STOPPING=1\nSTATUS=draining")
	log.Info("contextd stopping", "reason", reason, "calls_in_flight", svc.inFlight())
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); hs.drain(); mx.wait(); svc.hooks.wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(cfg.DrainTimeout.Duration):
		log.Warn("drain timeout: canceling calls in flight", "calls_in_flight", svc.inFlight(), "drain_timeout", cfg.DrainTimeout.String())
		stopCalls(fmt.Errorf("daemon stopping (drain timeout %s passed): %w", cfg.DrainTimeout, catalog.ErrShuttingDown))
		select {
		case <-stopped:
		case <-time.After(finalGrace):
			srv.Stop()
			hs.cut()
			mx.closeAll()
			<-stopped
		}
	}
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		log.Debug("serve ended", "err", err)
	}
	log.Info("contextd stopped", "reason", reason)
	return nil
}

// activity counts calls in flight and when the last one ended, for the idle exit.
type activity struct {
	mu       sync.Mutex
	calls    int
	lastDone time.Time
}

func (s *service) begin() {
	s.act.mu.Lock()
	s.act.calls++
	s.act.mu.Unlock()
}

func (s *service) end() {
	s.act.mu.Lock()
	s.act.calls--
	s.act.lastDone = time.Now()
	s.act.mu.Unlock()
}

func (s *service) inFlight() int {
	s.act.mu.Lock()
	defer s.act.mu.Unlock()
	return s.act.calls
}

// idleWatch returns a channel closed once no call has been in flight for d (never,
// for d == 0).
func (s *service) idleWatch(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	if d <= 0 {
		return ch
	}
	s.act.mu.Lock()
	s.act.lastDone = time.Now()
	s.act.mu.Unlock()
	tick := min(max(d/10, 50*time.Millisecond), time.Second)
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for range t.C {
			s.act.mu.Lock()
			idle := s.act.calls == 0 && time.Since(s.act.lastDone) >= d
			s.act.mu.Unlock()
			if idle {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// Tools are the tools a daemon serves, by what they run on: the sandboxed
// tools (daemon/tools) in the daemon's sandbox, the state tools
// (daemon/state) in the daemon, on its store.
type Tools struct {
	Sandboxed *tools.Registry
	State     *toolcall.Registry[*state.Env]
	// Plugins are the installed plugin tools (daemon/plugins), each in a
	// sandbox of its own kept warm per workspace. Nil: none are served;
	// Run makes the runtime over the user's tool store when none is given.
	Plugins *plugins.Runtime
}

// Registry returns every tool: the sandboxed ones and the state tools, with
// cfg's settings.
func Registry(cfg *config.Config) *Tools {
	sc := &state.Config{BranchBudget: cfg.Branch.DefaultBudget, ReturnTokens: cfg.Branch.SummaryMaxTokens}
	// Only a configured endpoint makes a client: none, no network call.
	if e := embedding.FromConfig(cfg.Store); e != nil {
		sc.Embedder = e
	}
	return &Tools{Sandboxed: tools.Default(), State: toolcall.NewRegistry(sc.Tools()...)}
}

// isState reports whether name is a state tool's.
func (t *Tools) isState(name string) bool {
	_, err := t.State.Get(name)
	return err == nil
}

// defaultSandbox gives o the daemon's own sandbox, when the caller gave no
// runner: namespaces with a pool of inits, scopes from the user manager
// when there is one, the home view and the egress proxy. The returned func
// lets go of them, once Run is done.
func defaultSandbox(ctx context.Context, o *Options, log *slog.Logger) func() {
	if o.Runner != nil {
		return func() {}
	}
	cfg := o.Config
	sr := &sandbox.Runner{Log: log, Pool: ns.NewPool(ns.DefaultPoolSize)}
	release := sr.Pool.Close
	if m, err := scope.Connect(ctx); err != nil {
		sr.ScopeNote = err.Error()
		log.Warn("no systemd user manager: calls run in namespaces under seccomp, without a scope (no memory/task limits per call)", "err", err)
	} else {
		sr.Scopes = m
		release = func() { m.Close(); sr.Pool.Close() }
	}
	o.Runner = sr
	if o.Home == nil {
		o.Home, _ = sandboxenv.NewHome(cfg, log)
	}
	if o.Net == nil {
		o.Net, o.NetErr = sandboxenv.NewNet(cfg, log)
	}
	cleanPlaceholders(log)
	return release
}

// pluginRuntime runs the user's installed plugin tools with the daemon's
// runner and sandboxes; nil (none served) without a tool store.
func pluginRuntime(r runner.Runner, sandboxes *sandboxenv.Builder, cfg *config.Config, log *slog.Logger) *plugins.Runtime {
	store, err := toolstore.Default()
	if err != nil {
		log.Warn("plugin tools unavailable", "err", err)
		return nil
	}
	popts := plugins.Options{Store: store, Runner: r, Sandbox: sandboxes, Config: cfg, Logger: log}
	if en, err := toolstore.DefaultEnablement(); err == nil {
		popts.Enablement = &en
	} else {
		log.Warn("plugin tools: no record of the projects' choices; every installed tool is served everywhere", "err", err)
	}
	return plugins.New(popts)
}

// isPlugin reports whether name is an installed plugin tool's (and no
// tool of contextd's own: those are never shadowed).
func (t *Tools) isPlugin(name string) bool {
	if _, err := t.Sandboxed.Get(name); err == nil || t.isState(name) {
		return false
	}
	return t.Plugins != nil && t.Plugins.Has(name)
}

// Names returns every tool's name, sorted.
func (t *Tools) Names() []string {
	names := append(t.Sandboxed.Names(), t.State.Names()...)
	if t.Plugins != nil {
		names = append(names, t.Plugins.Names()...)
	}
	slices.Sort(names)
	return names
}

// cleanPlaceholders removes the placeholders an earlier daemon left in
// workspaces (it stopped while calls held them) and has this one keep its
// record beside the audit log. Without a state directory placeholders are
// still made and removed; only a crash's leftovers stay.
func cleanPlaceholders(log *slog.Logger) {
	dir, err := audit.DefaultDir()
	if err == nil {
		dir = filepath.Dir(dir)
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		log.Warn("no record of workspace placeholders: a crash's leftovers will not be removed", "err", err)
		return
	}
	if gone := shield.CleanPlaceholders(filepath.Join(dir, "placeholders")); len(gone) > 0 {
		log.Info("removed placeholders an earlier daemon left", "paths", gone)
	}
}
