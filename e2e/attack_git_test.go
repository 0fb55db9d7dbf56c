//go:build e2e

package e2e

// Attacks on the host's git (issue 25, item 1): a sandboxed command plants
// something that the user's own git runs later on the host, outside any
// sandbox (core.fsmonitor on every `git status`, a hook on `git commit`), by
// replacing the repository the host's git finds rather than by writing its
// read-only config. Each attack runs through the real safe_bash symlink as
// the test user, in a repository of its own under the test user's home, with
// the default configuration; then the test checks the host: the repository's
// git entries are what they were, and the user's real git, run on the host
// (status, diff, log, commit), does not create the marker file a planted
// command would.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// gitAttack is one way of planting code for the host's git.
type gitAttack struct {
	name string
	// setup runs on the host as the test user, in a new repository with one
	// commit (or in an empty directory with noRepo).
	setup  string
	noRepo bool
	// attack runs in safe_bash in that workspace; MARK stands for the marker
	// file's path, PLANT for a config snippet setting core.fsmonitor to a
	// command that creates it.
	attack string
	// host runs on the host as the test user afterwards: the user's git.
	host string
	// watch are the workspace paths (besides .git) whose git entries must be
	// unchanged after the attack.
	watch []string
	// reverted is a path the result must name when the fingerprint, not a
	// mount, stopped the attack.
	reverted string
}

// hostGit is what a user does on the host after an agent's call: the
// commands an editor runs on its own, and a commit (hooks).
const hostGit = `git status; git diff; git log -1 --oneline; git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m host; true`

// plantConfig appends a core.fsmonitor that touches MARK to the config file
// named by its argument (a shell function in the attack scripts).
// submoduleSetup adds a submodule "sub" to the repository.
const submoduleSetup = `rm -rf ../gg-submodule-src && git init -q ../gg-submodule-src && git -C ../gg-submodule-src -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m sub &&
git -c protocol.file.allow=always submodule add -q ../gg-submodule-src sub && git -c user.name=u -c user.email=u@example.com commit -q -m 'add sub'`

// submoduleHost is the user's git in the superproject and in the submodule.
const submoduleHost = `git status; git diff; git submodule status; cd sub && git status; git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m host; true`

const plantConfig = `plant() { printf '[core]\n\tfsmonitor = "touch MARK; :"\n' >> "$1"; }
hook() { mkdir -p "$1" && for h in pre-commit post-commit post-checkout reference-transaction; do printf '#!/bin/sh\ntouch MARK\n' > "$1/$h" && chmod +x "$1/$h"; done; }
exchange() { python3 -c 'import ctypes,os,sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2)
print("exchange", sys.argv[1], sys.argv[2], r, os.strerror(ctypes.get_errno()) if r else "ok")' "$1" "$2"; }
`

var gitAttacks = []gitAttack{
	{
		// The issue's own reproduction.
		name:   "rename",
		attack: `cp -a .git /tmp/g && plant /tmp/g/config && hook /tmp/g/hooks; mv .git .git.old && cp -a /tmp/g .git; ls -a`,
	},
	{
		name:   "gitdir-file",
		attack: `cp -a .git evil && plant evil/config && hook evil/hooks; mv .git .git.old && echo 'gitdir: evil' > .git; rmdir .git && echo 'gitdir: evil' > .git; ls -a`,
	},
	{
		name:   "rename-exchange",
		attack: `cp -a .git evil && plant evil/config && hook evil/hooks; exchange .git evil; ls -a`,
	},
	{
		// A submodule's own repository, in .git/modules.
		name:   "submodule-config",
		setup:  submoduleSetup,
		attack: `plant .git/modules/sub/config; hook .git/modules/sub/hooks; ls -a .git/modules/sub`,
		host:   submoduleHost,
		watch:  []string{"sub/.git"},
	},
	{
		name:  "submodule-rename",
		setup: submoduleSetup,
		attack: `cp -a .git/modules/sub /tmp/s && plant /tmp/s/config && hook /tmp/s/hooks
mv .git/modules/sub .git/modules/sub.old && cp -a /tmp/s .git/modules/sub
mv .git/modules .git/modules.old && mkdir -p .git/modules && cp -a /tmp/s .git/modules/sub; ls -a .git/modules`,
		host:  submoduleHost,
		watch: []string{"sub/.git"},
	},
	{
		// The submodule's checkout: its .git file sent elsewhere.
		name:  "submodule-gitfile",
		setup: submoduleSetup,
		attack: `cp -a .git/modules/sub sub/evilgit && git config -f sub/evilgit/config --unset core.worktree; plant sub/evilgit/config; hook sub/evilgit/hooks
echo "gitdir: evilgit" > sub/.git || { mv sub/.git sub/.git.old && echo "gitdir: evilgit" > sub/.git; }
exchange sub/.git sub/evilgit
mv sub sub.old && mkdir sub && cp -a sub.old/evilgit sub/.git; ls -a sub`,
		host:  submoduleHost,
		watch: []string{"sub/.git"},
	},
	{
		name:  "worktree",
		setup: `git worktree add -q -b wtb wt`,
		attack: `cp -a .git evilc && plant evilc/config && hook evilc/hooks
echo ../../../evilc > .git/worktrees/wt/commondir
plant .git/worktrees/wt/config.worktree
cp -a .git/worktrees/wt /tmp/w && echo ../../../evilc > /tmp/w/commondir
mv .git/worktrees/wt .git/worktrees/wt.old && cp -a /tmp/w .git/worktrees/wt
mv .git/worktrees .git/worktrees.old && mkdir -p .git/worktrees && cp -a /tmp/w .git/worktrees/wt
echo "gitdir: $PWD/evilc" > wt/.git || { mv wt/.git wt/.git.old && echo "gitdir: $PWD/evilc" > wt/.git; }
mv wt wt.old && mkdir wt && echo "gitdir: $PWD/evilc" > wt/.git; ls -a .git/worktrees wt`,
		host:  `cd wt && git status; git diff; git log -1; git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m host; true`,
		watch: []string{"wt/.git"},
	},
	{
		// core.hooksPath names a directory of the workspace that exists.
		name:   "hookspath",
		setup:  `mkdir .husky && printf '#!/bin/sh\nexit 0\n' > .husky/pre-commit && chmod +x .husky/pre-commit && git config core.hooksPath .husky`,
		attack: `hook .husky; mv .husky .husky.old && hook .husky; ls -a .husky`,
		watch:  []string{".husky"},
	},
	{
		// core.hooksPath names a directory of the workspace that does not
		// exist yet: nothing can be mounted there, the fingerprint catches it.
		name:     "hookspath-missing",
		setup:    `git config core.hooksPath .githooks`,
		attack:   `hook .githooks; ls -a .githooks`,
		watch:    []string{".githooks"},
		reverted: ".githooks",
	},
	{
		// Files git reads that the repository did not have: a commondir
		// sends git to another repository's config.
		name:     "commondir",
		attack:   `cp -a .git evilc && plant evilc/config && hook evilc/hooks && echo ../evilc > .git/commondir; ls -a .git`,
		reverted: ".git/commondir",
	},
	{
		// No repository before the call: the host's git must not find one
		// planted by it.
		name:     "created",
		noRepo:   true,
		attack:   `git init -q && plant .git/config && hook .git/hooks; ls -a`,
		reverted: ".git",
	},
}

func TestAttackGit(t *testing.T) {
	daemon := escDaemon(t)
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	for _, a := range gitAttacks {
		t.Run(a.name, func(t *testing.T) {
			dir := filepath.Join(env.home, "gg-"+a.name)
			marker := filepath.Join(env.home, "gg-pwned-"+a.name)
			t.Cleanup(func() { userSh(t, fmt.Sprintf("rm -rf %q %q ~/gg-submodule-src", dir, marker)) })
			init := `git init -q && git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m init`
			if a.noRepo {
				init = "true"
			}
			setup := fmt.Sprintf("rm -rf %q %q && mkdir %q && cd %q && %s", dir, marker, dir, dir, init)
			if a.setup != "" {
				setup += " && " + a.setup
			}
			mustCode(t, userSh(t, setup), 0)
			watch := append([]string{".git"}, a.watch...)
			before := gitEntries(t, dir, watch)

			script := strings.ReplaceAll(plantConfig+a.attack, "MARK", marker)
			r := runAs(t, dir, nil, "", link, script)
			t.Logf("attack: %s", r)

			// The host's repository: its git entries are what they were.
			after := gitEntries(t, dir, watch)
			for _, d := range diffEntries(before, after) {
				t.Errorf("changed on the host by the attack: %s", d)
			}
			// The user's git on the host runs nothing planted.
			host := a.host
			if host == "" {
				host = hostGit
			}
			h := runAs(t, dir, nil, "", "bash", "-c", host)
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("the host's git ran a planted command (%s exists); host git: %s", marker, h)
			}
			if a.reverted != "" {
				out := r.stdout + r.stderr
				if !strings.Contains(out, "git") || !strings.Contains(out, a.reverted) {
					t.Errorf("the result does not name the reverted path %s:\n%s", a.reverted, out)
				}
				gitAudited(t, a.reverted)
			}
		})
	}
	escHealthy(t, daemon)
}

// TestAttackGitWorkStillWorks: with .git pinned and its config read-only,
// ordinary git work inside safe_bash keeps working, and leaves no warning.
func TestAttackGitWorkStillWorks(t *testing.T) {
	dir := filepath.Join(env.home, "gg-work")
	t.Cleanup(func() { userSh(t, fmt.Sprintf("rm -rf %q", dir)) })
	mustCode(t, userSh(t, fmt.Sprintf(`rm -rf %q && mkdir %q && cd %q && git init -q && echo a > a && git add a && git -c user.name=u -c user.email=u@example.com commit -q -m init`, dir, dir, dir)), 0)
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	r := runAs(t, dir, nil, "", link, `set -e
export GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.com GIT_COMMITTER_NAME=u GIT_COMMITTER_EMAIL=u@example.com
echo b > b && git add b && git commit -q -m inside
git checkout -q -b feature && echo c > c && git add c && git commit -q -m feature
git checkout -q - && git merge -q --no-edit feature
echo d > a && git stash -q && git stash pop -q && git checkout -q -- a
git worktree add -q ../gg-work-wt 2>/dev/null || git worktree add -q wt2
git tag v1 && git gc -q --auto && git log --oneline | wc -l`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "3" {
		t.Fatalf("git work inside safe_bash: %s", r)
	}
	if strings.Contains(r.stderr, "reverted") {
		t.Errorf("ordinary git work was reported as a change: %s", r)
	}
	h := runAs(t, dir, nil, "", "git", "log", "--oneline", "feature")
	mustCode(t, h, 0)
	mustContain(t, "host git log", h.stdout, "feature", "inside")
}

// gitEntries snapshots, as root on the host, the git entries of a workspace
// below each of paths: every entry's type, mode, symlink target, content
// hash (not the files git rewrites on its own: index, objects, logs), and
// the inode of each path itself, so that a replaced .git shows even when
// it is a faithful copy.
func gitEntries(t *testing.T, dir string, paths []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		top := filepath.Join(dir, p)
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			base := filepath.Base(path)
			if d.IsDir() && (base == "objects" || base == "logs") || base == "index" || strings.HasSuffix(base, ".lock") ||
				base == "ORIG_HEAD" || base == "FETCH_HEAD" || base == "gc.pid" {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			fi, err := os.Lstat(path)
			if err != nil {
				return err
			}
			v := fi.Mode().String()
			if path == top {
				v += fmt.Sprintf(" ino=%d", inode(fi))
			}
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				l, _ := os.Readlink(path)
				v += " -> " + l
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				s := sha256.Sum256(b)
				v += " " + hex.EncodeToString(s[:8])
			}
			out[rel] = v
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot %s: %v", top, err)
		}
	}
	return out
}

// diffEntries lists what differs between two snapshots, sorted.
func diffEntries(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, k+": gone (was "+v+")")
		} else if w != v {
			out = append(out, k+": "+v+" -> "+w)
		}
	}
	for k, w := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k+": new ("+w+")")
		}
	}
	sort.Strings(out)
	return out
}

// gitAudited checks that the call's audit record names the reverted path.
func gitAudited(t *testing.T, path string) {
	t.Helper()
	r := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "audit", "tail", "-n", "1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "git") || !strings.Contains(r.stdout, path) {
		t.Errorf("the audit record of the call does not name the reverted %s: %s", path, r)
	}
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

// TestAttackGitSafeWrite: safe_write is guarded the same way: a file it
// creates where git would run it is reverted and named, one it would
// overwrite in git's read-only entries is refused.
func TestAttackGitSafeWrite(t *testing.T) {
	dir := filepath.Join(env.home, "gg-safewrite")
	marker := filepath.Join(env.home, "gg-pwned-safewrite")
	t.Cleanup(func() { userSh(t, fmt.Sprintf("rm -rf %q %q", dir, marker)) })
	mustCode(t, userSh(t, fmt.Sprintf(`rm -rf %q %q && mkdir %q && cd %q && git init -q && git config core.hooksPath .githooks && git -c user.name=u -c user.email=u@example.com commit -q --allow-empty -m init`, dir, marker, dir, dir)), 0)
	before := gitEntries(t, dir, []string{".git", ".githooks"})
	link := filepath.Join(env.project, ".claude", "tools", "safe_write", "safe_write")
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	w := runAs(t, dir, nil, "", link, ".githooks/pre-commit", "--content", hook)
	t.Logf("safe_write .githooks/pre-commit: %s", w)
	if !strings.Contains(w.stdout+w.stderr, ".githooks/pre-commit") {
		t.Errorf("the result does not name the reverted .githooks/pre-commit: %s", w)
	}
	gitAudited(t, ".githooks/pre-commit")
	w = runAs(t, dir, nil, "", link, ".git/hooks/post-commit", "--content", hook)
	if w.code != 77 {
		t.Errorf("safe_write into .git/hooks: want exit 77 (read-only), got %s", w)
	}
	w = runAs(t, dir, nil, "", link, ".git/commondir", "--content", "../evil\n")
	if !strings.Contains(w.stdout+w.stderr, ".git/commondir") {
		t.Errorf("the result does not name the reverted .git/commondir: %s", w)
	}
	for _, d := range diffEntries(before, gitEntries(t, dir, []string{".git", ".githooks"})) {
		t.Errorf("changed on the host: %s", d)
	}
	h := runAs(t, dir, nil, "", "bash", "-c", hostGit)
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("the host's git ran a planted hook; host git: %s", h)
	}
}
