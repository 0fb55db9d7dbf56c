package gitguard

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// git runs the real git in dir with a fixed identity and no user config.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// repo makes a repository with one commit in a new directory.
func repo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

func write(t testing.TB, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

const evil = "[core]\n\tfsmonitor = \"touch /tmp/pwned; :\"\n"

// tree is the content of every file below dir (not objects, index, logs):
// what a revert must give back.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (d.Name() == "objects" || d.Name() == "logs") {
			return filepath.SkipDir
		}
		fi, _ := os.Lstat(p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.Mode().IsRegular() && d.Name() != "index":
			b, _ := os.ReadFile(p)
			out[rel] = fi.Mode().String() + " " + string(b)
		case fi.IsDir():
			out[rel] = "dir"
		}
		return nil
	})
	return out
}

// Every way of planting something for the host's git, done directly on the
// workspace (as a call could if the read-only mounts were missing): Check
// finds it, puts back what was there, keeps a copy of the plant, and names
// the path.
func TestCheckReverts(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		attack func(t *testing.T, dir string)
		named  string
	}{
		{name: "config", named: ".git/config", attack: func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(evil)
			f.Close()
		}},
		{name: "hook", named: ".git/hooks/pre-commit", attack: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".git/hooks/pre-commit"), "#!/bin/sh\ntouch /tmp/pwned\n", 0o755)
		}},
		{name: "hook-sample-made-executable-name", named: ".git/hooks/pre-push", attack: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, ".git/hooks/pre-push.sample"), filepath.Join(dir, ".git/hooks/pre-push"))
		}},
		{name: "hooks-symlink", named: ".git/hooks", attack: func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, ".git/hooks"))
			os.Symlink("../evilhooks", filepath.Join(dir, ".git/hooks"))
		}},
		{name: "commondir", named: ".git/commondir", attack: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".git/commondir"), "../evil\n", 0o644)
		}},
		{name: "config-worktree", named: ".git/config.worktree", attack: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".git/config.worktree"), evil, 0o644)
		}},
		{name: "rename", named: ".git", attack: func(t *testing.T, dir string) {
			cp := exec.Command("cp", "-a", filepath.Join(dir, ".git"), filepath.Join(dir, "copy"))
			if out, err := cp.CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			write(t, filepath.Join(dir, "copy/config"), evil, 0o644)
			os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "sub-old"))
			os.Rename(filepath.Join(dir, "copy"), filepath.Join(dir, ".git"))
		}},
		{name: "gitdir-file", named: ".git", attack: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "moved"))
			write(t, filepath.Join(dir, ".git"), "gitdir: evil\n", 0o644)
		}},
		{name: "include", named: "inc.cfg",
			setup: func(t *testing.T, dir string) { git(t, dir, "config", "include.path", "../inc.cfg") },
			attack: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "inc.cfg"), evil, 0o644)
			}},
		{name: "hookspath-missing", named: ".githooks",
			setup: func(t *testing.T, dir string) { git(t, dir, "config", "core.hooksPath", ".githooks") },
			attack: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, ".githooks/pre-commit"), "#!/bin/sh\ntouch /tmp/pwned\n", 0o755)
			}},
		{name: "module", named: ".git/modules/evil/config", attack: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".git/modules/evil/HEAD"), "ref: refs/heads/main\n", 0o644)
			write(t, filepath.Join(dir, ".git/modules/evil/config"), evil, 0o644)
		}},
		{name: "worktree-commondir", named: ".git/worktrees/wt/commondir",
			setup: func(t *testing.T, dir string) { git(t, dir, "worktree", "add", "-q", "-b", "wtb", "wt") },
			attack: func(t *testing.T, dir string) {
				os.Remove(filepath.Join(dir, ".git/worktrees/wt/commondir"))
				write(t, filepath.Join(dir, ".git/worktrees/wt/commondir"), "../../../evil\n", 0o644)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := repo(t)
			if c.setup != nil {
				c.setup(t, dir)
			}
			before := tree(t, dir)
			s, err := Take(dir)
			if err != nil {
				t.Fatal(err)
			}
			c.attack(t, dir)
			q := t.TempDir()
			r := s.Check(q)
			if r.Failed() {
				t.Fatalf("revert failed: %v", r.Warnings())
			}
			w := strings.Join(r.Warnings(), "\n")
			if !strings.Contains(w, c.named) {
				t.Errorf("warnings do not name %s:\n%s", c.named, w)
			}
			after := tree(t, dir)
			for k, v := range before {
				if after[k] != v && !strings.HasSuffix(k, ".sample") { // samples never run: not watched
					t.Errorf("%s not put back (now %.40q)", k, after[k])
				}
			}
			for k, v := range after {
				if _, ok := before[k]; !ok && (v != "dir" || k == ".githooks") && runs(k) {
					t.Errorf("%s left in place: %.40q", k, v)
				}
			}
			if r.Quarantine == "" || !planted(t, r.Quarantine) {
				t.Errorf("no copy of what was planted in the quarantine %q", r.Quarantine)
			}
			// And the host's git of this repository runs nothing now.
			git(t, dir, "status")
		})
	}
}

// planted: the quarantine holds something (a file or a link's record).
func planted(t *testing.T, dir string) bool {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n > 0
}

// Ordinary git work changes none of what the guard watches, or only in ways
// that cannot run anything: a new repository, a new worktree.
func TestCheckBenign(t *testing.T) {
	t.Run("init", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Take(dir)
		if err != nil {
			t.Fatal(err)
		}
		git(t, dir, "init", "-q")
		git(t, dir, "commit", "-q", "--allow-empty", "-m", "x")
		if r := s.Check(t.TempDir()); len(r.Changes) > 0 {
			t.Errorf("git init reported: %v", r.Warnings())
		}
		if _, err := os.Stat(filepath.Join(dir, ".git/config")); err != nil {
			t.Errorf("the new repository lost its config: %v", err)
		}
	})
	t.Run("work", func(t *testing.T) {
		dir := repo(t)
		s, err := Take(dir)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "a"), "a\n", 0o644)
		git(t, dir, "add", "a")
		git(t, dir, "commit", "-q", "-m", "a")
		git(t, dir, "checkout", "-q", "-b", "feature")
		git(t, dir, "worktree", "add", "-q", "wt")
		git(t, dir, "stash", "list")
		git(t, dir, "gc", "-q")
		if r := s.Check(t.TempDir()); len(r.Changes) > 0 {
			t.Errorf("ordinary work reported: %v", r.Warnings())
		}
		git(t, filepath.Join(dir, "wt"), "status")
	})
	t.Run("created-evil", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Take(dir)
		if err != nil {
			t.Fatal(err)
		}
		git(t, dir, "init", "-q")
		f, _ := os.OpenFile(filepath.Join(dir, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(evil)
		f.Close()
		r := s.Check(t.TempDir())
		if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, ".git/config") || r.Failed() {
			t.Errorf("a created repository with a planted config: %s", w)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			t.Errorf("the created repository with a planted config is still there")
		}
	})
}

// A link planted where the guard writes must not make it write or remove
// anything outside the workspace.
func TestCheckLinks(t *testing.T) {
	dir := repo(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "pre-commit"), "keep\n", 0o644)
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir, ".git/hooks"), filepath.Join(dir, "hooks-old"))
	os.Symlink(outside, filepath.Join(dir, ".git/hooks"))
	r := s.Check(t.TempDir())
	if r.Failed() {
		t.Fatalf("revert failed: %v", r.Warnings())
	}
	if b, err := os.ReadFile(filepath.Join(outside, "pre-commit")); err != nil || string(b) != "keep\n" {
		t.Errorf("outside the workspace changed: %q %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, ".git/hooks")); err != nil || !fi.IsDir() {
		t.Errorf(".git/hooks not a directory again: %v", err)
	}
}

// A change that cannot be reverted is said loudly: a warning marked
// SECURITY and an error.
func TestCheckFailsLoudly(t *testing.T) {
	dir := repo(t)
	big := bytes.Repeat([]byte("# padding\n"), maxKeep/10+1)
	write(t, filepath.Join(dir, ".git/config"), string(big), 0o644)
	s, err := Take(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".git/config"), evil, 0o644)
	r := s.Check(t.TempDir())
	if !r.Failed() || r.Err() == nil {
		t.Fatalf("an unrevertable change was not reported as failed: %v", r.Warnings())
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "SECURITY") || !strings.Contains(w, ".git/config") {
		t.Errorf("warning: %s", w)
	}
}

// Find sees submodules, worktrees, hooksPath and includes, and nothing
// outside the workspace.
func TestFind(t *testing.T) {
	dir := repo(t)
	git(t, dir, "config", "core.hooksPath", ".husky")
	git(t, dir, "config", "include.path", "../shared.cfg")
	git(t, dir, "config", "--add", "include.path", "../../outside.cfg")
	write(t, filepath.Join(dir, "shared.cfg"), "[includeIf \"gitdir:/\"]\n\tpath = sub.cfg\n", 0o644)
	write(t, filepath.Join(dir, ".git/modules/a/b/HEAD"), "ref: refs/heads/x\n", 0o644)
	write(t, filepath.Join(dir, ".gitmodules"), "[submodule \"x\"]\n\tpath = lib/x\n[submodule \"y\"]\n\tpath = ../../etc\n", 0o644)
	git(t, dir, "worktree", "add", "-q", "-b", "w", "wt")
	l := Find(dir)
	for _, want := range []string{".git/config", ".git/modules/a/b/config", ".git/worktrees/wt/commondir", "wt/.git", "lib/x/.git", "shared.cfg", "sub.cfg"} {
		if !slices.Contains(l.Files, want) {
			t.Errorf("files %v lack %s", l.Files, want)
		}
	}
	for _, want := range []string{".git/hooks", ".husky", ".git/modules/a/b/hooks"} {
		if !slices.Contains(l.Dirs, want) {
			t.Errorf("dirs %v lack %s", l.Dirs, want)
		}
	}
	for _, p := range append(l.Files, l.Dirs...) {
		if strings.HasPrefix(p, "..") {
			t.Errorf("outside the workspace: %s", p)
		}
	}
	if !slices.Equal(l.Gitdirs, []string{".git", ".git/modules/a/b", ".git/worktrees/wt"}) {
		t.Errorf("gitdirs %v", l.Gitdirs)
	}
}

// runs: a file at k could make git run something (what the guard must not
// leave behind; an empty directory or a HEAD it may).
func runs(k string) bool {
	b := filepath.Base(k)
	return b == "config" || b == "config.worktree" || b == "commondir" || b == ".git" || k == "inc.cfg" ||
		strings.Contains(k, "hooks/") || k == ".githooks"
}

// A relative core.hooksPath in the user's own config applies to every
// repository: it is watched too.
func TestFindUserHooksPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	write(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n", 0o644)
	dir := repo(t)
	if l := Find(dir); !slices.Contains(l.Dirs, ".githooks") {
		t.Errorf("dirs %v lack .githooks", l.Dirs)
	}
}
