package shield

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/workspace"
)

// Host-run configuration below the top level (sub/.claude/settings.json,
// sub/.vscode/tasks.json: an agent or editor started in sub runs it) cannot
// all get placeholders: any directory could hold one. safe_bash protects
// it in two steps instead (safe_write refuses it by name):
//   - before the call, what exists is found and shielded like the top
//     level's (read-only, its directories bound onto themselves);
//   - after the call, when no process of the sandbox is left, what was
//     created or changed during it is set aside under another name, which
//     no agent or editor reads, and the call is told.
//
// Between the two, while the call runs, a new nested file exists on the
// disk; a program that reads it at that moment sees it (docs/sandbox.md).

// scanSkip are directories not walked: git's own store (nothing there is
// read as an agent's or editor's project configuration) and package
// trees (nobody starts an agent or opens an editor in one; walking them
// would cost more than the call).
var scanSkip = map[string]bool{".git": true, "node_modules": true}

// MaxScanDirs bounds one walk; a larger workspace is walked that far and
// the call is told the rest was not.
const MaxScanDirs = 20000

// setAsideTag is added to the name of what is set aside.
const setAsideTag = ".contextd-set-aside-"

// Scan is what one walk of a workspace found: the nested host-run
// paths that exist, and every directory walked (relative to root), which
// the scan after the call looks at again.
type Scan struct {
	root     string
	Found    []string
	dirs     []string
	Complete bool
}

// ScanNested walks root for the host-run paths below its top level that
// exist (found, relative to root); complete is false when the walk stopped
// at MaxScanDirs.
func ScanNested(root string) *Scan {
	sc := &Scan{root: root, Complete: true}
	sc.walk("", true)
	if sc.Complete {
		dirIndex.retain(root, sc.dirs)
	}
	return sc
}

// walk reads the directory rel, records the host-run paths in it, and
// walks its subdirectories when deep. It returns false once the bound is
// reached.
func (sc *Scan) walk(rel string, deep bool) bool {
	if len(sc.dirs) >= MaxScanDirs {
		sc.Complete = false
		return false
	}
	sc.dirs = append(sc.dirs, rel)
	ents, err := dirIndex.entries(sc.root, rel)
	if err != nil {
		return true // gone or unreadable: nothing the host reads there either
	}
	for _, e := range ents {
		name := e.name
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		if h, ok := workspace.HostRunAt(child); ok {
			// The top level's own are the shield's (placeholders).
			if !strings.EqualFold(child, h.Path) {
				sc.Found = append(sc.Found, child)
			}
			continue // a host-run entry is taken whole, never walked
		}
		if e.dir && strings.EqualFold(name, ".vscode") {
			// Only two files of it are host-run; it is listed (and
			// read again after the call) but not walked below.
			if !sc.walk(child, false) {
				return false
			}
			continue
		}
		if deep && e.dir && !scanSkip[name] {
			if !sc.walk(child, true) {
				return false
			}
		}
	}
	return true
}

// after finds what the call may have planted: it reads again only the
// directories of the walk before it whose entries changed since since
// (their change time), and walks whole the directories it finds there
// that the walk before did not know (made or moved in by the call). Any
// new host-run entry is in one of them: making or renaming one changes
// the directory it is made in.
func (sc *Scan) after(since time.Time) *Scan {
	out := &Scan{root: sc.root, Complete: sc.Complete}
	known := make(map[string]bool, len(sc.dirs))
	for _, d := range sc.dirs {
		known[d] = true
	}
	limit := since.Add(-ctimeMargin).UnixNano()
	for _, d := range sc.dirs {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(sc.root, d), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Ctim.Nano() < limit {
			continue
		}
		if !out.walk(d, false) {
			break
		}
		// Subdirectories the walk before did not know are walked whole.
		ents, _ := os.ReadDir(filepath.Join(sc.root, d))
		for _, e := range ents {
			child := e.Name()
			if d != "" {
				child = d + "/" + child
			}
			if e.IsDir() && !known[child] && !scanSkip[e.Name()] {
				if _, hr := workspace.HostRunAt(child); !hr && !out.walk(child, true) {
					break
				}
			}
		}
	}
	return out
}

// ctimeMargin: the kernel stamps change times from a clock that lags by
// up to a tick, so a change right after since may carry a time a little
// before it.
const ctimeMargin = 50 * time.Millisecond

// SetAside renames every nested host-run path that the call (which
// started at since, after the walk before) created or changed, except
// those in kept (read-only during the call), and returns what it did,
// one sentence each.
func SetAside(before *Scan, since time.Time, kept []string) []string {
	sc := before.after(since)
	var out []string
	if !sc.Complete {
		out = append(out, fmt.Sprintf("the workspace has more than %d directories: agent configuration below the first %d was not checked after the call", MaxScanDirs, MaxScanDirs))
	}
	root := before.root
	// What existed before is looked at again too (it is few): in
	// safe_bash it was read-only, but nothing here relies on it.
	for _, rel := range append(sc.Found, before.Found...) {
		if _, err := os.Lstat(filepath.Join(root, rel)); err != nil {
			continue // set aside already (found twice), or gone
		}
		p := filepath.Join(root, rel)
		if contains(kept, p) || !changedSince(p, since) {
			continue
		}
		aside := fmt.Sprintf("%s%s%d", p, setAsideTag, time.Now().UnixNano())
		if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, aside, unix.RENAME_NOREPLACE); err != nil {
			out = append(out, fmt.Sprintf("%s was created or changed by the command: it is agent or editor configuration the host runs, and could not be set aside (%v): remove it before an agent or editor starts in %s", rel, err, filepath.Dir(rel)))
			continue
		}
		out = append(out, fmt.Sprintf("%s was created or changed by the command; it is agent or editor configuration the host runs, so it was set aside as %s: look at it before you put it back yourself", rel, filepath.Base(aside)))
	}
	return out
}

// changedSince reports whether p, or anything below it, changed (its
// change time, which no process can set) at or after since (less
// ctimeMargin).
func changedSince(p string, since time.Time) bool {
	limit := since.Add(-ctimeMargin).UnixNano()
	changed := false
	n := 0
	filepath.WalkDir(p, func(q string, _ os.DirEntry, err error) error {
		if n++; err != nil || n > MaxScanDirs {
			changed = changed || n > MaxScanDirs // too much to look at: set aside
			return filepath.SkipAll
		}
		var st unix.Stat_t
		if unix.Lstat(q, &st) == nil && st.Ctim.Nano() >= limit {
			changed = true
			return filepath.SkipAll
		}
		return nil
	})
	return changed
}

func contains(list []string, p string) bool {
	for _, q := range list {
		if q == p {
			return true
		}
	}
	return false
}

// direntBufs are readDirTypes' buffers, one per walk at a time rather than
// one per directory.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// dirEnt is one entry of a directory: its name, and whether it is a
// directory (not a link to one).
type dirEnt struct {
	name string
	dir  bool
}

// readDirTypes lists a directory with getdents64 alone: no stat per entry
// and none of os.File's bookkeeping, since the walk before every safe_bash
// call does this once per directory of the workspace. An entry whose type
// the file system does not report is looked at with lstat.
func readDirTypes(dir string) ([]dirEnt, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []dirEnt
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return out, unix.EIO
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			nm := string(name)
			if nm == "." || nm == ".." {
				continue
			}
			isDir := typ == unix.DT_DIR
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				isDir = unix.Lstat(filepath.Join(dir, nm), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
			}
			out = append(out, dirEnt{name: nm, dir: isDir})
		}
	}
}
