package shield

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/workspace"
)

// hostConfig are directories of the user's whose contents programs on the
// host run by themselves; a workspace that is one of them, or lies inside
// one, is refused (see checkWorkspace): no list of what inside them runs
// code could be complete, so none is attempted.
var hostConfig = []struct{ path, why string }{
	// Nearly every program's configuration, and much of it code: systemd
	// user units and environment.d, autostart entries, git's global config
	// (core.fsmonitor, aliases), shells, editors, tmux, contextd's own.
	{"$XDG_CONFIG_HOME", "the configuration of the programs you run (systemd user units, git, shells, editors, contextd itself)"},
	// Executables early on the user's PATH.
	{"~/.local/bin", "programs on your PATH"},
	// User units the user manager starts.
	{"$XDG_DATA_HOME/systemd", "systemd user units"},
}

// Call is how one call keeps the workspace's host-run configuration and
// the credential deny-list out of its reach: read-only binds, masks, the
// directories bound onto themselves so that they cannot be renamed away
// with what is protected inside, and placeholders for what is missing.
type Call struct {
	ReadOnly  []string
	ReadWrite []string
	Masks     []string
	Warnings  []string
	// Placeholders are the paths of ReadOnly that are placeholders.
	Placeholders []string
	holds        []string // placeholders this call holds (see placeholders)
	dry          bool     // only describe: create and hold nothing
}

// release lets go of the call's placeholders; the last call to hold one
// removes it. Only after the sandbox is gone.
//
// The record is not rewritten here, only at the next create: a line of a
// placeholder already removed is harmless to the next daemon's cleanup (it
// finds nothing there, or a directory that is not the one recorded, and
// leaves it), while the rewrite would cost every call a file replaced on
// its way out.
func (s *Call) Release() {
	placeholders.mu.Lock()
	defer placeholders.mu.Unlock()
	for _, p := range s.holds {
		placeholders.drop(p)
	}
	s.holds = nil
}

// Writable works out the shield of a call in root, for a user whose
// home is home and whose environment is env (XDG_* may move the deny-list's
// entries). A workspace that is or lies in a deny-listed or host
// configuration directory is refused. The caller must call release after
// the sandbox is gone, also when err is not nil.
func Writable(root, home string, env map[string]string) (*Call, error) {
	return shieldOf(root, home, env, false)
}

// ForReading is the shield of a call that cannot write (safe_read):
// what exists is bound or masked, nothing is created for what is missing.
func ForReading(root, home string, env map[string]string) (*Call, error) {
	return shieldOf(root, home, env, true)
}

// Describe is the shield a writing call in root would get, for `contextd
// sandbox show`: nothing is created, the missing paths are listed as
// placeholders.
func Describe(root, home string, env map[string]string) (*Call, error) {
	return shieldOf(root, home, env, true)
}

func shieldOf(root, home string, env map[string]string, dry bool) (*Call, error) {
	s := &Call{dry: dry}
	h := &homeview.Host{Home: home, Env: env, Workspace: root}
	deny := homeview.DenyList(h)
	// Each deny-listed path's symbolic links are resolved once a call,
	// for the check and for the shield alike.
	canon := make([]string, len(deny))
	for i, d := range deny {
		canon[i] = canonicalOr(d.Path)
	}
	if err := checkWorkspace(root, h, deny, canon); err != nil {
		return s, err
	}
	placeholders.mu.Lock()
	defer placeholders.mu.Unlock()
	defer placeholders.save()
	for _, hr := range workspace.HostRunPaths() {
		if err := s.shield(root, hr.Path, false, !hr.Dir); err != nil {
			return s, err
		}
	}
	for i, d := range deny {
		for _, p := range []string{d.Path, canon[i]} {
			if rel, ok := below(root, p); ok {
				if err := s.shield(root, rel, true, false); err != nil {
					return s, err
				}
			}
		}
	}
	return s, nil
}

// checkWorkspace refuses a workspace root that is or lies inside a
// deny-listed path (as listed, or where its symbolic links lead) or a host
// configuration directory: the call would have all of it read-write.
// canon[i] is deny[i]'s path with its links resolved.
func checkWorkspace(root string, h *homeview.Host, deny []homeview.DeniedPath, canon []string) error {
	if h.Home != "" && homeview.Within(h.Home, root) {
		return fmt.Errorf("the workspace %s is or contains your home directory; start the agent in a project directory: %w", root, catalog.ErrPolicy)
	}
	for i, d := range deny {
		for _, p := range []string{d.Path, canon[i]} {
			if homeview.Within(root, p) {
				return fmt.Errorf("the workspace %s lies in %s, on the credential deny-list (%s: %s); start the agent in a project directory: %w",
					root, p, d.Rule, d.Why, catalog.ErrPolicy)
			}
		}
	}
	for _, c := range hostConfig {
		// The caller's XDG_* and the default: programs look in either.
		var forms []string
		for _, env := range []map[string]string{h.Env, nil} {
			if p := expandHostConfig(c.path, h.Home, env); p != "" {
				forms = append(forms, p, canonicalOr(p))
			}
		}
		for _, q := range forms {
			if homeview.Within(root, q) {
				return fmt.Errorf("the workspace %s lies in %s, %s that programs on the host run by themselves; a sandboxed call could not be kept from changing them: start the agent in a project directory: %w",
					root, q, c.why, catalog.ErrPolicy)
			}
		}
	}
	return nil
}

// expandHostConfig expands a hostConfig template: ~ is the home; an XDG
// variable is the caller's value when absolute, else its default.
func expandHostConfig(t, home string, env map[string]string) string {
	defaults := map[string]string{"$XDG_CONFIG_HOME": "~/.config", "$XDG_DATA_HOME": "~/.local/share"}
	for v, def := range defaults {
		if rest, ok := strings.CutPrefix(t, v); ok {
			val := env[strings.TrimPrefix(v, "$")]
			if !filepath.IsAbs(val) {
				val = def
			}
			t = val + rest
		}
	}
	if rest, ok := strings.CutPrefix(t, "~"); ok {
		if home == "" {
			return ""
		}
		t = home + rest
	}
	if !filepath.IsAbs(t) {
		return ""
	}
	return filepath.Clean(t)
}

// shield protects rel (clean, relative to root) from the call. It walks
// down from the root without following symbolic links:
//   - a directory on the way is bound onto itself read-write: it stays
//     writable, but as a mount point it cannot be renamed away and
//     replaced by one holding a planted file (rename(2) gives EBUSY);
//   - the first missing component gets a placeholder the call sees
//     read-only (and cannot remove or rename): nothing can be created at
//     or below it. It is an empty directory, or, when it is rel itself and
//     rel names a file (file), a file holding an empty configuration
//     (filePlaceholder);
//   - an existing file on the way, or rel itself, is bound read-only, or
//     masked when mask (a deny-listed path: the call sees nothing of it);
//   - a symbolic link cannot be protected (the link lives in the writable
//     directory): the call is told.
func (s *Call) shield(root, rel string, mask, file bool) error {
	comps := strings.Split(rel, "/")
	cur := root
	for i, c := range comps {
		cur = filepath.Join(cur, c)
		last := i == len(comps)-1
		if _, ok := placeholders.held[cur]; ok {
			if !s.dry {
				placeholders.held[cur].refs++
				s.holds = append(s.holds, cur)
			}
			s.ReadOnly, s.Placeholders = addOnce(s.ReadOnly, cur), addOnce(s.Placeholders, cur)
			return nil
		}
		var st unix.Stat_t
		err := unix.Lstat(cur, &st)
		switch {
		case errors.Is(err, unix.ENOENT):
			if !s.dry {
				if err := placeholders.create(cur, file && last); err != nil {
					return fmt.Errorf("cannot protect %s (no placeholder: %v); make sure the workspace is writable, or create it yourself: %w", cur, err, catalog.ErrSandbox)
				}
				s.holds = append(s.holds, cur)
			}
			s.ReadOnly, s.Placeholders = addOnce(s.ReadOnly, cur), addOnce(s.Placeholders, cur)
			return nil
		case err != nil:
			return fmt.Errorf("cannot protect %s: %v: %w", cur, err, catalog.ErrSandbox)
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			s.Warnings = append(s.Warnings, fmt.Sprintf(
				"%s is a symbolic link: contextd cannot keep the sandbox from replacing it, so what it names is not protected; make it a real directory or file", cur))
			return nil
		case last && mask:
			s.Masks = addOnce(s.Masks, cur)
			return nil
		case last || st.Mode&unix.S_IFMT != unix.S_IFDIR:
			s.ReadOnly = addOnce(s.ReadOnly, cur)
			return nil
		}
		s.ReadWrite = addOnce(s.ReadWrite, cur)
	}
	return nil
}

// Nested shields a nested host-run path that exists (ScanNested)
// like a top-level one; nothing is created for it.
func (s *Call) Nested(root, rel string) error {
	placeholders.mu.Lock()
	defer placeholders.mu.Unlock()
	defer placeholders.save()
	return s.shield(root, rel, false, false)
}

// addOnce appends p to list unless it is there (.vscode's two files share
// one placeholder when .vscode is missing).
func addOnce(list []string, p string) []string {
	if contains(list, p) {
		return list
	}
	return append(list, p)
}

// below returns p relative to root when it lies strictly below it.
func below(root, p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok && rel != ""
}

// canonicalOr returns p with its symbolic links resolved, or p when it
// cannot be resolved.
func canonicalOr(p string) string {
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	return p
}

// placeholders are the empty directories the daemon made in workspaces
// where something protected was missing, shared by the calls that need
// them (two calls of one workspace hold the same one). The last call to
// let go removes it, unless it is no longer the daemon's: not the same
// directory, or not empty (the user put something there meanwhile). What a
// daemon that died left behind is removed at the next start (Cleanup).
var placeholders = &placeholderSet{held: map[string]*placeholder{}}

type placeholderSet struct {
	mu   sync.Mutex
	held map[string]*placeholder
	// record is the file that lists the placeholders in place, for the
	// next daemon to remove what this one could not; "" keeps none
	// (tests, `contextd serve` without a state directory).
	record string
	dirty  bool // the record is behind: save before mu is let go
}

// placeholder is one in place: its identity (device, inode and change
// time: an inode number alone is reused at once by a directory made in
// its stead) and how many calls hold it.
type placeholder struct {
	id   placeholderID
	refs int
}

type placeholderID struct {
	dev, ino uint64
	ctime    int64 // nanoseconds
}

func idOf(st *unix.Stat_t) placeholderID {
	return placeholderID{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano()}
}

// placeholderMode: an empty directory anyone may look into, so that a
// program of the user's that opens it meanwhile finds nothing, not an
// error.
const placeholderMode = 0o755

// filePlaceholder is what a missing host-run file's placeholder holds: an
// empty configuration in each of their formats (all JSON or JSONC: a test
// keeps the list so). A sandbox that lives as long as the agent (a wrapped
// MCP server) holds its placeholders while the agent runs beside it, and
// the agent reads these files: an empty directory in their place is an
// error to it (OpenCode fails every prompt on EISDIR), "{}" is nothing.
const filePlaceholder = "{}\n"

// create makes the placeholder p (a file when file, else a directory) and
// holds it once. Callers hold mu.
func (ps *placeholderSet) create(p string, file bool) error {
	if strings.ContainsRune(p, '\n') {
		return errors.New("its path has a newline, which the record of placeholders cannot hold")
	}
	if file {
		if err := createFile(p); err != nil {
			return err
		}
	} else if err := unix.Mkdir(p, placeholderMode); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return err
	}
	ps.held[p] = &placeholder{id: idOf(&st), refs: 1}
	ps.dirty = true
	return nil
}

// drop lets go of one reference on p; the last one removes it if it is
// still the placeholder the daemon made (removePlaceholder). Callers hold
// mu.
func (ps *placeholderSet) drop(p string) {
	ph, ok := ps.held[p]
	if !ok {
		return
	}
	if ph.refs--; ph.refs > 0 {
		return
	}
	delete(ps.held, p)
	removePlaceholder(p, ph.id)
	ps.dirty = true
}

// createFile makes a file placeholder: never through a link, never over
// something that is there.
func createFile(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(filePlaceholder))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlink(p)
	}
	return err
}

// removePlaceholder removes p if it is still the placeholder id: the
// directory, empty (rmdir(2) refuses one that is not), or the file, as it
// was made. Anything put in either changes its change time, so a
// placeholder the user used is kept even once emptied again.
func removePlaceholder(p string, id placeholderID) bool {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || idOf(&st) != id {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.Rmdir(p) == nil
	case unix.S_IFREG:
		return st.Size == int64(len(filePlaceholder)) && unix.Unlink(p) == nil
	}
	return false
}

// save writes the record of the placeholders in place (one "dev ino ctime
// path" a line), replacing it atomically, when it is behind. Callers hold
// mu.
func (ps *placeholderSet) save() {
	if ps.record == "" || !ps.dirty {
		return
	}
	ps.dirty = false
	var b strings.Builder
	for p, ph := range ps.held {
		fmt.Fprintf(&b, "%d %d %d %s\n", ph.id.dev, ph.id.ino, ph.id.ctime, p)
	}
	tmp := ps.record + ".tmp"
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		os.Rename(tmp, ps.record)
	}
}

// CleanPlaceholders removes the placeholders a daemon that stopped
// without releasing them left (record lists them), and keeps the record
// of this daemon's in that file from now on. It returns the paths it
// removed.
func CleanPlaceholders(record string) []string {
	placeholders.mu.Lock()
	defer placeholders.mu.Unlock()
	var removed []string
	if b, err := os.ReadFile(record); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			id, p, ok := parseRecordLine(line)
			if !ok {
				continue
			}
			// Only what is removed now is reported: the record may still
			// list placeholders removed before it was last rewritten.
			if removePlaceholder(p, id) {
				removed = append(removed, p)
			}
		}
	}
	placeholders.record = record
	placeholders.dirty = true
	placeholders.save()
	return removed
}

// parseRecordLine reads one line of the record: "dev ino ctime path", the
// path absolute and clean. The record is the daemon's own file, but a
// line it cannot read strictly is skipped, never guessed at.
func parseRecordLine(line string) (placeholderID, string, bool) {
	f := strings.SplitN(line, " ", 4)
	if len(f) != 4 {
		return placeholderID{}, "", false
	}
	dev, err1 := strconv.ParseUint(f[0], 10, 64)
	ino, err2 := strconv.ParseUint(f[1], 10, 64)
	ctime, err3 := strconv.ParseInt(f[2], 10, 64)
	p := f[3]
	if err1 != nil || err2 != nil || err3 != nil || !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
		return placeholderID{}, "", false
	}
	return placeholderID{dev: dev, ino: ino, ctime: ctime}, p, true
}

// Apply adds the shield to spec, with git's entries l of root
// (gitProtected; the call's one Find, which its git guard's fingerprint
// uses too): their read-only paths and the shield's go before what spec
// already has (the configuration's own paths), the pins, directories bound
// onto themselves and masks with them.
func (s *Call) Apply(root string, l gitguard.Layout, spec *runner.Spec) {
	ro, pins := gitProtected(root, l)
	spec.ReadOnly = append(append(append([]string{}, ro...), s.ReadOnly...), spec.ReadOnly...)
	spec.ReadWrite = append(append([]string{}, s.ReadWrite...), spec.ReadWrite...)
	spec.Masks = append(spec.Masks, s.Masks...)
	spec.Pins = append(spec.Pins, pins...)
}
