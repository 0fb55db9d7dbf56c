package shield

import (
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/workspace"
)

// The walk before every safe_bash call (nested.go) reads each directory of
// the workspace; in a repository of thousands of directories that cost tens
// of milliseconds a call, though between two calls almost none of them
// changed. dirIndex remembers what a walk read of each directory with the
// directory's change time, which the kernel sets on every entry made,
// removed or renamed in it and no process can set back: a directory whose
// identity and change time are as remembered is not read again, one stat
// instead of an open, getdents and close.
//
// The change time has the resolution of the kernel's clock tick: a change
// in the same tick as the read, after it, leaves the time as it was read.
// An entry whose change time lies within ctimeMargin of its read is
// therefore "racy" (git's index has the same rule) and read again next
// time, until it has aged.
var dirIndex = &scanIndex{roots: map[string]*rootIndex{}}

// indexRoots bounds the workspaces remembered (the least recently walked
// goes first); indexDirs bounds one workspace's directories (MaxScanDirs).
const indexRoots = 16

type scanIndex struct {
	mu    sync.Mutex
	roots map[string]*rootIndex
}

type rootIndex struct {
	dirs map[string]dirRecord // by directory, relative to the root
	used time.Time
}

// dirRecord is one directory as read: its identity and change time, and
// the entries the walk acts on (subdirectories and host-run paths; plain
// files are not kept).
type dirRecord struct {
	dev, ino uint64
	ctime    int64
	racy     bool
	ents     []dirEnt
}

// entries lists the directory rel of root for the walk: from the index when
// the directory is unchanged since it was read, else read and remembered.
func (x *scanIndex) entries(root, rel string) ([]dirEnt, error) {
	dir := filepath.Join(root, rel)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		x.forget(root, rel)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		x.forget(root, rel)
		return nil, unix.ENOTDIR
	}
	x.mu.Lock()
	ri := x.roots[root]
	if ri != nil {
		ri.used = time.Now()
		if r, ok := ri.dirs[rel]; ok && !r.racy && r.dev == st.Dev && r.ino == st.Ino && r.ctime == st.Ctim.Nano() {
			x.mu.Unlock()
			return r.ents, nil
		}
	}
	x.mu.Unlock()
	// Read after the stat: a change in between is in what is read and
	// also moves the change time past the one remembered, so it is read
	// again next time; never the other way round.
	all, err := readDirTypes(dir)
	if err != nil {
		return nil, err
	}
	ents := make([]dirEnt, 0, len(all)/4)
	for _, e := range all {
		child := e.name
		if rel != "" {
			child = rel + "/" + e.name
		}
		if _, hr := workspace.HostRunAt(child); e.dir || hr {
			ents = append(ents, e)
		}
	}
	rec := dirRecord{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano(), ents: ents,
		racy: st.Ctim.Nano() >= time.Now().Add(-ctimeMargin).UnixNano()}
	x.mu.Lock()
	defer x.mu.Unlock()
	ri = x.roots[root]
	if ri == nil {
		x.evict()
		ri = &rootIndex{dirs: map[string]dirRecord{}}
		x.roots[root] = ri
	}
	ri.used = time.Now()
	if _, ok := ri.dirs[rel]; ok || len(ri.dirs) < MaxScanDirs {
		ri.dirs[rel] = rec
	}
	return ents, nil
}

// retain drops the records of directories a whole walk of root no longer
// reached (removed, or moved below a skipped one): without it they would
// stay, and fill the workspace's bound. The walk's own dirs are the live
// set; nothing is done while the index holds no more than it.
func (x *scanIndex) retain(root string, dirs []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ri := x.roots[root]
	if ri == nil || len(ri.dirs) <= len(dirs) {
		return
	}
	live := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		live[d] = true
	}
	for d := range ri.dirs {
		if !live[d] {
			delete(ri.dirs, d)
		}
	}
}

// forget drops what is remembered of rel (gone, or no longer a directory).
func (x *scanIndex) forget(root, rel string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ri := x.roots[root]; ri != nil {
		delete(ri.dirs, rel)
	}
}

// evict makes room for one more workspace. Callers hold mu.
func (x *scanIndex) evict() {
	if len(x.roots) < indexRoots {
		return
	}
	var oldest string
	var t time.Time
	for r, ri := range x.roots {
		if oldest == "" || ri.used.Before(t) {
			oldest, t = r, ri.used
		}
	}
	delete(x.roots, oldest)
}
