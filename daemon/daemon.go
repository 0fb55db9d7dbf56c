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
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/ns"
)

// Options configure Run. A nil *Options, and every zero field, means the default
// named on the field.
type Options struct {
	// Config is the loaded configuration, each section checked by its
	// feature (configcheck.Load). Default: config.Default().
	Config *config.Config
	// Logger receives the daemon's log. Default: slog.Default().
	Logger *slog.Logger
	// Tools is the tool registry. Default: Registry(Config), every tool.
	Tools *tools.Registry
	// Runner starts tool processes. Default: the sandbox (sandbox.Runner), with
	// a systemd scope per call when the user manager is reachable.
	Runner runner.Runner
	// Home shows safe_bash calls what they need of $HOME (the home view,
	// the cache layers, the scratch home). Default: homemount.NewSetup
	// when Runner is the default sandbox; none (an empty home) with a
	// Runner of the caller's.
	Home *homemount.Setup
	// Net is the egress proxy's setup (netview.NewSetup): what sandboxed
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

// homeSetup makes the home view's setup, and expires the cache layers now
// and every day after. Without one (no home directory), calls see an empty
// tmpfs as their home.
func homeSetup(ctx context.Context, cfg *config.Config, log *slog.Logger) *homemount.Setup {
	hs, err := homemount.NewSetup(cfg)
	if err != nil {
		log.Warn("no home view: calls see an empty $HOME", "err", err)
		return nil
	}
	if hs.Mode == homemount.Private {
		log.Warn("toolchain caches are private to each workspace: overlayfs is not available", "why", hs.ModeNote)
	}
	expire := func() {
		if removed, err := hs.Layers.Expire(time.Now()); err != nil {
			log.Warn("cache layers: expiry", "err", err)
		} else if len(removed) > 0 {
			log.Info("cache layers expired", "removed", removed)
		}
	}
	go func() {
		expire()
		t := time.NewTicker(24 * time.Hour)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				expire()
			}
		}
	}()
	return hs
}

// netSetup makes the egress proxy's setup. Without one, sandboxed programs
// have no network beyond their own loopback, and every call says so.
func netSetup(cfg *config.Config, log *slog.Logger) (*netview.Setup, error) {
	dirs, err := netview.DefaultDirs()
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	h, err := netview.HostOf()
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	setup, err := netview.NewSetup(cfg, h, dirs, log.With("part", "egress"))
	if err != nil {
		log.Warn("no egress proxy: sandboxed commands have no network", "err", err)
		return nil, err
	}
	for _, n := range setup.Notes() {
		log.Info("egress: default rules", "note", n)
	}
	return setup, nil
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
	cfg := o.Config

	if o.Runner == nil {
		sr := &sandbox.Runner{Log: log, Pool: ns.NewPool(ns.DefaultPoolSize)}
		defer sr.Pool.Close()
		if m, err := scope.Connect(ctx); err != nil {
			sr.ScopeNote = err.Error()
			log.Warn("no systemd user manager: calls run in namespaces under seccomp, without a scope (no memory/task limits per call)", "err", err)
		} else {
			sr.Scopes = m
			defer m.Close()
		}
		o.Runner = sr
		if o.Home == nil {
			o.Home = homeSetup(ctx, cfg, log)
		}
		if o.Net == nil {
			o.Net, o.NetErr = netSetup(cfg, log)
		}
		cleanPlaceholders(log)
	}

	// stopCalls cancels every call in flight; calls see ErrShuttingDown as the cause.
	callsCtx, stopCalls := context.WithCancelCause(context.Background())
	defer stopCalls(nil)

	svc := &service{opts: o, callsCtx: callsCtx, started: time.Now()}
	if err := svc.setupPipeline(cfg); err != nil {
		return err
	}
	defer svc.closePipeline()
	svc.setupMCP(cfg)
	defer svc.closeMCP()
	// The state store opens in the background: the first call need not
	// wait for it, and the daemon starts without one if it cannot be opened.
	svc.state = &stateStore{cfg: cfg.Store}
	go svc.state.get(ctx)
	defer svc.state.close()
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

	idle := svc.idleWatch(cfg.IdleTimeout.Duration)
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
	go func() { srv.GracefulStop(); mx.wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(cfg.DrainTimeout.Duration):
		log.Warn("drain timeout: canceling calls in flight", "calls_in_flight", svc.inFlight(), "drain_timeout", cfg.DrainTimeout.String())
		stopCalls(fmt.Errorf("daemon stopping (drain timeout %s passed): %w", cfg.DrainTimeout, catalog.ErrShuttingDown))
		select {
		case <-stopped:
		case <-time.After(finalGrace):
			srv.Stop()
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

// Registry returns every tool: the sandboxed ones and the state tools, with
// cfg's settings.
func Registry(cfg *config.Config) *tools.Registry {
	sc := &state.Config{BranchBudget: cfg.Branch.DefaultBudget, ReturnTokens: cfg.Branch.SummaryMaxTokens}
	// Only a configured endpoint makes a client: none, no network call.
	if e := embedding.FromConfig(cfg.Store); e != nil {
		sc.Embedder = e
	}
	return tools.NewRegistry(append([]tools.Tool{tools.SafeBash{}, tools.SafeRead{}, tools.SafeWrite{}}, sc.Tools()...)...)
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
	if gone := tools.CleanPlaceholders(filepath.Join(dir, "placeholders")); len(gone) > 0 {
		log.Info("removed placeholders an earlier daemon left", "paths", gone)
	}
}
