// Package sandboxenv builds what a sandbox shows its program beyond the
// system: the workspace with its shield, the view of $HOME, the way out to
// the network, the environment and the limits. Every kind of sandbox
// (safe_bash, the file tools, a wrapped MCP server) gets them here, and
// `contextd sandbox show` prints the same plan without making anything.
package sandboxenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/shield"
	"github.com/contextd/contextd/envallow"
	"github.com/contextd/contextd/scrub"
)

// Builder is what the daemon decides once, at start, for every sandbox.
type Builder struct {
	Config *config.Config
	// Home shows a sandbox what it needs of $HOME; nil: an empty home.
	Home *homemount.Setup
	// Net is the egress proxy; nil: the sandbox's loopback only, and
	// NetErr says why.
	Net    *netview.Setup
	NetErr error
	// HomeDir is the user's home, which every sandbox hides.
	HomeDir string
}

// Kind is what a sandbox is for: it decides which layers it gets.
type Kind int

const (
	// Shell is safe_bash: the shield with placeholders, the nested agent
	// configuration found before and set aside after, the home view, the
	// network, tools.safe_bash's paths and variables.
	Shell Kind = iota
	// Reader is safe_read: the shield of what exists (nothing can be
	// created, so nothing is), no home view, no network.
	Reader
	// Writer is safe_write: the shield with placeholders, no home view, no
	// network.
	Writer
	// Server is a wrapped MCP server: as Shell, with its launcher's preset,
	// its [mcp.servers.NAME] paths, variables, rules and limits, and the git
	// guard held for its whole life.
	Server
)

// Request is one sandbox's side.
type Request struct {
	Kind Kind
	// Name is the tool ("safe_bash") or, for a Server, the server's name
	// in the configuration.
	Name      string
	Workspace string
	Session   string
	// CallerEnv is the caller's environment (the proxy's, already reduced
	// to the allowlist); XDG_* in it move the deny-list's entries.
	CallerEnv map[string]string
	// HookEnv are the CONTEXTD_HOOK_* variables of an automation's run
	// (daemon/automation): set by the daemon for a webhook's call only.
	HookEnv map[string]string
	// Vault numbers the session's secrets: the placeholders of the
	// scrubbed copies and of the credentials the proxy puts back.
	Vault    *scrub.Vault
	Scrubber *scrub.Scrubber
	// Launcher is a Server's program (npx, uvx...): its preset is shown.
	Launcher string
	// HostNetwork asks for the host's network instead of the proxy (the
	// explicit escape hatch; the configuration must allow it).
	HostNetwork bool
	// Git, when set, is the workspace's git entries as the caller found
	// them for its git guard: the shield protects the same ones.
	Git *gitguard.Layout
	// Clock, when set, is told the stages of Build (the debug log's "call
	// stages").
	Clock Clock
}

// Clock times the stages of Build.
type Clock interface {
	Mark(stage string)                 // the current stage ended
	Add(stage string, d time.Duration) // a span timed beside the stages
}

// Env is a sandbox's surroundings, built. Spec holds the view (Workspace,
// Home, ReadOnly, ReadWrite, Pins, HomeDir, Binds, Overlays, Masks,
// Network, Listen, Serve, Limits); Apply puts it into the spec the caller
// runs.
type Env struct {
	Spec runner.Spec
	// Vars is the program's whole environment.
	Vars []string
	// Warnings are for the result: a narrower sandbox than configured
	// (no proxy, a symbolic link that cannot be protected...).
	Warnings []string
	// Git is the workspace's git entries the shield protects, for the
	// call's git guard (the same Find).
	Git gitguard.Layout
	// Why says, for each path of the view, why it is there (contextd
	// sandbox show).
	Why map[string]string
	// Network describes the proxy's rules (a Plan's; nil without a proxy
	// or with the host's network).
	Network *netview.Description

	nested  *shield.Scan
	started time.Time
	shield  *shield.Call
	home    *homemount.Mounts
	net     *netview.Net
	// releaseNow lets go of the placeholders, once no process of the
	// sandbox is left; release gives the home view's layers and copies
	// back, once its mounts are gone too.
	releaseNow func()
	release    func()
}

// Apply puts the view into spec, keeping what the caller set of its own
// (the program, its directory, input, output, time limit, reservation).
func (e *Env) Apply(spec *runner.Spec) {
	spec.Workspace, spec.Home = e.Spec.Workspace, e.Spec.Home
	spec.ReadOnly, spec.ReadWrite, spec.Pins = e.Spec.ReadOnly, e.Spec.ReadWrite, e.Spec.Pins
	spec.HomeDir, spec.Binds, spec.Overlays, spec.Masks = e.Spec.HomeDir, e.Spec.Binds, e.Spec.Overlays, e.Spec.Masks
	spec.Network, spec.Listen, spec.Serve, spec.Limits = e.Spec.Network, e.Spec.Listen, e.Spec.Serve, e.Spec.Limits
}

// Plan is what Build would give req, made without creating, leasing or
// serving anything: placeholders are listed, the cache layers are the
// ones a call leases when no other holds them, scrubbed copies have
// homemount.PlannedCopy as their source, and the proxy does not run.
func (b *Builder) Plan(req Request) (*Env, error) {
	return b.build(req, true)
}

// Build makes req's surroundings. Release must be called once the sandbox
// is gone, also when err is not nil.
func (b *Builder) Build(req Request) (*Env, error) {
	return b.build(req, false)
}

// sandboxName names the sandbox's own scratch home and cache layers.
func (req Request) sandboxName() string {
	if req.Kind == Server {
		return "mcp:" + req.Name
	}
	return req.Name
}

// policy is what the configuration gives the kind of sandbox: its extra
// paths and variables, whether it may have the host's network, its limits.
func (b *Builder) policy(req Request) (ro, rw, vars []string, hostNet bool, lim runner.Limits, err error) {
	if req.Kind == Server {
		sc := b.Config.MCP.Server(req.Name)
		lim = runner.Limits{MemoryMax: uint64(sc.MemoryMax), TasksMax: sc.TasksMax}
		// The same allowlist as safe_bash's, plus the server's own.
		vars = append(append([]string{}, b.Config.Tools.SafeBash.Env...), sc.Env...)
		return sc.ReadOnly, sc.ReadWrite, vars, sc.Network, lim, nil
	}
	sb := b.Config.Tools.Sandbox(req.Name)
	lim = runner.Limits{MemoryMax: uint64(sb.MemoryMax), TasksMax: sb.TasksMax, CPUQuotaPercent: sb.CPUQuotaPercent}
	if req.Kind != Shell {
		return nil, nil, nil, false, lim, nil
	}
	cfg := b.Config.Tools.SafeBash
	if req.HostNetwork && !cfg.AllowNetwork {
		return nil, nil, nil, false, lim, fmt.Errorf("network access asked for, but tools.safe_bash.allow_network is off in the configuration: %w", catalog.ErrPolicy)
	}
	return cfg.ReadOnly, cfg.ReadWrite, cfg.Env, req.HostNetwork, lim, nil
}

// Limits are the limits req's sandbox runs under, for a reservation made
// before Build (which must ask for the same). A request the configuration
// refuses (the host network where it is off), or no builder at all, is
// refused here already, before anything is started for it.
func (b *Builder) Limits(req Request) (runner.Limits, error) {
	if b == nil {
		return runner.Limits{}, fmt.Errorf("no sandbox builder for %s: %w", req.Name, catalog.ErrSandbox)
	}
	_, _, _, _, lim, err := b.policy(req)
	return lim, err
}

func (b *Builder) build(req Request, dry bool) (e *Env, err error) {
	if b == nil {
		// Fail closed: no builder, no sandbox.
		return &Env{}, fmt.Errorf("no sandbox builder for %s: %w", req.Name, catalog.ErrSandbox)
	}
	clock := req.Clock
	if clock == nil {
		clock = noClock{}
	}
	ro, rw, vars, hostNet, lim, err := b.policy(req)
	e = &Env{Why: map[string]string{}}
	if err != nil {
		return e, err
	}
	root := req.Workspace
	e.Spec = runner.Spec{Workspace: root, Home: b.HomeDir, ReadOnly: ro, ReadWrite: rw, Network: hostNet, Limits: lim}
	for _, p := range ro {
		e.Why[p] = b.configKey(req, "read_only")
	}
	for _, p := range rw {
		e.Why[p] = b.configKey(req, "read_write")
	}
	if req.Kind == Reader || req.Kind == Writer {
		e.Vars = []string{"PATH=/usr/bin:/bin"}
	} else {
		e.Vars = CommandEnv(req.CallerEnv, req.HookEnv, vars, req.Session, root)
	}
	withHome := (req.Kind == Shell || req.Kind == Server) && b.Home != nil
	// The home view depends on nothing the shield decides: it is worked
	// out beside it (on the other core: the two are most of the daemon's
	// own time before a safe_bash sandbox).
	var homec chan preparedHome
	if withHome {
		homec = make(chan preparedHome, 1)
		go func() { homec <- b.prepareHome(req, dry) }()
	}
	// Whatever way this returns, the home view is waited for: taken into
	// e (released with it) or, not taken, released here.
	defer func() {
		if homec != nil {
			if h := <-homec; h.err == nil && h.release != nil {
				h.release()
			}
		}
	}()
	if err := b.shield(req, e, dry); err != nil {
		return e, err
	}
	clock.Mark("shield")
	if req.Git != nil {
		e.Git = *req.Git
	} else {
		e.Git = gitguard.Find(root)
	}
	e.shield.Apply(root, e.Git, &e.Spec)
	clock.Mark("git")
	if homec != nil {
		h := <-homec
		homec = nil
		clock.Add("home_prepare", h.took)
		e.release = h.release
		if h.err != nil {
			// Fail closed: a view that cannot be built as decided is
			// not replaced by a guess.
			return e, h.err
		}
		e.home = h.m
		h.m.Apply(&e.Spec)
		e.Vars = netview.MergeEnv(e.Vars, h.m.Env)
		e.Warnings = append(e.Warnings, h.m.Warnings...)
		explainHome(e, h.m, b.HomeDir)
	}
	clock.Mark("home")
	if err := b.network(req, e, dry); err != nil {
		return e, err
	}
	clock.Mark("net")
	return e, nil
}

// shield protects the workspace's host-run paths and masks the deny-list
// in it; a Shell also finds the nested agent configuration that exists.
func (b *Builder) shield(req Request, e *Env, dry bool) error {
	root := req.Workspace
	var err error
	switch {
	case dry:
		e.shield, err = shield.Describe(root, b.HomeDir, req.CallerEnv)
	case req.Kind == Reader:
		// Reading only: nothing can be created, so no placeholder is
		// needed (missing paths are not bound).
		e.shield, err = shield.ForReading(root, b.HomeDir, req.CallerEnv)
	default:
		e.shield, err = shield.Writable(root, b.HomeDir, req.CallerEnv)
	}
	if e.shield != nil {
		// After the run: no process of the sandbox is left to see a
		// placeholder go.
		e.releaseNow = e.shield.Release
	}
	if err != nil {
		return err
	}
	if req.Kind == Shell {
		if err := e.shieldNested(root); err != nil {
			return err
		}
	}
	e.Warnings = append(e.Warnings, e.shield.Warnings...)
	for _, p := range e.shield.ReadOnly {
		e.Why[p] = "protected: the host runs what it holds"
	}
	for _, p := range e.shield.Placeholders {
		e.Why[p] = "missing: an empty read-only placeholder while a call runs, so that nothing can be created there"
	}
	for _, p := range e.shield.ReadWrite {
		e.Why[p] = "bound onto itself: cannot be renamed away with the protected files in it"
	}
	for _, p := range e.shield.Masks {
		e.Why[p] = "credential deny-list, in the workspace"
	}
	return nil
}

// shieldNested shields the nested host-run configuration of root that
// exists now, and notes the time, so that what a program creates is set
// aside after it (SetAside).
func (e *Env) shieldNested(root string) error {
	e.nested = shield.ScanNested(root)
	for _, rel := range e.nested.Found {
		if err := e.shield.Nested(root, rel); err != nil {
			return err
		}
	}
	if !e.nested.Complete {
		e.Warnings = append(e.Warnings, fmt.Sprintf("the workspace has more than %d directories: agent configuration below the first %d is not protected", shield.MaxScanDirs, shield.MaxScanDirs))
	}
	e.started = time.Now()
	return nil
}

// preparedHome is a sandbox's home view, prepared beside its shield.
type preparedHome struct {
	m       *homemount.Mounts
	release func()
	err     error
	took    time.Duration
}

func (b *Builder) prepareHome(req Request, dry bool) preparedHome {
	t := time.Now()
	opts := homeview.Options{PresetsOff: b.Config.Home.PresetsOff, ReadOnly: b.Config.Home.ReadOnly}
	if req.Kind == Server {
		if p, ok := homeview.LauncherPresets[filepath.Base(req.Launcher)]; ok {
			opts.Presets = []string{p}
		}
	}
	c := homemount.Call{Home: b.HomeDir, Workspace: req.Workspace, Sandbox: req.sandboxName(),
		CallerEnv: req.CallerEnv, Vault: req.Vault, Scrubber: req.Scrubber, Options: opts}
	if dry {
		m, err := b.Home.Plan(c)
		return preparedHome{m: m, err: err, took: time.Since(t)}
	}
	m, release, err := b.Home.Prepare(c)
	return preparedHome{m, release, err, time.Since(t)}
}

// explainHome notes why each path of the home view is there.
func explainHome(e *Env, m *homemount.Mounts, home string) {
	e.Why[home] = "the workspace's scratch home (persistent)"
	for _, p := range m.ReadOnly {
		e.Why[p] = m.View.From[p]
	}
	for _, bd := range m.Binds {
		e.Why[bd.Target] = "scrubbed copy: secrets replaced by placeholders"
	}
	for _, cd := range m.View.Caches {
		e.Why[cd.Path] = "cache " + cd.Name + " (preset " + cd.Preset + "): yours read-only below, writes kept in the upper layer"
	}
	for _, p := range m.Masks {
		if _, ok := e.Why[p]; !ok {
			e.Why[p] = "credential deny-list"
		}
	}
}

// network gives the sandbox its way out: the host network when asked for
// and allowed (the explicit escape hatch, audited through the layers),
// else the egress proxy's listeners and variables, else, with no proxy,
// its loopback only and a warning saying so (a narrower sandbox, not a
// weaker one).
func (b *Builder) network(req Request, e *Env, dry bool) error {
	switch {
	case req.Kind == Reader || req.Kind == Writer:
	case e.Spec.Network:
		if req.Kind == Server {
			e.Warnings = append(e.Warnings, fmt.Sprintf("server %s shares the host network ([mcp.servers.%s] network = true)", req.Name, req.Name))
		}
	case b.Net != nil:
		c := netview.Call{Tool: req.sandboxName(), Vault: req.Vault}
		if req.Kind == Server {
			c.Server = req.Name
		}
		var n *netview.Net
		var err error
		if dry {
			n, err = b.Net.Plan(c)
			d := b.Net.Describe()
			e.Network = &d
		} else {
			n, err = b.Net.Prepare(c)
		}
		if err != nil {
			return err
		}
		e.net = n
		e.Vars = n.Apply(&e.Spec, e.Vars)
		for _, bd := range n.Binds {
			e.Why[bd.Target] = "the sandbox's trust bundle: the system's and contextd's CA"
		}
	case b.NetErr != nil:
		what := "the command has"
		if req.Kind == Server {
			what = "server " + req.Name + " has"
		}
		e.Warnings = append(e.Warnings, fmt.Sprintf("no egress proxy (%v): %s no network beyond its own loopback", b.NetErr, what))
	}
	return nil
}

// configKey names where a configured path comes from.
func (b *Builder) configKey(req Request, key string) string {
	if req.Kind == Server {
		return "mcp.servers." + req.Name + "." + key
	}
	return "tools.safe_bash." + key
}

// Net is the sandbox's egress proxy, nil without one.
func (e *Env) Net() *netview.Net { return e.net }

// Finish stops the proxy and sums up what went through it; nil without a
// proxy.
func (e *Env) Finish() *netview.Summary {
	if e.net == nil || e.net.Finish == nil {
		return nil
	}
	s := e.net.Finish()
	return &s
}

// SetAside looks, once no process of the sandbox is left, for the nested
// agent configuration the program created or changed, and sets it aside
// (shield.SetAside); only a Shell's.
func (e *Env) SetAside() []string {
	if e.nested == nil {
		return nil
	}
	return shield.SetAside(e.nested, e.started, e.shield.ReadOnly)
}

// Ending says the sandbox is over and only its teardown is left: the next
// call of the workspace waits for the cache layers rather than run without
// them (homemount.Mounts.Ending).
func (e *Env) Ending() {
	if e.home != nil {
		e.home.Ending()
	}
}

// Release lets go of what Build made, once no process of the sandbox is
// left: the placeholders at once; the scrubbed copies and the cache layers
// once its mounts are gone too (at once, or, with gone set, when it is
// closed: runner.Exit.Gone), since an overlay may still have them mounted.
// Safe to call more than once.
func (e *Env) Release(gone <-chan struct{}) {
	if e.releaseNow != nil {
		e.releaseNow()
		e.releaseNow = nil
	}
	if e.release != nil {
		runner.AfterGone(gone, e.release)
		e.release = nil
	}
}

type noClock struct{}

func (noClock) Mark(string)               {}
func (noClock) Add(string, time.Duration) {}

// CommandEnv is the environment of a sandboxed program: the caller's
// variables on envallow's list or on extra that do not look like
// credentials, PATH (a default when the caller has none), the daemon user's
// HOME, USER and LOGNAME, and the session and workspace. hook are an
// automation's variables: only names under envallow.HookPrefix pass, and
// only from there; a caller's variable of that name never does, whatever
// extra lists, so that a command can trust them to be the daemon's.
func CommandEnv(caller, hook map[string]string, extra []string, session, workspace string) []string {
	out := []string{}
	for k, v := range caller {
		if envallow.Pass(k, v, extra) && !strings.HasPrefix(k, envallow.HookPrefix) && cleanVar(k, v) {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range hook {
		if strings.HasPrefix(k, envallow.HookPrefix) && !envallow.LooksLikeCredential(k, v) && cleanVar(k, v) {
			out = append(out, k+"="+v)
		}
	}
	if _, ok := caller["PATH"]; !ok {
		out = append(out, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return append(out, "CONTEXTD_SESSION="+session, "CONTEXTD_WORKSPACE="+workspace)
}

// cleanVar reports whether k=v can be one entry of an environment.
func cleanVar(k, v string) bool {
	return !strings.ContainsAny(k, "=\x00") && !strings.ContainsRune(v, 0)
}

// HomeView is what the home view shows and why (nil without one).
func (e *Env) HomeView() *homeview.View {
	if e.home == nil {
		return nil
	}
	return e.home.View
}
