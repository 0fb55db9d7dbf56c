package homeview

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// onPath returns the presets of ps one of whose Programs is on the caller's
// PATH: an entry by that name, other than a directory, in an absolute
// directory of PATH that is not on the deny-list. The mode is not checked:
// a program that is not one costs a scrubbed configuration file in the
// view, never a secret.
func (r *resolver) onPath(ps []Preset) []Preset {
	if len(ps) == 0 {
		return nil
	}
	var dirs []string
	for _, dir := range filepath.SplitList(r.h.Env["PATH"]) {
		if !filepath.IsAbs(dir) {
			continue // relative: the workspace, which the agent writes
		}
		dir = filepath.Clean(dir)
		if r.h.Workspace != "" && within(dir, r.h.Workspace) {
			continue // node_modules/.bin and the like: the agent writes them too
		}
		if slices.Contains(dirs, dir) {
			continue
		}
		if d, bad := denied(dir, r.deny); bad && within(dir, d.Path) {
			continue // hidden inside: nothing there runs
		}
		dirs = append(dirs, dir)
	}
	names := programsIn(dirs)
	var out []Preset
	for _, p := range ps {
		if slices.ContainsFunc(p.Programs, func(n string) bool { return names[n] }) {
			out = append(out, p)
		}
	}
	return out
}

// allPrograms are the Programs of every preset, looked up together.
var allPrograms = func() []string {
	var out []string
	for _, p := range Presets {
		out = append(out, p.Programs...)
	}
	return out
}()

// Looking every program up in every PATH directory is a few hundred lstat
// calls when few are there, which each call would pay (more than the rest
// of Resolve). What is found in a list of directories is kept instead, and
// used again while no directory of the list has changed: one stat per
// directory. A directory's modification time changes whenever an entry is
// added, removed or renamed in it, which is all a lookup by name depends on.
// A scan is not kept when a directory changed too recently for its
// timestamp to tell a later change apart (the file system's clock is
// coarser than a scan): the next call scans again.
const (
	pathCacheMax = 64
	racyWindow   = 2 * time.Second
)

var pathCache struct {
	sync.Mutex
	m map[string]*pathScan
}

// pathScan is what one list of directories held.
type pathScan struct {
	stamps []dirStamp
	names  map[string]bool // allPrograms present in one of the directories; read-only once kept
}

// dirStamp identifies a directory's state: which directory it is (a PATH
// entry may be a link that moves) and when its entries last changed. The
// modification time can be set back (tar -p, cp -a, touch -d) and is not
// moved by chmod; the change time is moved by both and set by no process,
// so it is part of the stamp too.
type dirStamp struct {
	ok           bool // it is a directory
	dev, ino     uint64
	mtime, ctime int64 // nanoseconds
}

func stampOf(dir string) dirStamp {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return dirStamp{}
	}
	s := dirStamp{ok: true, mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
		s.ctime = st.Ctim.Nano()
	}
	return s
}

// programsIn returns which of allPrograms are in one of dirs.
func programsIn(dirs []string) map[string]bool {
	key := strings.Join(dirs, "\x00")
	// Stamped before the scan: a change made during it moves a stamp, and
	// the next call scans again.
	stamps := make([]dirStamp, len(dirs))
	for i, d := range dirs {
		stamps[i] = stampOf(d)
	}
	pathCache.Lock()
	kept := pathCache.m[key]
	pathCache.Unlock()
	if kept != nil && slices.Equal(kept.stamps, stamps) {
		return kept.names
	}
	names := map[string]bool{}
	for _, prog := range allPrograms {
		for i, d := range dirs {
			if !stamps[i].ok {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(d, prog)); err == nil && !fi.IsDir() {
				names[prog] = true
				break
			}
		}
	}
	now := time.Now()
	for _, s := range stamps {
		if s.ok && now.Sub(time.Unix(0, s.mtime)) < racyWindow {
			return names
		}
	}
	pathCache.Lock()
	if pathCache.m == nil || len(pathCache.m) >= pathCacheMax {
		pathCache.m = map[string]*pathScan{}
	}
	pathCache.m[key] = &pathScan{stamps: stamps, names: names}
	pathCache.Unlock()
	return names
}
