package toolfetch

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// commit moves the built tree into the store beside the approved
// manifest, schema and TOOL.md, makes it read-only, points the lock at it,
// and only then removes the version it replaces. unchanged: the tree is
// the one already installed, and nothing was changed.
func (in *Installer) commit(st *staging, s *staged, src *toolsrc.Source, resolved string, old *toolstore.Tool) (*toolstore.Tool, bool, error) {
	m := s.manifest
	sum, err := toolstore.TreeHash(st.tree)
	if err != nil {
		return nil, false, refusal(err)
	}
	rel := filepath.Join(m.Name, toolstore.ShortHash(sum))
	if old != nil && old.Checksum == sum && old.Dir == rel && old.Resolved == resolved {
		return old, true, nil
	}
	approved, err := toolmanifest.Encode(m)
	if err != nil {
		return nil, false, err
	}
	final := filepath.Join(in.Store.Root, rel)
	if old == nil || old.Dir != rel {
		// A directory left by an install that died before its lock
		// entry: nothing refers to it.
		if err := toolstore.RemoveTree(final); err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(final, 0o700); err != nil {
			return nil, false, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
		}
		if err := os.Rename(st.tree, filepath.Join(final, toolstore.TreeDir)); err != nil {
			return nil, false, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
		}
		for name, data := range map[string][]byte{toolstore.ApprovedName: approved, toolstore.SchemaName: s.schema, toolstore.DocName: s.doc} {
			if err := os.WriteFile(filepath.Join(final, name), data, 0o444); err != nil {
				return nil, false, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
			}
		}
		if err := readOnly(filepath.Join(final, toolstore.TreeDir)); err != nil {
			return nil, false, err
		}
	}
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	t := &toolstore.Tool{Name: m.Name, Version: m.Version, Source: src.Locked(), Ref: src.Ref, Resolved: resolved,
		Checksum: sum, Dir: rel, Installed: now().UTC().Truncate(time.Second)}
	if err := in.Store.Update(func(l *toolstore.Lock) error {
		l.Tools[m.Name] = t
		return nil
	}); err != nil {
		return nil, false, err
	}
	if old != nil && old.Dir != rel {
		if err := toolstore.RemoveTree(in.Store.Path(old)); err != nil {
			return t, false, err
		}
	}
	return t, false, nil
}

// Remove deletes name's lock entry, then its directory.
func (in *Installer) Remove(name string) (*toolstore.Tool, error) {
	var gone *toolstore.Tool
	if err := in.Store.Update(func(l *toolstore.Lock) error {
		t, err := l.Get(name)
		if err != nil {
			return err
		}
		gone = t
		delete(l.Tools, name)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := toolstore.RemoveTree(in.Store.Path(gone)); err != nil {
		return gone, err
	}
	// The tool's own directory, empty once its last version is gone.
	os.Remove(filepath.Dir(in.Store.Path(gone)))
	return gone, nil
}

// readOnly takes write permission away from every file and directory of
// the installed tree: what runs is what was hashed.
func readOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.Chmod(p, info.Mode().Perm()&^0o222)
		}
		return nil
	})
	// Directories last, deepest first: their files are changed already.
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = os.Chmod(dirs[i], 0o555)
	}
	if err != nil {
		return fmt.Errorf("tool store: make the tree read-only: %v: %w", err, catalog.ErrIO)
	}
	return nil
}
