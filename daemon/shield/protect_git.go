package shield

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/contextd/contextd/daemon/gitguard"
)

// gitProtected returns how the sandbox shows the git entries l of the
// workspace at root (gitguard.Find): the files git reads that can name a
// program (config, config.worktree, commondir, a worktree's gitdir, the
// .git files of submodule and worktree checkouts, the root's .git when it
// is a file, includes in the workspace) and the hook directories
// (hooks, core.hooksPath in the workspace), each read-only; and the pins:
// each gitdir (.git, .git/modules/X, .git/worktrees/X) and every directory
// between the root and a read-only path, bound onto itself, because a
// mount point cannot be renamed, exchanged or removed while its parent
// directory can (a read-only .git/config is worth nothing if .git can be
// moved aside and replaced by a copy). Paths that do not exist, or are
// symbolic links, cannot be bound: the guard's fingerprint (gitguard)
// covers them after the call.
func gitProtected(root string, l gitguard.Layout) (readOnly, pins []string) {
	pin := map[string]bool{}
	addPins := func(rel string) {
		for d := filepath.Dir(rel); d != "." && d != "/"; d = filepath.Dir(d) {
			pin[d] = true
		}
	}
	for _, rel := range append(append([]string{}, l.Files...), l.Dirs...) {
		p := filepath.Join(root, rel)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			readOnly = append(readOnly, p)
			addPins(rel)
		}
	}
	for _, g := range l.Gitdirs {
		pin[g] = true
		addPins(g)
	}
	for rel := range pin {
		p := filepath.Join(root, rel)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && !isUnder(readOnly, p) {
			pins = append(pins, p)
		}
	}
	slices.Sort(pins)
	return readOnly, pins
}

// isUnder: p is one of the read-only paths or below one (a pin there
// would make it writable again).
func isUnder(ro []string, p string) bool {
	for _, r := range ro {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
