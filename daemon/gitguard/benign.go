package gitguard

import (
	"path/filepath"
	"strings"
)

// initKeys are the config keys a git entry created by a call may set and
// still be left in place: what `git init`, `git clone` and `git worktree add`
// write, none of which names a program git runs. A created config with any
// other key is reverted. (A changed config is always reverted: the existing
// ones are read-only in the sandbox, so a change means an attack.)
var initKeys = map[string]bool{
	"core.repositoryformatversion": true, // git init: the format number
	"core.filemode":                true, // git init: whether the executable bit is tracked
	"core.bare":                    true, // git init: a repository without a work tree
	"core.logallrefupdates":        true, // git init: keep reflogs
	"core.ignorecase":              true, // git init on a case-insensitive file system
	"core.precomposeunicode":       true, // git init on macOS file systems
	"core.symlinks":                true, // git init where links are not supported
	"core.worktree":                true, // git clone --separate-git-dir, submodules: a path, not a program
	"extensions.objectformat":      true, // git init --object-format=sha256
	"init.defaultbranch":           true, // a branch name
}

// initSectionKeys are the same for keys with a subsection (remote.NAME.url):
// section.key.
var initSectionKeys = map[string]bool{
	"remote.url":    true, // git clone: where it came from (a URL; "ext::" transports are refused by git's default protocol policy)
	"remote.fetch":  true, // git clone: a refspec
	"branch.remote": true, // git clone: the upstream remote's name
	"branch.merge":  true, // git clone: the upstream branch
}

// benign says whether a git entry that a call created (it did not exist
// before) may stay: it cannot make the host's git run anything. Everything
// else a call creates among git's entries is reverted.
func benign(root, p string, n node, l Layout) bool {
	base := filepath.Base(p)
	if d := hookDirOf(p, l); d != "" {
		// A sample hook is never run (git runs hooks by their exact
		// name); git init copies them from its templates.
		return n.kind == kindDir || n.kind == kindFile && strings.HasSuffix(base, ".sample")
	}
	switch {
	case p == ".git":
		// A repository created where none was (git init): its config and
		// hooks are judged one by one.
		return n.kind == kindDir
	case isDir(p, l):
		// A new hooks directory: its files are judged one by one.
		return n.kind == kindDir
	case n.kind != kindFile:
		return false
	case base == "config" || base == "config.worktree":
		return configBenign(n.data)
	case base == "commondir":
		// A worktree's commondir must lead back to the repository itself.
		return filepath.Clean(filepath.Join(filepath.Dir(p), strings.TrimSpace(string(n.data)))) == ".git"
	case base == "gitdir" && strings.HasPrefix(p, ".git/worktrees/"):
		// Where a worktree's checkout is: read by `git worktree list` and
		// prune only.
		return true
	case base == ".git":
		// A submodule's or worktree's checkout pointing into the
		// repository's own modules or worktrees.
		t := gitFileTarget(root, p, n.data)
		return strings.HasPrefix(t, ".git/modules/") || strings.HasPrefix(t, ".git/worktrees/")
	}
	return false
}

// configBenign: every key of the config is one of initKeys or
// initSectionKeys (a file too large to be kept is not benign).
func configBenign(data []byte) bool {
	if data == nil {
		return false
	}
	for _, e := range ParseConfig(data) {
		if e.Subsection == "" && initKeys[e.Section+"."+e.Key] {
			continue
		}
		if e.Subsection != "" && initSectionKeys[e.Section+"."+e.Key] {
			continue
		}
		return false
	}
	return true
}

// gitFileTarget is the cleaned, root-relative target of the "gitdir:" file
// at p ("" when it has none, or it lies outside the root).
func gitFileTarget(root, p string, data []byte) string {
	t, ok := strings.CutPrefix(string(firstLine(data)), "gitdir:")
	if !ok {
		return ""
	}
	t = strings.TrimSpace(t)
	if t == "" {
		return ""
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(root, filepath.Dir(p), t)
	}
	rel, err := filepath.Rel(root, filepath.Clean(t))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}
