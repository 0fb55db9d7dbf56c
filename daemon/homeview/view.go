package homeview

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// Options are the user's choices from the configuration ([home]).
type Options struct {
	// PresetsOff names presets not applied.
	PresetsOff []string
	// ReadOnly are extra paths shown read-only in every call (templates
	// allowed: "~/x"). They were checked against the deny-list when the
	// configuration loaded; Resolve checks again and fails closed.
	ReadOnly []string
	// SystemDirs are the paths every sandbox shows anyway (ns's default
	// read-only set): PATH directories below them need nothing more.
	SystemDirs []string
	// Presets are applied whatever the workspace holds (unless turned off):
	// a wrapped MCP server launched with npx needs node's configuration and
	// cache wherever it runs (LauncherPresets).
	Presets []string
}

// View is what one call sees of the user's home (and of PATH directories
// elsewhere), besides the workspace: every path absolute and existing.
type View struct {
	// Presets are the presets in force, in table order: those the
	// workspace's markers select (or Options.Presets names), whole.
	Presets []string
	// ConfigOnly are the presets applied for their configuration alone, in
	// table order: no marker selects them, but a program of theirs is on
	// PATH, so their Show and Scrubbed paths are shown and their caches
	// are not.
	ConfigOnly []string
	// ReadOnly are host paths shown read-only at their own place.
	ReadOnly []string
	// Scrubbed are configuration files shown as a copy with placeholders in
	// place of secrets, at their own place (the caller renders the copies).
	Scrubbed []string
	// Caches are toolchain caches to show as the lower layer of an overlay
	// at their own place.
	Caches []CacheDir
	// Masks are deny-listed paths that exist below something shown (or the
	// workspace): the sandbox hides each one.
	Masks []string
	// Skipped says, for `contextd sandbox show`, which paths a preset or
	// PATH named and why they are not shown.
	Skipped []string
	// From says, for each path of ReadOnly, what showed it.
	From map[string]string
}

// CacheDir is a cache found for one call.
type CacheDir struct {
	Name   string
	Path   string
	Preset string
}

// maxLinks bounds how many entries of one PATH directory are examined for
// symbolic links into an install prefix (pipx, uv tools).
const maxLinks = 4096

// Resolve works out the view of one call.
func Resolve(h *Host, o Options) (*View, error) {
	r := &resolver{h: h, deny: DenyList(h), seen: map[string]bool{}, v: &View{From: map[string]string{}}}
	for _, d := range o.SystemDirs {
		r.system = append(r.system, filepath.Clean(d))
	}
	markers := map[string]bool{}
	for _, n := range workspaceNames(h.Workspace) {
		markers[n] = true
	}
	// The presets the workspace selects apply whole; of the others, those
	// whose toolchain is on PATH apply their configuration: the toolchain
	// reads it wherever it runs, but its caches are for the projects that
	// use it.
	var active, configOnly []Preset
	for _, p := range Presets {
		switch {
		case slices.Contains(o.PresetsOff, p.Name):
		case selected(p, markers) || slices.Contains(o.Presets, p.Name):
			active = append(active, p)
			r.v.Presets = append(r.v.Presets, p.Name)
		default:
			configOnly = append(configOnly, p)
		}
	}
	configOnly = r.onPath(configOnly)
	for _, p := range configOnly {
		r.v.ConfigOnly = append(r.v.ConfigOnly, p.Name)
	}
	for _, p := range active {
		for _, t := range p.Show {
			r.showTemplate(t, "preset "+p.Name)
		}
	}
	for _, p := range configOnly {
		for _, t := range p.Show {
			r.showTemplate(t, "preset "+p.Name+" (its program on PATH)")
		}
	}
	r.pathDirs()
	for _, t := range o.ReadOnly {
		p, ok := h.expand(h.expandTilde(t))
		if !ok {
			return nil, fmt.Errorf("[home] read_only: %q is not an absolute path: %w", t, catalog.ErrConfig)
		}
		if d, bad := denied(p, r.deny); bad {
			return nil, fmt.Errorf("[home] read_only: %q touches %s, on the credential deny-list (%s): %w", t, d.Path, d.Rule, catalog.ErrConfig)
		}
		r.show(p, "[home] read_only")
	}
	for _, p := range active {
		for _, c := range p.Caches {
			r.cache(p.Name, c)
		}
	}
	// Every preset's credential-bearing files, active or not: one that lies
	// below a shown directory (~/.cargo shown as the prefix of ~/.cargo/bin)
	// must show as its scrubbed copy, never as itself.
	for _, p := range Presets {
		on := slices.Contains(r.v.Presets, p.Name) || slices.Contains(r.v.ConfigOnly, p.Name)
		for _, t := range p.Scrubbed {
			r.scrubbed(t, on)
		}
	}
	r.prefixSecrets()
	r.masks()
	sort.Strings(r.v.ReadOnly)
	sort.Strings(r.v.Scrubbed)
	sort.Strings(r.v.Masks)
	return r.v, nil
}

type resolver struct {
	h      *Host
	deny   []DeniedPath
	system []string
	seen   map[string]bool
	v      *View
}

func (r *resolver) skip(p, why string) { r.v.Skipped = append(r.v.Skipped, p+": "+why) }

func (r *resolver) showTemplate(t, from string) {
	if p, ok := r.h.expand(t); ok {
		r.show(p, from)
	}
}

// show adds p, and the place its symbolic links lead to, to the read-only
// paths, unless it does not exist, is the home itself, is in the workspace,
// or touches the deny-list.
func (r *resolver) show(p, from string) {
	for i, q := range []string{p, canonicalOr(p)} {
		if i == 1 && q == p {
			break
		}
		if r.seen[q] {
			continue
		}
		if _, err := os.Lstat(q); err != nil {
			continue
		}
		switch d, bad := denied(q, r.deny); {
		case bad && within(q, d.Path):
			r.skip(q, fmt.Sprintf("%s: on the credential deny-list (%s)", from, d.Rule))
			continue
		case q == r.h.Home || within(r.h.Home, q):
			r.skip(q, from+": would show the whole home")
			continue
		case within(q, r.h.Workspace):
			continue // shown read-write anyway
		case r.underSystem(q):
			continue
		}
		// A path that contains a deny-listed one is shown; masks() hides
		// the deny-listed part.
		r.seen[q] = true
		r.v.ReadOnly = append(r.v.ReadOnly, q)
		r.v.From[q] = from
	}
}

func (r *resolver) underSystem(p string) bool {
	for _, s := range r.system {
		if within(p, s) {
			return true
		}
	}
	return false
}

// pathDirs shows the directories of the caller's PATH that are not visible
// anyway, with the install prefix each belongs to, so that every command on
// the user's PATH runs inside as outside.
func (r *resolver) pathDirs() {
	broad := map[string]bool{"/": true}
	for _, t := range broadDirs {
		if p, ok := r.h.expand(t); ok {
			broad[p] = true
		}
	}
	done := map[string]bool{}
	for _, dir := range filepath.SplitList(r.h.Env["PATH"]) {
		if !filepath.IsAbs(dir) {
			continue // "." or "": relative to the cwd, the workspace
		}
		dir = filepath.Clean(dir)
		if done[dir] {
			continue
		}
		done[dir] = true
		if r.underSystem(dir) || within(dir, "/proc") || within(dir, "/dev") || within(dir, "/snap") {
			continue
		}
		r.show(dir, "PATH")
		if !r.seen[dir] && !r.seen[canonicalOr(dir)] {
			continue
		}
		// The install prefix a bin directory belongs to holds the
		// libraries its programs load; any other parent (a checkout whose
		// bin is on PATH, ~/go with its sources) is not shown.
		if base := filepath.Base(dir); base == "bin" || base == "shims" {
			if parent := filepath.Dir(dir); !broad[parent] && strings.Count(parent, "/") >= 2 && r.installPrefix(parent, broad) {
				r.show(parent, "PATH "+dir)
			}
		}
		for _, ir := range impliedRoots {
			if p, ok := r.h.expand(ir.pathDir); ok && p == dir {
				r.showTemplate(ir.root, "PATH "+dir)
			}
		}
		r.linkedPrefixes(dir, broad)
	}
}

// linkedPrefixes shows what the symbolic links in a PATH directory lead to
// below the home: the install prefix of the target when it is one
// (~/.local/bin/black -> ~/.local/share/pipx/venvs/black/bin/black shows
// that venv), else the target file alone. A link into a checkout (`npm
// link`, a hand-made link to ~/src/tool/bin/tool) never shows the checkout,
// whose .env and .git/config are beside the program.
func (r *resolver) linkedPrefixes(dir string, broad map[string]bool) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	ents, _ := f.ReadDir(maxLinks)
	for _, e := range ents {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		// Most links lead next door (rustup's proxies to ./rustup) or out
		// of the home (/usr/bin/python3): read the link first, and resolve
		// it whole only when it may lead somewhere not shown yet.
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(dir, link)
		}
		if filepath.Dir(link) == dir {
			continue
		}
		target, err := filepath.EvalSymlinks(link)
		if err != nil || !within(target, r.h.Home) || r.exposed(target) {
			continue
		}
		from := "PATH link " + filepath.Join(dir, e.Name())
		prefix := filepath.Dir(target)
		if filepath.Base(prefix) == "bin" {
			prefix = filepath.Dir(prefix)
		}
		if !broad[prefix] && r.installPrefix(prefix, broad) {
			r.show(prefix, from)
			continue
		}
		r.show(target, from)
	}
}

// installPrefix reports whether dir is laid out by a package or toolchain
// manager (installRoots, installMarkers), so that showing it whole shows no
// one's sources.
func (r *resolver) installPrefix(dir string, broad map[string]bool) bool {
	for _, t := range installRoots {
		if root, ok := r.h.expand(t); ok && !broad[root] && root != r.h.Home && within(dir, root) {
			return true
		}
	}
	// A checkout, or a directory inside one (a package of a monorepo,
	// with its own node_modules): someone's sources, not a manager's
	// layout. Looked for up to the home, which may itself be a
	// repository of dotfiles.
	home := filepath.Clean(r.h.Home)
	for d := filepath.Clean(dir); d != home; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return false
		}
		up := filepath.Dir(d)
		if up == d {
			break // the root (or "."): nothing above
		}
		d = up
	}
	for _, m := range installMarkers {
		if ms, _ := filepath.Glob(filepath.Join(dir, m)); len(ms) > 0 {
			return true
		}
	}
	return false
}

// prefixSecrets adds, as scrubbed copies, the files of prefixSecrets that
// exist below a shown directory.
func (r *resolver) prefixSecrets() {
	for _, dir := range slices.Clone(r.v.ReadOnly) {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		for _, pat := range prefixSecrets {
			ms, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, p := range ms {
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || slices.Contains(r.v.Scrubbed, p) {
					continue
				}
				if _, bad := denied(p, r.deny); bad {
					continue // masked instead
				}
				r.v.Scrubbed = append(r.v.Scrubbed, p)
			}
		}
	}
}

func (r *resolver) cache(preset string, c Cache) {
	p, ok := r.h.expand(c.Path)
	if !ok {
		return
	}
	p = canonicalOr(p)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return // nothing cached yet: the toolchain makes it in the scratch home
	case !fi.IsDir():
		r.skip(p, "cache "+c.Name+": not a directory")
		return
	case within(p, r.h.Workspace):
		return
	case p == r.h.Home || within(r.h.Home, p):
		r.skip(p, "cache "+c.Name+": would show the whole home")
		return
	}
	if d, bad := denied(p, r.deny); bad {
		r.skip(p, fmt.Sprintf("cache %s: touches the credential deny-list (%s)", c.Name, d.Rule))
		return
	}
	r.v.Caches = append(r.v.Caches, CacheDir{Name: c.Name, Path: p, Preset: preset})
}

// scrubbed adds a credential-bearing file: always when its preset is on,
// else only when something shown would show it as it is.
func (r *resolver) scrubbed(t string, on bool) {
	p, ok := r.h.expand(t)
	if !ok {
		return
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if _, bad := denied(p, r.deny); bad || within(p, r.h.Workspace) {
		return
	}
	if !on && !r.exposed(p) && !r.exposed(canonicalOr(p)) {
		return
	}
	if !slices.Contains(r.v.Scrubbed, p) {
		r.v.Scrubbed = append(r.v.Scrubbed, p)
	}
	// Its canonical path, when it is shown through a directory there, is
	// covered too.
	if c := canonicalOr(p); c != p && r.exposed(c) && !slices.Contains(r.v.Scrubbed, c) {
		r.v.Scrubbed = append(r.v.Scrubbed, c)
	}
}

// exposed reports whether p lies below a shown path or a cache.
func (r *resolver) exposed(p string) bool {
	for _, s := range r.v.ReadOnly {
		if within(p, s) {
			return true
		}
	}
	for _, c := range r.v.Caches {
		if within(p, c.Path) {
			return true
		}
	}
	return within(p, r.h.Workspace)
}

// masks lists the deny-listed paths that exist below something shown, at
// the path as listed and at its canonical path.
func (r *resolver) masks() {
	for _, d := range r.deny {
		// Most of the list does not exist on a given machine; only what
		// does is resolved (a parent that is a link leads elsewhere).
		if _, err := os.Lstat(d.Path); err != nil {
			continue
		}
		for _, q := range []string{d.Path, canonicalOr(d.Path)} {
			if r.exposed(q) && !slices.Contains(r.v.Masks, q) {
				r.v.Masks = append(r.v.Masks, q)
			}
		}
	}
}

// canonicalOr returns p with its symbolic links resolved, or p itself when
// it cannot be resolved.
func canonicalOr(p string) string {
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	return p
}

// workspaceNames lists the file names at the workspace root and in the
// directories directly below it, which select presets.
func workspaceNames(root string) []string {
	var out []string
	top, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for i, e := range top {
		out = append(out, e.Name())
		if !e.IsDir() || i >= 512 || strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" || e.Name() == "vendor" {
			continue
		}
		// Names only: no stat, no sort (this runs for every call).
		f, err := os.Open(filepath.Join(root, e.Name()))
		if err != nil {
			continue
		}
		sub, _ := f.Readdirnames(512)
		f.Close()
		out = append(out, sub...)
	}
	return out
}

// selected reports whether p applies given the workspace's file names.
func selected(p Preset, names map[string]bool) bool {
	if len(p.Markers) == 0 {
		return true
	}
	for _, m := range p.Markers {
		if !strings.ContainsAny(m, "*?[") {
			if names[m] {
				return true
			}
			continue
		}
		for n := range names {
			if ok, _ := path.Match(m, n); ok {
				return true
			}
		}
	}
	return false
}
