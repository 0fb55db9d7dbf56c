// Package gitguard is the second line behind the read-only git mounts of a
// sandboxed call: it fingerprints everything the host's git runs on its own
// in the workspace (the .git entry, config files, hooks, submodules and
// worktrees) before the call, compares after it, and puts back what changed,
// keeping a copy of what was planted for forensics.
package gitguard

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// Bounds of a snapshot: the bytes it keeps to put a file back. A file over
// maxKeep, or beyond maxKeepTotal, is kept as its hash only: a change to it
// is seen and reported, but cannot be reverted (the result says so).
const (
	maxKeep      = 1 << 20
	maxKeepTotal = 16 << 20
	maxDirNodes  = 4096
	maxDirDepth  = 8
	// ctimeSlack: the kernel stamps ctime from a coarse clock that may lag
	// the time read before the call by a tick.
	ctimeSlack = 50 * time.Millisecond
)

// node is what one path was: enough to tell a change and to put it back.
type node struct {
	kind kind
	perm uint32
	ino  uint64
	sum  [32]byte
	data []byte // a file's bytes or a link's target; nil when only sum is kept
	kept bool
}

func (n node) same(o node) bool {
	if n.kind != o.kind {
		return false
	}
	switch n.kind {
	case kindFile:
		return n.perm == o.perm && n.sum == o.sum
	case kindLink:
		return n.sum == o.sum
	case kindDir:
		return n.ino == o.ino
	}
	return true
}

// Snapshot is the fingerprint of a workspace's git entries before a call.
type Snapshot struct {
	root  string
	start time.Time
	nodes map[string]node
	// gitFD holds the root's .git directory, so that a .git renamed away
	// is found again wherever it was moved in the workspace.
	gitFD int
	kept  int
}

// Take fingerprints the git entries of the workspace at root. An error means
// the guard cannot be applied (a file it must read cannot be): the call must
// not run.
func Take(root string) (*Snapshot, error) { return TakeLayout(root, Find(root)) }

// TakeLayout is Take of the entries of l, a Find of root the caller made
// just before (for the call's mounts): one walk of git's entries, not two.
func TakeLayout(root string, l Layout) (*Snapshot, error) {
	s := &Snapshot{root: root, start: time.Now().Add(-ctimeSlack), nodes: map[string]node{}, gitFD: -1}
	rfd, err := openRoot(root)
	if err != nil {
		return nil, fmt.Errorf("git guard: open the workspace %s: %v: %w", root, err, catalog.ErrIO)
	}
	defer unix.Close(rfd)
	for _, p := range watched(l) {
		if err := s.record(rfd, p, s.nodes, isDir(p, l)); err != nil {
			return nil, fmt.Errorf("git guard: cannot fingerprint %s: %v (fix its permissions; the call is refused because what git runs there could not be watched): %w",
				filepath.Join(root, p), err, catalog.ErrIO)
		}
	}
	if n := s.nodes[".git"]; n.kind == kindDir {
		if fd, err := openBeneath(rfd, ".git", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); err == nil {
			s.gitFD = fd
		}
	}
	return s, nil
}

// Close releases what the snapshot holds (Check does too).
func (s *Snapshot) Close() {
	if s.gitFD >= 0 {
		unix.Close(s.gitFD)
		s.gitFD = -1
	}
}

// watched is every path a layout makes the guard look at: the .git entry,
// the files, the hook directories.
func watched(l Layout) []string {
	out := []string{".git"}
	out = append(out, l.Files...)
	return append(out, l.Dirs...)
}

// isDir: p is one of the layout's hook directories, whose every file is
// watched (any other directory, such as a submodule checkout's .git made a
// directory, is watched by its identity only).
func isDir(p string, l Layout) bool {
	for _, d := range l.Dirs {
		if p == d {
			return true
		}
	}
	return false
}

// hookDirOf returns the hook directory of l that p lies below, or "".
func hookDirOf(p string, l Layout) string {
	for _, d := range l.Dirs {
		if strings.HasPrefix(p, d+"/") {
			return d
		}
	}
	return ""
}

// record adds the node at p to into, and with walk, every node below it
// (bounded: a hooks directory with more entries refuses the call).
func (s *Snapshot) record(rfd int, p string, into map[string]node, walk bool) error {
	return s.walk(rfd, p, into, walk, 0)
}

func (s *Snapshot) walk(rfd int, p string, into map[string]node, walk bool, depth int) error {
	if _, ok := into[p]; ok {
		return nil
	}
	n, err := s.read(rfd, p)
	if err != nil {
		return err
	}
	into[p] = n
	if n.kind != kindDir || !walk || depth >= maxDirDepth {
		return nil
	}
	names, err := listAt(rfd, p)
	if err != nil {
		if gone(err) {
			return nil
		}
		return err
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".sample") {
			// git runs hooks by their exact name, never a sample (git init
			// copies a dozen): not watched, which halves the guard's work.
			continue
		}
		if len(into) >= maxDirNodes {
			return fmt.Errorf("more than %d entries in git's hook directories", maxDirNodes)
		}
		if err := s.walk(rfd, filepath.Join(p, name), into, true, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (s *Snapshot) read(rfd int, p string) (node, error) {
	k, st, err := statBeneath(rfd, p)
	if err != nil {
		return node{}, err
	}
	n := node{kind: k, perm: st.Mode & 0o7777, ino: st.Ino}
	switch k {
	case kindFile:
		if st.Size > maxKeep {
			// Too large to keep: its identity and change time stand for
			// its bytes (ctime cannot be set back by the user), so a
			// change is seen without reading it on every call.
			n.sum = sha256.Sum256([]byte(fmt.Sprintf("%d:%d:%d.%d", st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec)))
			return n, nil
		}
		data, err := readAt(rfd, p, maxKeep)
		if err != nil {
			if gone(err) {
				return node{kind: kindMissing}, nil
			}
			return node{}, err
		}
		n.sum = sha256.Sum256(data)
		if len(data) <= maxKeep && s.kept+len(data) <= maxKeepTotal {
			n.data, n.kept = data, true
			s.kept += len(data)
		}
	case kindLink:
		t, err := readlinkAt(rfd, p)
		if err != nil {
			return node{}, err
		}
		n.data, n.kept, n.sum = []byte(t), true, sha256.Sum256([]byte(t))
	}
	return n, nil
}

// Change is one git entry a call changed.
type Change struct {
	Path string // relative to the workspace root
	What string // created, changed, removed, replaced
	// Reverted says it was put back; Err why not.
	Reverted bool
	Err      error
}

// Report is what Check found and did.
type Report struct {
	Root    string
	Changes []Change
	// Quarantine is where what the call planted is kept ("" when nothing
	// was kept).
	Quarantine string
}

// Failed reports whether a change could not be reverted.
func (r Report) Failed() bool {
	for _, c := range r.Changes {
		if !c.Reverted {
			return true
		}
	}
	return false
}

// Warnings are the lines a call's result and audit record carry, one per
// change.
func (r Report) Warnings() []string {
	var out []string
	for _, c := range r.Changes {
		if c.Reverted {
			w := fmt.Sprintf("git: %s was %s by this call and has been reverted: the host's git would have run what it held", c.Path, c.What)
			if r.Quarantine != "" {
				w += "; what the call left there is kept in " + r.Quarantine
			}
			out = append(out, w)
		} else {
			out = append(out, fmt.Sprintf("git: SECURITY: %s was %s by this call and could NOT be reverted (%v): do not run git in %s before you have checked %s",
				c.Path, c.What, c.Err, r.Root, filepath.Join(r.Root, c.Path)))
		}
	}
	return out
}

// Err is the error of a report with a change that could not be reverted.
func (r Report) Err() error {
	if !r.Failed() {
		return nil
	}
	var paths []string
	for _, c := range r.Changes {
		if !c.Reverted {
			paths = append(paths, c.Path)
		}
	}
	return fmt.Errorf("git guard: the call changed %s in %s, which the host's git runs, and it could not be put back: check it before running git there: %w",
		strings.Join(paths, ", "), r.Root, catalog.ErrIO)
}

// Check compares the workspace with the snapshot and reverts every change
// that is not benign (see benign), keeping a copy of what it removes under
// quarantineDir (made when first needed). It closes the snapshot.
func (s *Snapshot) Check(quarantineDir string) Report {
	defer s.Close()
	return s.Recheck(quarantineDir)
}

// Recheck is Check, keeping the snapshot open for the next one: what a
// long-lived program (a plugin tool's instance) changed is put back after
// each of its calls, always to the state before it ever ran. Not safe for
// concurrent use.
func (s *Snapshot) Recheck(quarantineDir string) Report {
	r := Report{Root: s.root}
	rfd, err := openRoot(s.root)
	if err != nil {
		r.Changes = append(r.Changes, Change{Path: ".", What: "unreadable after the call", Err: err})
		return r
	}
	defer unix.Close(rfd)
	q := &quarantine{base: quarantineDir}

	// A .git directory renamed away and replaced: move the original back
	// first, so that the rest is compared against the real repository.
	if before := s.nodes[".git"]; before.kind == kindDir && s.gitFD >= 0 {
		now, _ := s.read(rfd, ".git")
		if now.kind != kindDir || now.ino != before.ino {
			r.Changes = append(r.Changes, s.restoreGit(rfd, q))
		}
	}

	after := map[string]node{}
	la := Find(s.root)
	for _, p := range watched(la) {
		if err := s.record(rfd, p, after, isDir(p, la)); err != nil {
			r.Changes = append(r.Changes, Change{Path: p, What: "unreadable after the call", Err: err})
		}
	}
	for p := range s.nodes {
		if _, ok := after[p]; !ok {
			n, err := s.read(rfd, p)
			if err != nil {
				r.Changes = append(r.Changes, Change{Path: p, What: "unreadable after the call", Err: err})
				continue
			}
			after[p] = n
		}
	}
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// beforeOf is what p was, and false when it predates the call without
	// having been watched (a path that only the call's changes made the
	// guard look at, such as a submodule path added to .gitmodules: not
	// the call's doing).
	beforeOf := func(p string) (node, bool) {
		if b, known := s.nodes[p]; known {
			return b, true
		}
		if after[p].kind == kindMissing || !s.changedSince(rfd, p) {
			return node{}, false
		}
		return node{kind: kindMissing}, true
	}
	// A repository the call created where there was none goes as a whole
	// when anything in it could run: half of one is no use to anyone.
	var gitEvil []string
	if b := s.nodes[".git"]; b.kind == kindMissing && after[".git"].kind != kindMissing {
		for _, p := range paths {
			if b, ok := beforeOf(p); ok && strings.HasPrefix(p, ".git/") && b.kind == kindMissing && !benign(s.root, p, after[p], la) {
				gitEvil = append(gitEvil, p)
			}
		}
	}
	wholeGit := len(gitEvil) > 0
	var removed []string // what a revert removed: nothing below it needs one
	var made []string    // directories the call created, left as benign
	for _, p := range paths {
		now := after[p]
		before, ok := beforeOf(p)
		if !ok || before.same(now) || below(p, removed) {
			continue
		}
		if before.kind == kindMissing && !(p == ".git" && wholeGit) && benign(s.root, p, now, la) {
			if now.kind == kindDir {
				made = append(made, p)
			}
			continue
		}
		c := Change{Path: p, What: what(before, now)}
		if p == ".git" && wholeGit {
			c.What = "created (with " + strings.Join(gitEvil, ", ") + " in it)"
		}
		c.Err = s.revert(rfd, p, before, now, q)
		c.Reverted = c.Err == nil
		if before.kind != kindDir && now.kind != kindMissing {
			// Gone, with everything below it: nothing there to compare.
			removed = append(removed, p)
		}
		r.Changes = append(r.Changes, c)
	}
	// A directory the call made only to hold what was reverted goes too
	// (rmdir: one with anything else left in it stays).
	for i := len(made) - 1; i >= 0; i-- {
		if revertedBelow(made[i], r.Changes) {
			if dfd, name, err := parentBeneath(rfd, made[i]); err == nil {
				unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
				unix.Close(dfd)
			}
		}
	}
	r.Quarantine = q.dir
	return r
}

func revertedBelow(dir string, cs []Change) bool {
	for _, c := range cs {
		if c.Reverted && strings.HasPrefix(c.Path, dir+"/") {
			return true
		}
	}
	return false
}

func what(before, now node) string {
	switch {
	case before.kind == kindMissing:
		return "created"
	case now.kind == kindMissing:
		return "removed"
	case before.kind != now.kind || before.kind == kindDir:
		return "replaced"
	}
	return "changed"
}

func below(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// changedSince: p's inode was changed (created, written, renamed, its mode
// set) since the snapshot was taken. ctime cannot be set by the user.
func (s *Snapshot) changedSince(rfd int, p string) bool {
	dfd, name, err := parentBeneath(rfd, p)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	var stx unix.Statx_t
	if err := unix.Statx(dfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &stx); err != nil {
		return false
	}
	return !time.Unix(stx.Ctime.Sec, int64(stx.Ctime.Nsec)).Before(s.start)
}

// revert puts p back as it was: what is there now goes to the quarantine
// and is removed, then the old node is written again.
func (s *Snapshot) revert(rfd int, p string, before, now node, q *quarantine) error {
	if now.kind != kindMissing {
		q.keep(rfd, p, now)
		if now.kind == kindDir && before.kind == kindDir {
			// A replaced directory of the watched ones (a hooks directory)
			// keeps its place; its files are compared one by one.
			return nil
		}
		if err := removeAt(rfd, p); err != nil {
			return fmt.Errorf("remove: %w", err)
		}
	}
	switch before.kind {
	case kindFile:
		if !before.kept {
			return fmt.Errorf("its old content (%d bytes or more) was too large to keep", maxKeep)
		}
		if err := mkdirAllAt(rfd, filepath.Dir(p)); err != nil {
			return fmt.Errorf("recreate its directory: %w", err)
		}
		if err := writeAt(rfd, p, before.data, before.perm); err != nil {
			return fmt.Errorf("write it back: %w", err)
		}
	case kindDir:
		if err := mkdirAllAt(rfd, p); err != nil {
			return fmt.Errorf("recreate it: %w", err)
		}
	case kindLink:
		if err := mkdirAllAt(rfd, filepath.Dir(p)); err != nil {
			return fmt.Errorf("recreate its directory: %w", err)
		}
		if err := symlinkAt(rfd, p, string(before.data)); err != nil {
			return fmt.Errorf("recreate the link: %w", err)
		}
	}
	return nil
}

// restoreGit handles a .git directory that is no longer at its place: the
// thing now at .git goes to the quarantine, and the original, found through
// the descriptor held since the snapshot, is renamed back.
func (s *Snapshot) restoreGit(rfd int, q *quarantine) Change {
	c := Change{Path: ".git", What: "replaced"}
	where, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s.gitFD))
	if err != nil || strings.HasSuffix(where, " (deleted)") {
		c.Err = errors.New("the original .git directory was deleted")
		return c
	}
	rel, err := filepath.Rel(s.root, where)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		c.Err = fmt.Errorf("the original .git directory was moved out of the workspace, to %s", where)
		return c
	}
	if rel == ".git" {
		c.Err = errors.New("the original .git directory is at its place, yet another inode is seen there")
		return c
	}
	now, _ := s.read(rfd, ".git")
	if now.kind != kindMissing {
		q.keep(rfd, ".git", now)
		if err := removeAt(rfd, ".git"); err != nil {
			c.Err = fmt.Errorf("remove the replacement: %w", err)
			return c
		}
	}
	odfd, oname, err := parentBeneath(rfd, rel)
	if err != nil {
		c.Err = fmt.Errorf("find the original at %s: %w", rel, err)
		return c
	}
	defer unix.Close(odfd)
	if err := unix.Renameat2(odfd, oname, rfd, ".git", unix.RENAME_NOREPLACE); err != nil {
		c.Err = fmt.Errorf("move the original back from %s: %w", rel, err)
		return c
	}
	c.What, c.Reverted = "replaced (the original was at "+rel+")", true
	return c
}

// quarantine keeps copies of what a revert removes, under a directory of
// the daemon's state made on first use.
type quarantine struct {
	base, dir string
	err       error
	size      int
}

func (q *quarantine) open() bool {
	if q.dir != "" || q.err != nil {
		return q.err == nil
	}
	var b [4]byte
	rand.Read(b[:])
	d := filepath.Join(q.base, time.Now().UTC().Format("20060102T150405Z")+"-"+hex.EncodeToString(b[:]))
	if q.err = os.MkdirAll(d, 0o700); q.err == nil {
		q.dir = d
	}
	return q.err == nil
}

// keep copies node n at p (a file's bytes, a link's target, a directory's
// files) into the quarantine. Losing a forensic copy never stops a revert.
func (q *quarantine) keep(rfd int, p string, n node) {
	if q.base == "" || !q.open() {
		return
	}
	dest := filepath.Join(q.dir, p)
	switch n.kind {
	case kindFile, kindLink:
		data := n.data
		if !n.kept {
			data, _ = readAt(rfd, p, maxKeep)
		}
		if n.kind == kindLink {
			dest += ".symlink"
		}
		q.write(dest, data)
	case kindDir:
		q.keepGit(rfd, p)
	}
}

// keepGit copies the small files of a directory tree (configs, hooks; not
// the objects of a repository) into the quarantine.
func (q *quarantine) keepGit(rfd int, p string) {
	if q.base == "" || !q.open() {
		return
	}
	var walk func(string, int)
	walk = func(d string, depth int) {
		names, err := listAt(rfd, d)
		if err != nil || depth > maxDirDepth {
			return
		}
		for _, n := range names {
			rel := filepath.Join(d, n)
			k, _, err := statBeneath(rfd, rel)
			switch {
			case err != nil:
			case k == kindDir && n != "objects":
				walk(rel, depth+1)
			case k == kindFile:
				if data, err := readAt(rfd, rel, 64<<10); err == nil {
					q.write(filepath.Join(q.dir, rel), data)
				}
			case k == kindLink:
				if t, err := readlinkAt(rfd, rel); err == nil {
					q.write(filepath.Join(q.dir, rel)+".symlink", []byte(t))
				}
			}
		}
	}
	walk(p, 0)
}

func (q *quarantine) write(dest string, data []byte) {
	if q.size+len(data) > maxKeepTotal {
		return
	}
	q.size += len(data)
	if os.MkdirAll(filepath.Dir(dest), 0o700) == nil {
		os.WriteFile(dest, data, 0o600)
	}
}

// DefaultDir is where the quarantines go: $XDG_STATE_HOME/contextd/gitguard
// (~/.local/state/...), which no sandbox sees (the credential deny-list
// hides contextd's state).
func DefaultDir() string {
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "contextd", "gitguard")
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(h, ".local", "state", "contextd", "gitguard")
}
