package gitguard

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Layout lists, relative to the workspace root, what the host's git reads
// on its own in a workspace and could be made to run a program from.
type Layout struct {
	// Gitdirs are the repository directories inside the workspace: the
	// root's .git (or the directory its "gitdir:" file names, when that is
	// inside), and below it every submodule's (modules/...) and worktree's
	// (worktrees/X) administrative directory.
	Gitdirs []string
	// Files are files git reads that can name a program or send git to
	// another repository: each gitdir's config, config.worktree and
	// commondir, a worktree's gitdir, the .git files of submodule and
	// worktree checkouts, the root's .git when it is a file, and config
	// includes that lie in the workspace.
	Files []string
	// Dirs are directories every file of which git may run: each gitdir's
	// hooks, and core.hooksPath when it names a directory of the workspace.
	Dirs []string
}

// Bounds of one Find, so that a workspace with a huge or hostile .git cannot
// make every call slow: more gitdirs than this are not looked at (see
// docs/sandbox.md, "Git").
const (
	maxGitdirs      = 256
	maxModuleDepth  = 8
	maxIncludeDepth = 5
	maxGitFile      = 4 << 10 // a "gitdir:" file
)

// Find reads the layout of the workspace at root as it is now. It follows
// no symbolic link below root: a link is itself an entry (its target is
// not git's business here, and following it could leave the workspace).
func Find(root string) Layout {
	f := finder{root: root, seen: map[string]bool{}}
	switch fi, err := os.Lstat(filepath.Join(root, ".git")); {
	case err != nil:
	case fi.IsDir():
		f.gitdir(".git")
	case fi.Mode().IsRegular():
		f.files = append(f.files, ".git")
		if g := f.gitFileTarget(".git"); g != "" && f.isDir(g) {
			f.gitdir(g)
		}
	}
	// The user's own config may point a relative core.hooksPath into
	// every repository (git takes it from the work tree).
	for _, g := range userConfigs() {
		if data, err := os.ReadFile(g); err == nil && len(f.gitdirs) > 0 {
			f.hooksPath(ParseConfig(data), ".")
		}
	}
	if data, ok := f.read(".gitmodules"); ok {
		for _, e := range ParseConfig(data) {
			if e.Section == "submodule" && e.Key == "path" {
				if rel, ok := f.inside(filepath.Join(root, e.Value, ".git")); ok {
					f.files = append(f.files, rel)
				}
			}
		}
	}
	return Layout{Gitdirs: uniq(f.gitdirs), Files: uniq(f.files), Dirs: uniq(f.dirs)}
}

type finder struct {
	root                 string
	gitdirs, files, dirs []string
	seen                 map[string]bool
}

// gitdir adds the repository directory g (relative) and what lies in it.
func (f *finder) gitdir(g string) {
	if f.seen[g] || len(f.gitdirs) >= maxGitdirs {
		return
	}
	f.seen[g] = true
	f.gitdirs = append(f.gitdirs, g)
	for _, n := range []string{"config", "config.worktree", "commondir"} {
		f.files = append(f.files, filepath.Join(g, n))
	}
	f.dirs = append(f.dirs, filepath.Join(g, "hooks"))
	worktree := "" // where a relative core.hooksPath is taken from
	if g == ".git" || !strings.Contains(g, "/") {
		worktree = "."
	}
	f.config(filepath.Join(g, "config"), worktree, 0)
	f.modules(filepath.Join(g, "modules"), 0)
	if names, err := f.list(filepath.Join(g, "worktrees")); err == nil {
		for _, n := range names {
			w := filepath.Join(g, "worktrees", n)
			if !f.isDir(w) || f.seen[w] || len(f.gitdirs) >= maxGitdirs {
				continue
			}
			f.seen[w] = true
			f.gitdirs = append(f.gitdirs, w)
			for _, n := range []string{"commondir", "config.worktree", "gitdir"} {
				f.files = append(f.files, filepath.Join(w, n))
			}
			if data, ok := f.read(filepath.Join(w, "gitdir")); ok {
				p := strings.TrimSpace(string(firstLine(data)))
				if !filepath.IsAbs(p) {
					p = filepath.Join(f.root, w, p)
				}
				if rel, ok := f.inside(p); ok {
					f.files = append(f.files, rel)
				}
			}
		}
	}
}

// modules adds every submodule gitdir below dir (git names them by the
// submodule's name, which may hold slashes): a directory with a HEAD or a
// config is one.
func (f *finder) modules(dir string, depth int) {
	if depth > maxModuleDepth {
		return
	}
	names, err := f.list(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		d := filepath.Join(dir, n)
		if !f.isDir(d) {
			continue
		}
		if f.isFile(filepath.Join(d, "HEAD")) || f.isFile(filepath.Join(d, "config")) {
			f.gitdir(d)
		} else {
			f.modules(d, depth+1)
		}
	}
}

// config adds what a config file sends git to: core.hooksPath in the
// workspace (relative to worktree, "" when unknown) and includes in the
// workspace, themselves read the same way.
func (f *finder) config(file, worktree string, depth int) {
	data, ok := f.read(file)
	if !ok {
		return
	}
	entries := ParseConfig(data)
	f.hooksPath(entries, worktree)
	for _, e := range entries {
		switch {
		case (e.Section == "include" && e.Subsection == "" || e.Section == "includeif") && e.Key == "path" && e.Value != "":
			p := e.Value
			if strings.HasPrefix(p, "~") {
				continue // the user's home: not the workspace
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(f.root, filepath.Dir(file), p)
			}
			if rel, ok := f.inside(p); ok && depth < maxIncludeDepth {
				f.files = append(f.files, rel)
				f.config(rel, worktree, depth+1)
			}
		}
	}
}

// hooksPath adds the directories core.hooksPath names in the workspace
// (relative to worktree, "" when unknown).
func (f *finder) hooksPath(entries []Entry, worktree string) {
	for _, e := range entries {
		if e.Section != "core" || e.Subsection != "" || e.Key != "hookspath" || e.Value == "" {
			continue
		}
		p := e.Value
		if !filepath.IsAbs(p) {
			if worktree == "" || strings.HasPrefix(p, "~") {
				continue
			}
			p = filepath.Join(f.root, worktree, p)
		}
		if rel, ok := f.inside(p); ok && rel != "." {
			f.dirs = append(f.dirs, rel)
		}
	}
}

// userConfigs are the user's global git config files, where git looks.
func userConfigs() []string {
	var out []string
	if h, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(h, ".gitconfig"))
		if x := os.Getenv("XDG_CONFIG_HOME"); !filepath.IsAbs(x) {
			out = append(out, filepath.Join(h, ".config", "git", "config"))
		}
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		out = append(out, filepath.Join(x, "git", "config"))
	}
	return out
}

// gitFileTarget reads a "gitdir: X" file and returns X relative to the
// root when it lies inside, else "".
func (f *finder) gitFileTarget(rel string) string {
	data, ok := f.read(rel)
	if !ok {
		return ""
	}
	p, found := strings.CutPrefix(string(firstLine(data)), "gitdir:")
	if !found {
		return ""
	}
	p = strings.TrimSpace(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.root, filepath.Dir(rel), p)
	}
	if r, ok := f.inside(p); ok && r != "." {
		return r
	}
	return ""
}

// inside returns p relative to the root when it lies below it (lexically;
// the paths it yields are only ever opened without following links).
func (f *finder) inside(p string) (string, bool) {
	rel, err := filepath.Rel(f.root, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// read returns a small regular file's bytes, without following a link at
// any component.
func (f *finder) read(rel string) ([]byte, bool) {
	b, err := readBeneath(f.root, rel, maxConfig)
	return b, err == nil
}

func (f *finder) list(rel string) ([]string, error) { return listBeneath(f.root, rel) }

func (f *finder) isDir(rel string) bool {
	k, _ := kindBeneath(f.root, rel)
	return k == kindDir
}

func (f *finder) isFile(rel string) bool {
	k, _ := kindBeneath(f.root, rel)
	return k == kindFile
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return bytes.TrimRight(b, "\r")
}

func uniq(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
