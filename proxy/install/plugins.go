package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/toolstore"
)

// Plugin is a tool to lay out beside the built-ins: an installed plugin
// tool, its schema.json and its TOOL.md (nil: none) as the tool store holds
// them.
type Plugin struct {
	Name   string
	Schema []byte
	Doc    []byte
}

// StorePlugins reads the tools of store that choice enables. A tool whose
// schema.json cannot be read is skipped with a warning; choice naming a tool that is not installed is an error wrapping
// catalog.ErrUsage, found before anything is written.
func StorePlugins(store toolstore.Store, choice toolstore.Choice) ([]Plugin, []string, error) {
	lock, err := store.Load()
	if err != nil {
		return nil, nil, err
	}
	for _, n := range choice.Tools {
		if _, err := lock.Get(n); err != nil {
			return nil, nil, fmt.Errorf("--tools: %v: %w", err, catalog.ErrUsage)
		}
	}
	var out []Plugin
	var warnings []string
	for _, n := range lock.Names() {
		if !choice.Enables(n) {
			continue
		}
		t, _ := lock.Get(n)
		schema, err := store.File(t, toolstore.SchemaName)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("plugin tool %s: its %s: %v; not laid out (install it again: contextd tool update %s)", n, toolstore.SchemaName, err, n))
			continue
		}
		doc, err := store.File(t, toolstore.DocName)
		if err != nil {
			doc = nil
		}
		out = append(out, Plugin{Name: n, Schema: schema, Doc: doc})
	}
	return out, warnings, nil
}

// refusedName is what install reports for a plugin tool named like a
// built-in: the built-in keeps its directory.
const refusedName = "refused (a plugin tool named like a contextd tool: install it under another name)"

// layable keeps the plugins that may be laid out, reporting the others.
func layable(plugins []Plugin, rep *Report) []Plugin {
	var out []Plugin
	for _, p := range plugins {
		if _, builtin := toolspec.Get(p.Name); builtin || toolstore.CheckName(p.Name) != nil {
			rep.Actions = append(rep.Actions, Action{p.Name, refusedName})
			continue
		}
		out = append(out, p)
	}
	return out
}

// replacePlugins brings the record of plugin tools up to plugins: what
// install wrote for a plugin tool it laid out before and not now (or a
// file the tool no longer has) is removed while still as written, and
// forgotten either way.
func (m *manifest) replacePlugins(d *dirAt, dir string, plugins []Plugin, rep *Report) error {
	want := map[string]bool{}
	names := map[string]bool{}
	for _, p := range plugins {
		names[p.Name] = true
		want[filepath.Join(p.Name, p.Name)] = true
		want[filepath.Join(p.Name, toolstore.SchemaName)] = true
		want[filepath.Join(p.Name, toolstore.DocName)] = p.Doc != nil
	}
	var stale []string
	for rel := range m.Files {
		top, _, _ := strings.Cut(rel, "/")
		_, builtin := toolspec.Get(top)
		if !builtin && (slices.Contains(m.Plugins, top) || names[top]) && !want[rel] {
			stale = append(stale, rel)
		}
	}
	slices.Sort(stale)
	if err := removeOurs(d, dir, m, stale, rep); err != nil {
		return err
	}
	for _, rel := range stale {
		delete(m.Files, rel)
	}
	m.Plugins = nil
	for _, p := range plugins {
		if m.Files[filepath.Join(p.Name, p.Name)] != "" {
			m.Plugins = append(m.Plugins, p.Name)
		}
	}
	slices.Sort(m.Plugins)
	return nil
}

// PluginLaidOut says whether install laid out the plugin tool name in the
// tools directory dir: the proxy's test of a name it does not know. The
// record sits in the project, where an agent can write, so it proves only
// which tool the agent asks for; the daemon decides whether the tool exists
// and is enabled there.
func PluginLaidOut(dir, name string) bool {
	if toolstore.CheckName(name) != nil {
		return false
	}
	d, err := toolsDirAt("", dir, false)
	if err != nil {
		return false
	}
	defer d.close()
	b, err := d.readFile(ManifestName)
	if err != nil {
		return false
	}
	var m manifest
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	return slices.Contains(m.Plugins, name) && strings.HasPrefix(m.Files[filepath.Join(name, name)], "link:")
}

// removeOurs removes each of paths (relative to dir, opened as d) that is
// still as m records install wrote it, then its directory when left empty;
// a path changed since is kept and reported so.
func removeOurs(d *dirAt, dir string, m *manifest, paths []string, rep *Report) error {
	subdirs := map[string]bool{}
	for _, relp := range paths {
		if !filepath.IsLocal(relp) {
			continue // a manifest never names paths outside dir
		}
		subdirs[filepath.Dir(relp)] = true
		sub, err := walkDir(d, filepath.Dir(relp), false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		act, err := removeIfOurs(sub, relp, m.Files[relp])
		sub.close()
		if err != nil {
			return fmt.Errorf("remove %s: %v: %w", filepath.Join(dir, relp), err, catalog.ErrIO)
		}
		if act != "" {
			rep.Actions = append(rep.Actions, Action{relp, act})
		}
	}
	for sd := range subdirs {
		if sd != "." && filepath.IsLocal(sd) && !strings.Contains(sd, "/") {
			d.rmdir(sd) // only succeeds when empty
		}
	}
	return nil
}
