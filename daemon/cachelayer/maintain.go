package cachelayer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/contextd/contextd/catalog"
)

// Usage is one workspace's layers on disk.
type Usage struct {
	// Workspace is the workspace root; empty when the layers' .layer.json
	// was lost.
	Workspace string `json:"workspace"`
	// Sandbox is the kind of sandbox the layers serve (safe_bash, mcp:NAME).
	Sandbox string `json:"sandbox,omitempty"`
	// ID names the layers' directory under the root.
	ID     string       `json:"id"`
	Caches []CacheUsage `json:"caches"`
	// Bytes is the sum of the caches' sizes.
	Bytes   int64 `json:"bytes"`
	Partial bool  `json:"partial,omitempty"`
	// LastUsed is the latest of the caches' times.
	LastUsed time.Time `json:"last_used"`
	// InUse: a lease holds the layers now (as /proc/locks says; false
	// when it cannot be read).
	InUse bool `json:"in_use"`
}

// List returns every workspace's layers, ordered by workspace path. It
// measures them (walking every layer) and takes no lock.
func (m *Manager) List() ([]Usage, error) {
	ids, err := m.workspaceIDs()
	if err != nil {
		return nil, err
	}
	held, _ := locksHeld()
	var out []Usage
	for _, id := range ids {
		dir := filepath.Join(m.root, id)
		md, _ := readMeta(dir)
		caches, err := measure(dir)
		if err != nil {
			return nil, err
		}
		u := Usage{Workspace: md.Workspace, Sandbox: md.Sandbox, ID: id, Caches: caches}
		for _, c := range caches {
			u.Bytes += c.Bytes
			u.Partial = u.Partial || c.Partial
			if c.LastUsed.After(u.LastUsed) {
				u.LastUsed = c.LastUsed
			}
		}
		if fi, err := os.Lstat(filepath.Join(dir, lockName)); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				u.InUse = held[[2]uint64{uint64(st.Dev), st.Ino}]
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Usage) int {
		if c := strings.Compare(a.Workspace, b.Workspace); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Expire removes the layers of every workspace none of whose caches was
// used in the MaxAge before now (or that has none), and what .tmp holds that nothing holds
// (the ephemeral layers of a daemon that crashed, deletions cut short).
// Layers a lease holds are left alone, however old. It returns the
// workspaces whose layers it removed. The daemon calls it when it starts
// and then daily.
func (m *Manager) Expire(now time.Time) ([]string, error) {
	if exists, err := m.checkRoot(false); err != nil || !exists {
		return nil, err
	}
	errs := []error{m.sweepTmp()}
	ids, err := m.workspaceIDs()
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	var removed []string
	for _, id := range ids {
		dir := filepath.Join(m.root, id)
		if !m.expired(dir, now) {
			continue
		}
		lock, err := tryLock(filepath.Join(dir, lockName), true)
		if err != nil {
			continue // in use, or deleted meanwhile
		}
		// Used between the look above and the lock?
		if m.expired(dir, now) {
			md, _ := readMeta(dir)
			if err := m.discard(dir); err != nil {
				errs = append(errs, err)
			} else {
				removed = append(removed, orID(md.Workspace, id))
			}
		}
		lock.Close()
	}
	return removed, errors.Join(errs...)
}

// expired says whether the layers in dir were last used MaxAge or more
// before now, by the mtimes of its caches' directories (which Release
// sets). Layers without a cache hold nothing worth keeping: a crash
// between mkdir and the first layer, or a size bound that took them all.
func (m *Manager) expired(dir string, now time.Time) bool {
	var last time.Time
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !e.IsDir() || !cacheName.MatchString(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return now.Sub(last) >= m.maxAge
}

// Clear removes the layers of workspace (its root, as List shows it), or
// of every workspace when workspace is "", and what .tmp holds that
// nothing holds. It never waits for a lease: layers in use are left, and
// Clear fails with catalog.ErrCacheBusy naming them after removing the
// rest. It returns the workspaces whose layers it removed; a workspace
// with no layers is catalog.ErrNotFound.
func (m *Manager) Clear(workspace string) ([]string, error) {
	var ids []string
	if workspace != "" {
		ws, err := cleanWorkspace(workspace)
		if err != nil {
			return nil, fmt.Errorf("cache layers: %q is not a workspace root (an absolute path): %w", workspace, catalog.ErrUsage)
		}
		workspace = ws
	}
	exists, err := m.checkRoot(false)
	if err != nil {
		return nil, err
	}
	if !exists {
		if workspace != "" {
			return nil, fmt.Errorf("cache layers: no layers of %s (%s does not exist): %w", workspace, m.root, catalog.ErrNotFound)
		}
		return nil, nil
	}
	errs := []error{m.sweepTmp()}
	if ids, err = m.workspaceIDs(); err != nil {
		return nil, err
	}
	var removed, busy []string
	found := false
	for _, id := range ids {
		dir := filepath.Join(m.root, id)
		md, _ := readMeta(dir)
		// A workspace has layers per sandbox and per identity of its
		// root: all of those whose record names it.
		if workspace != "" && md.Workspace != workspace {
			continue
		}
		found = true
		name := orID(md.Workspace, id)
		lock, err := tryLock(filepath.Join(dir, lockName), true)
		switch {
		case errors.Is(err, errBusy):
			busy = append(busy, name)
			continue
		case errors.Is(err, errMoved), errors.Is(err, fs.ErrNotExist):
			continue // cleared meanwhile
		case err != nil:
			errs = append(errs, ioError(err))
			continue
		}
		if err := m.discard(dir); err != nil {
			errs = append(errs, err)
		} else if !slices.Contains(removed, name) {
			removed = append(removed, name)
		}
		lock.Close()
	}
	if workspace != "" && !found {
		return nil, fmt.Errorf("cache layers: no layers of %s in %s (`contextd cache list` shows the workspaces that have some): %w", workspace, m.root, catalog.ErrNotFound)
	}
	slices.Sort(busy)
	busy = slices.Compact(busy)
	if len(busy) > 0 {
		errs = append(errs, fmt.Errorf("cache layers of %s not cleared: a tool call in that workspace has them mounted: %w", strings.Join(busy, ", "), catalog.ErrCacheBusy))
	}
	return removed, errors.Join(errs...)
}

// workspaceIDs lists the workspace directories under the root.
func (m *Manager) workspaceIDs() ([]string, error) {
	exists, err := m.checkRoot(false)
	if err != nil || !exists {
		return nil, err
	}
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return nil, ioError(err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && idPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// orID names layers by their workspace, or by their directory when their
// .layer.json was lost.
func orID(ws, id string) string {
	if ws != "" {
		return ws
	}
	return "(unknown workspace, layers " + id + ")"
}
