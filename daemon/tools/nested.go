package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// maxScanDirs bounds one walk; a larger workspace is walked that far and
// the call is told the rest was not.
const maxScanDirs = 20000

// setAsideTag is added to the name of what is set aside.
const setAsideTag = ".contextd-set-aside-"

// nestedHostRun lists the host-run paths below the top level of root that
// exist, relative to root. complete is false when the walk stopped at
// maxScanDirs.
func nestedHostRun(root string) (found []string, complete bool) {
	dirs := 0
	var walk func(rel string) bool
	walk = func(rel string) bool {
		if dirs++; dirs > maxScanDirs {
			return false
		}
		ents, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			return true // gone or unreadable: nothing the host reads there either
		}
		for _, e := range ents {
			name := e.Name()
			child := name
			if rel != "" {
				child = rel + "/" + name
			}
			if h, ok := workspace.HostRunAt(child); ok {
				if rel != "" && strings.Count(h.Path, "/") == 0 {
					found = append(found, child)
				}
				continue // a host-run entry is taken whole, never walked
			}
			if strings.EqualFold(name, ".vscode") && e.IsDir() {
				for _, f := range []string{"tasks.json", "settings.json"} {
					if _, err := os.Lstat(filepath.Join(root, child, f)); err == nil && rel != "" {
						found = append(found, child+"/"+f)
					}
				}
				continue
			}
			if e.IsDir() && !scanSkip[name] {
				if !walk(child) {
					return false
				}
			}
		}
		return true
	}
	complete = walk("")
	return found, complete
}

// setAsideNested renames every nested host-run path of root that was
// created or changed since since (its change time, or anything's below
// it), except those in shielded (read-only during the call), and returns
// what it did, one sentence each.
func setAsideNested(root string, since time.Time, shielded []string) []string {
	found, complete := nestedHostRun(root)
	var out []string
	if !complete {
		out = append(out, fmt.Sprintf("the workspace has more than %d directories: agent configuration below the first %d was not checked after the call", maxScanDirs, maxScanDirs))
	}
	for _, rel := range found {
		p := filepath.Join(root, rel)
		if contains(shielded, p) || !changedSince(p, since) {
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
// change time, which no process can set) at or after since. The kernel
// stamps change times from a clock that lags by up to a tick: a small
// margin before since is counted in.
func changedSince(p string, since time.Time) bool {
	limit := since.Add(-50 * time.Millisecond).UnixNano()
	changed := false
	n := 0
	filepath.WalkDir(p, func(q string, _ os.DirEntry, err error) error {
		if n++; err != nil || n > maxScanDirs {
			changed = changed || n > maxScanDirs // too much to look at: set aside
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
