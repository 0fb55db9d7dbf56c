package pages

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// load rebuilds the index from what a previous daemon left: committed outputs
// that have not expired stay; the rest of what is recognisably ours goes.
func (s *Store) load() error {
	dirs, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("pages: read directory %s: %w", s.dir, err)
	}
	now := s.now()
	for _, d := range dirs {
		// Only session directories of ours: named by a session key, and a
		// directory, not a symlink.
		if !d.IsDir() || len(d.Name()) != idLen || !isHex(d.Name()) {
			continue
		}
		key := d.Name()
		sdir := filepath.Join(s.dir, key)
		files, err := os.ReadDir(sdir)
		if err != nil {
			// Unreadable, so unusable: its outputs are unknown to this
			// daemon, which must still start.
			continue
		}
		seen := map[string]map[string]bool{} // id -> extensions present
		ours := 0
		for _, f := range files {
			id, ext, ok := strings.Cut(f.Name(), ".")
			if !ok || len(id) != idLen || !isHex(id) || !f.Type().IsRegular() ||
				ext != "out" && ext != "meta" && ext != "meta.tmp" {
				continue
			}
			if seen[id] == nil {
				seen[id] = map[string]bool{}
			}
			seen[id][ext] = true
			ours++
		}
		kept := 0
		for id, exts := range seen {
			if r := s.loadOne(key, id, exts, now); r != nil {
				s.index[id] = r
				s.total += r.Size
				kept++
				if exts["meta.tmp"] {
					os.Remove(filepath.Join(sdir, id+".meta.tmp"))
				}
				continue
			}
			// A file that cannot be removed is unreachable all the same
			// (not in the index); the next Open tries again.
			_ = s.remove(key, id)
		}
		if kept == 0 && ours == len(files) {
			// Nothing else in it: remove the empty session directory. No
			// Create can race with this; the store is not yet returned.
			os.Remove(sdir)
		}
	}
	// MaxTotal may have been lowered since.
	var gone []*record
	for s.total > s.maxTotal {
		id := s.oldest()
		gone = append(gone, s.index[id])
		s.drop(id)
	}
	_ = s.removeAll(gone)
	return nil
}

// loadOne returns the record of a committed, whole, unexpired output, or nil.
func (s *Store) loadOne(key, id string, exts map[string]bool, now time.Time) *record {
	if !exts["out"] || !exts["meta"] {
		return nil // written but never committed: a daemon stopped mid-call
	}
	r, err := s.readMeta(key, id)
	if err != nil || r.Session != key || !r.holesValid() {
		return nil
	}
	// A TTL lowered since applies to outputs already stored.
	if exp := r.Created.Add(s.ttl); exp.Before(r.Expires) {
		r.Expires = exp
	}
	if !now.Before(r.Expires) {
		return nil
	}
	fi, err := os.Lstat(filepath.Join(s.dir, key, id+".out"))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != r.Size {
		return nil
	}
	return r
}
