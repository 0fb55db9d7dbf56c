// Package homemount turns the home view of one call into the sandbox's
// mounts: it resolves the view (homeview), writes the scrubbed copies,
// leases the cache layers and the scratch home (cachelayer), and gives back
// what runner.Spec needs, with a release to call once the sandbox is gone.
package homemount

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/scrub"
)

// ScratchLayer is the name of the layer whose upper directory is the
// workspace's scratch home: what tools write under $HOME besides the
// caches (linters', test runners' and pre-commit's own caches) stays there
// for the next call in the workspace, and never reaches the real home.
const ScratchLayer = "home"

// CacheMode says how toolchain caches are shown.
type CacheMode string

const (
	// Overlay: the user's cache is the read-only lower layer of an overlay
	// whose upper layer contextd owns. Warm runs reuse it; writes never
	// reach it.
	Overlay CacheMode = "overlay"
	// Private: overlayfs is not available to the user; the user's caches are
	// not shown, and toolchains fill their caches in the workspace's scratch
	// home instead (cold the first time, warm after).
	Private CacheMode = "private"
)

// Setup is what the daemon decides once at start.
type Setup struct {
	// Layers owns the upper layers and scratch homes.
	Layers *cachelayer.Manager
	// Mode is Overlay when the probe mounted an overlay, else Private.
	Mode CacheMode
	// ModeNote says why the mode is Private.
	ModeNote string
	// SystemDirs are the paths every sandbox shows read-only anyway.
	SystemDirs []string
	// CopiesDir holds each call's scrubbed copies, in a directory of its
	// own removed at release ($XDG_RUNTIME_DIR/contextd/views).
	CopiesDir string
}

// Call is one call's side of it.
type Call struct {
	Home      string
	Workspace string
	// Sandbox names the kind of sandbox ("safe_bash", "mcp:NAME"): each has
	// its own scratch home and cache layers, so that one never plants for
	// another (a ~/.npmrc node-options, an npx cache entry).
	Sandbox   string
	CallerEnv map[string]string
	Options   homeview.Options
	Vault     *scrub.Vault
	Scrubber  *scrub.Scrubber
}

// Mounts are the mounts and environment of one call.
type Mounts struct {
	View     *homeview.View
	ReadOnly []string
	HomeDir  string
	Binds    []runner.Bind
	Overlays []runner.Overlay
	Masks    []string
	// Env are the toolchain variables (GOPATH, CARGO_HOME, ...) the command
	// keeps from the caller, so that it looks where the view shows.
	Env []string
	// Warnings for the call's result (cache writes not kept).
	Warnings []string
	// Secrets is how many values the scrubbed copies replaced.
	Secrets int

	lease *cachelayer.Lease
}

// Apply puts the view into spec, for every kind of sandbox (a tool call, a
// wrapped MCP server): its read-only paths, scrubbed copies, cache
// overlays and masks go before spec's own (a protected workspace path, or
// a configured one below a shown directory, is mounted after them), and
// its scratch home is the sandbox's. The toolchain variables (Env) are the
// caller's to merge into the environment it builds.
func (m *Mounts) Apply(spec *runner.Spec) {
	spec.ReadOnly = append(append([]string{}, m.ReadOnly...), spec.ReadOnly...)
	spec.Binds = append(append([]runner.Bind{}, m.Binds...), spec.Binds...)
	spec.Overlays = append(append([]runner.Overlay{}, m.Overlays...), spec.Overlays...)
	spec.Masks = append(append([]string{}, m.Masks...), spec.Masks...)
	spec.HomeDir = m.HomeDir
}

// Ending says the call is over and only its sandbox's teardown is left
// before release: the next call of the workspace waits for the layers
// rather than run without them (cachelayer.Lease.Ending).
func (m *Mounts) Ending() {
	if m.lease != nil {
		m.lease.Ending()
	}
}

// PlannedCopy is the Source of a scrubbed copy in a Plan: Prepare writes
// each call's copies afresh, in a directory of their own under CopiesDir.
const PlannedCopy = "(a scrubbed copy, made for each call)"

// Prepare works out and prepares the mounts of one call. release removes
// the scrubbed copies and gives the layers back; call it once the sandbox's
// mount namespace is gone (the call's process has exited). On error nothing
// is left to release.
func (s *Setup) Prepare(c Call) (m *Mounts, release func(), err error) {
	var undo []func()
	undoAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	// On error the named results are nil by the time this runs: undo
	// through the local closure, never through release.
	defer func() {
		if err != nil {
			undoAll()
		}
	}()
	m, err = s.mounts(c, &undo)
	if err != nil {
		return nil, nil, err
	}
	return m, undoAll, nil
}

// Plan is what Prepare would mount for c, worked out without writing,
// leasing or locking anything (contextd sandbox show): the layers are the
// ones Prepare leases when no other call holds them, and each scrubbed
// copy's Source is PlannedCopy.
func (s *Setup) Plan(c Call) (*Mounts, error) {
	return s.mounts(c, nil)
}

// mounts is Prepare, and with undo nil Plan: one way of working out the
// mounts, so that what contextd sandbox show prints is what a call gets.
// Each thing made is undone by a function appended to *undo.
func (s *Setup) mounts(c Call, undo *[]func()) (*Mounts, error) {
	dry := undo == nil
	h := &homeview.Host{Home: c.Home, Env: c.CallerEnv, Workspace: c.Workspace}
	opts := c.Options
	opts.SystemDirs = s.SystemDirs
	v, err := homeview.Resolve(h, opts)
	if err != nil {
		return nil, err
	}
	m := &Mounts{View: v, ReadOnly: v.ReadOnly, Masks: v.Masks}
	for _, name := range homeview.ToolchainVars() {
		if val := c.CallerEnv[name]; val != "" && filepath.IsAbs(val) {
			m.Env = append(m.Env, name+"="+val)
		}
	}
	key, err := layerKey(c)
	if err != nil {
		return nil, err
	}
	switch {
	case len(v.Scrubbed) == 0:
	case dry:
		for _, p := range v.Scrubbed {
			m.Binds = append(m.Binds, runner.Bind{Source: PlannedCopy, Target: p})
		}
	default:
		if err := os.MkdirAll(s.CopiesDir, 0o700); err != nil {
			return nil, fmt.Errorf("home view: %s: %v: %w", s.CopiesDir, err, catalog.ErrSandbox)
		}
		dir, err := os.MkdirTemp(s.CopiesDir, "call-")
		if err != nil {
			return nil, fmt.Errorf("home view: %v: %w", err, catalog.ErrSandbox)
		}
		*undo = append(*undo, func() { os.RemoveAll(dir) })
		copies, err := homeview.Render(v, dir, c.Vault, c.Scrubber)
		if err != nil {
			return nil, err
		}
		for _, cp := range copies {
			m.Binds = append(m.Binds, runner.Bind{Source: cp.Source, Target: cp.Target})
			m.Secrets += cp.Secrets
		}
	}

	layer := func(name string) (cachelayer.Layer, bool) { return s.Layers.Planned(key, name), true }
	if !dry {
		names := []string{ScratchLayer}
		if s.Mode == Overlay {
			for _, cd := range v.Caches {
				names = append(names, cd.Name)
			}
		}
		lease, err := s.Layers.Acquire(key, names)
		if err != nil {
			return nil, fmt.Errorf("home view: %w", err)
		}
		// The layers are given back before the call's result goes out
		// (the next call in the workspace must find them free); the size
		// bound, which walks them, is checked after, off the call's path.
		*undo = append(*undo, func() {
			lease.Unlock()
			go lease.Release()
		})
		m.lease = lease
		if lease.Warning != "" {
			m.Warnings = append(m.Warnings, lease.Warning)
		}
		layer = lease.Layer
	}
	scratch, ok := layer(ScratchLayer)
	if !ok {
		return nil, fmt.Errorf("home view: no scratch home in the lease: %w", catalog.ErrInternal)
	}
	m.HomeDir = scratch.Upper
	if s.Mode == Overlay {
		for _, cd := range v.Caches {
			ly, ok := layer(cd.Name)
			if !ok {
				return nil, fmt.Errorf("home view: no layer for cache %s: %w", cd.Name, catalog.ErrInternal)
			}
			m.Overlays = append(m.Overlays, runner.Overlay{Lower: cd.Path, Upper: ly.Upper, Work: ly.Work})
		}
	}
	// The layers' own root, when configured outside the deny-listed
	// $XDG_CACHE_HOME/contextd, is hidden like it.
	if root := s.Layers.Root(); exposed(root, m) && !slices.Contains(m.Masks, root) {
		m.Masks = append(m.Masks, root)
	}
	// Without overlays the user's caches are not shown, not even below a
	// directory shown for another reason (~/.cargo/registry below ~/.cargo,
	// the prefix of ~/.cargo/bin): read-only, the toolchain could neither
	// use them as its own nor write them.
	if s.Mode == Private {
		for _, cd := range v.Caches {
			if exposed(cd.Path, m) && !slices.Contains(m.Masks, cd.Path) {
				m.Masks = append(m.Masks, cd.Path)
			}
		}
	}
	return m, nil
}

// layerKey names the call's layers: its sandbox, and its workspace as the
// directory it is now (a project made again at a reused path starts clean).
func layerKey(c Call) (cachelayer.Key, error) {
	if c.Sandbox == "" {
		return cachelayer.Key{}, fmt.Errorf("home view: no sandbox name for the layers of %s: %w", c.Workspace, catalog.ErrInternal)
	}
	id, err := cachelayer.Identity(c.Workspace)
	if err != nil {
		return cachelayer.Key{}, fmt.Errorf("home view: %w", err)
	}
	return cachelayer.Key{Workspace: c.Workspace, Identity: id, Sandbox: c.Sandbox}, nil
}

// exposed reports whether p lies below something the mounts show.
func exposed(p string, m *Mounts) bool {
	for _, r := range m.ReadOnly {
		if homeview.Within(p, r) {
			return true
		}
	}
	for _, o := range m.Overlays {
		if homeview.Within(p, o.Lower) {
			return true
		}
	}
	return false
}

// NewSetup makes the daemon's setup from its configuration: the cache
// layers' manager, and the cache mode, which it finds out by mounting a
// real overlay in a sandbox (ns.ProbeOverlay) on the layers' file system.
// A failed probe is not an error: the mode becomes Private, and ModeNote
// says why (the daemon logs it; contextd doctor shows it).
func NewSetup(c *config.Config) (*Setup, error) {
	root := c.Cache.Path
	if root == "" {
		r, err := cachelayer.DefaultRoot()
		if err != nil {
			return nil, err
		}
		root = r
	}
	lm, err := cachelayer.New(&cachelayer.Options{Root: root, MaxBytes: int64(c.Cache.MaxSize),
		MaxAge: c.Cache.MaxAge.Duration, Ephemeral: !c.Cache.Enabled})
	if err != nil {
		return nil, err
	}
	s := &Setup{Layers: lm, Mode: Overlay, SystemDirs: ns.DefaultReadOnly}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		s.CopiesDir = filepath.Join(rt, "contextd", "views")
	} else {
		s.CopiesDir = filepath.Join(filepath.Dir(root), "views")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		s.Mode, s.ModeNote = Private, fmt.Sprintf("cannot make %s: %v", root, err)
		return s, nil
	}
	if err := ns.ProbeOverlay(root); err != nil {
		s.Mode, s.ModeNote = Private, "overlayfs in a user namespace does not work here: "+err.Error()
	}
	return s, nil
}

// Entry is one mount of a call's view of $HOME, for contextd sandbox show.
type Entry struct {
	Mode   string `json:"mode"`             // ro, rw, copy, overlay, masked
	Path   string `json:"path"`             // where the sandbox shows it
	Source string `json:"source,omitempty"` // what is shown there, when not Path itself
	From   string `json:"from"`             // why
}
