package cachelayer

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// removeTree removes path and everything below it. os.RemoveAll never
// follows a symlink (it unlinks the link) but stops at a directory the
// user may not read or write: overlayfs leaves work/work at mode 000,
// holding whiteouts after a crash, and toolchains make their caches read
// only (Go's module cache is 0555 throughout). Such directories are made
// 0700 first, through an os.Root, so that no chmod reaches outside path.
func removeTree(path string) error {
	err := os.RemoveAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if uerr := unlockTree(path); uerr != nil {
		return errors.Join(err, uerr)
	}
	return os.RemoveAll(path)
}

// unlockTree gives the owner rwx on every directory under path (path
// included), not following symlinks. It works from path's parent, as path
// itself may be a directory it cannot open yet.
func unlockTree(path string) error {
	parent, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer parent.Close()
	base := filepath.Base(path)
	if err := unlockDir(parent, base); err != nil {
		return err
	}
	r, err := parent.OpenRoot(base)
	if err != nil {
		return err
	}
	defer r.Close()
	return fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == "." {
			// An unreadable directory is reported after it was visited
			// (and made readable): the second RemoveAll will say.
			return nil
		}
		return unlockDir(r, p)
	})
}

// unlockDir gives the owner rwx on name, if it is a directory. Root.Chmod
// follows a symlink (within r); name was just seen not to be one, and no
// call runs in these layers while they are deleted.
func unlockDir(r *os.Root, name string) error {
	fi, err := r.Lstat(name)
	if err != nil || !fi.IsDir() {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o700 != 0o700 {
		return r.Chmod(name, perm|0o700)
	}
	return nil
}

// emptyDir removes what dir holds, keeping dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// CacheUsage is one cache's layer on disk.
type CacheUsage struct {
	Name string `json:"name"`
	// Bytes is the disk space it takes (allocated blocks, each file once).
	Bytes int64 `json:"bytes"`
	// Partial: a directory in it could not be read, and Bytes leaves out
	// what that holds. The size bound removes such a layer first.
	Partial bool `json:"partial,omitempty"`
	// LastUsed is when a call last released it, or when it was made.
	LastUsed time.Time `json:"last_used"`
}

// measure returns the caches in a workspace's directory, by name, with
// their sizes and last-used times. A missing directory has none.
func measure(dir string) ([]CacheUsage, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, ioError(err)
	}
	var out []CacheUsage
	for _, e := range entries {
		if !e.IsDir() || !cacheName.MatchString(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, ioError(err)
		}
		bytes, partial, err := du(p)
		if err != nil {
			return nil, ioError(err)
		}
		if partial {
			// Only the upper layer counts as unmeasurable: overlayfs
			// leaves work/work unreadable (mode 000) after every mount,
			// and the next Acquire empties it anyway.
			_, partial, err = du(filepath.Join(p, "upper"))
			if err != nil {
				return nil, ioError(err)
			}
		}
		out = append(out, CacheUsage{Name: e.Name(), Bytes: bytes, Partial: partial, LastUsed: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b CacheUsage) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// du sums the blocks allocated to everything under path, like du(1): each
// inode once (overlayfs hard-links a whiteout into both work/ and upper/),
// symlinks not followed. partial is set when a directory could not be
// read; what it holds is not counted. Entries removed during the walk are
// skipped: layers may be measured while a call writes to them.
func du(path string) (bytes int64, partial bool, err error) {
	seen := map[[2]uint64]bool{}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case errors.Is(err, fs.ErrPermission):
				partial = true
				return nil
			}
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			bytes += info.Size()
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		bytes += st.Blocks * 512
		return nil
	})
	return bytes, partial, err
}

// meta is a workspace directory's .layer.json, written once when the
// directory is made. (When each cache was last used is its directory's
// mtime.)
type meta struct {
	// Key names the layers: the workspace root, its identity, the sandbox.
	Key
}

// readMeta reads dir's .layer.json (the zero meta and an error when it is
// missing or damaged).
func readMeta(dir string) (meta, error) {
	var md meta
	f, err := os.OpenFile(filepath.Join(dir, metaName), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return md, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return md, err
	}
	if err := json.Unmarshal(b, &md); err != nil {
		return meta{}, err
	}
	return md, nil
}

// writeMeta replaces dir's .layer.json whole (a temporary file renamed
// over it). The caller holds dir's lock, so the temporary name is its own.
func writeMeta(dir string, md meta) error {
	b, err := json.Marshal(md)
	if err != nil {
		return ioError(err)
	}
	tmp := filepath.Join(dir, metaName+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return ioError(err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, metaName))
	}
	if err != nil {
		os.Remove(tmp)
		return ioError(err)
	}
	return nil
}
