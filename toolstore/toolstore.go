// Package toolstore is where installed plugin tools live: each tool's approved tree, and the lock that pins it to what was fetched and approved; the daemon, the CLI and the proxy read it here.
package toolstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolspec"
)

// LockName is the lock file in the store's root.
const LockName = "tools.lock"

// Files of an installed tool, in its directory beside its tree.
const (
	// TreeDir is the tool's root as fetched and built.
	TreeDir = "tree"
	// ApprovedName is the manifest the user approved, written out in full
	// (toolmanifest.Encode): the runtime reads this one, never the tree's,
	// so what runs is what was shown at install.
	ApprovedName = "approved.toml"
	// SchemaName and DocName are what the proxy lays out beside the tool's
	// symlink.
	SchemaName = "schema.json"
	DocName    = "TOOL.md"
)

// ErrNotInstalled: no tool of that name is in the lock.
var ErrNotInstalled = errors.New("no such tool installed")

// Store is the tools' directory: $XDG_DATA_HOME/contextd/tools. It is on
// the credential deny-list, so no sandbox sees or changes it.
type Store struct {
	Root string
}

// Default is the store under the user's data directory: $XDG_DATA_HOME
// when set to an absolute path, else ~/.local/share (the XDG spec's rule).
func Default() (Store, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return Store{Root: filepath.Join(d, "contextd", "tools")}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return Store{}, fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	return Store{Root: filepath.Join(home, ".local", "share", "contextd", "tools")}, nil
}

// Tool is one installed tool, as the lock records it.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Source is what install was given (go-getter's syntax), without a
	// checksum parameter; Ref is its ?ref= if any.
	Source string `json:"source"`
	Ref    string `json:"ref,omitempty"`
	// Resolved pins what the source gave: "git:<commit>" for git,
	// "sha256:<hex>" of the archive for an archive, "tree:<hex>" of the
	// fetched tree for a directory.
	Resolved string `json:"resolved"`
	// Checksum is TreeHash of the tool's tree once built: the runtime
	// checks the tree against it before it starts an instance.
	Checksum string `json:"checksum"`
	// Dir is the tool's directory, relative to the store's root.
	Dir       string    `json:"dir"`
	Installed time.Time `json:"installed"`
}

// Lock is the lock file's content.
type Lock struct {
	Version int              `json:"version"`
	Tools   map[string]*Tool `json:"tools"`
}

// Names are the installed tools' names, sorted.
func (l *Lock) Names() []string {
	out := make([]string, 0, len(l.Tools))
	for n := range l.Tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get is the tool named name, or ErrNotInstalled.
func (l *Lock) Get(name string) (*Tool, error) {
	if t, ok := l.Tools[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %q (contextd tool list shows what is installed): %w", ErrNotInstalled, name, catalog.ErrNotFound)
}

// nameRE is compiled on first use, for the proxy's start (see
// toolmanifest's patterns).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`) })

// CheckName refuses a name that cannot be a tool's: not a safe file name,
// or one of contextd's own tools.
func CheckName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("tool name %q: use lower-case letters, digits, _ and -, starting with a letter, at most 63: %w", name, catalog.ErrBadInput)
	}
	if _, ok := toolspec.Get(name); ok {
		return fmt.Errorf("tool name %q is one of contextd's own tools; install it under another name (--name): %w", name, catalog.ErrBadInput)
	}
	return nil
}

// Load reads the lock; a store with none is empty.
func (s Store) Load() (*Lock, error) {
	data, err := readNoFollow(filepath.Join(s.Root, LockName), 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: 1, Tools: map[string]*Tool{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tool store: read %s: %v: %w", LockName, err, catalog.ErrIO)
	}
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("tool store: %s: %v (remove the tools and install them again): %w", filepath.Join(s.Root, LockName), err, catalog.ErrConfig)
	}
	if l.Version != 1 {
		return nil, fmt.Errorf("tool store: %s has version %d, this contextd reads 1: %w", filepath.Join(s.Root, LockName), l.Version, catalog.ErrConfig)
	}
	if l.Tools == nil {
		l.Tools = map[string]*Tool{}
	}
	for n, t := range l.Tools {
		if t == nil || t.Name != n || CheckName(n) != nil || !filepath.IsLocal(t.Dir) {
			return nil, fmt.Errorf("tool store: %s: entry %q is not valid: %w", LockName, n, catalog.ErrConfig)
		}
	}
	return &l, nil
}

// Stamp is what changes when the lock is written: the daemon reloads its
// tools when it differs from the last one it read.
func (s Store) Stamp() (string, error) {
	var st unix.Stat_t
	err := unix.Lstat(filepath.Join(s.Root, LockName), &st)
	if errors.Is(err, unix.ENOENT) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d.%d:%d.%d", st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec), nil
}

// Update changes the lock under an exclusive lock of the store (two
// installs at once do not lose each other's entry) and writes it back
// atomically, unless f fails.
func (s Store) Update(f func(*Lock) error) error {
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	lf, err := os.OpenFile(filepath.Join(s.Root, ".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("tool store: lock: %v: %w", err, catalog.ErrIO)
	}
	l, err := s.Load()
	if err != nil {
		return err
	}
	if err := f(l); err != nil {
		return err
	}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrInternal)
	}
	return writeAtomic(filepath.Join(s.Root, LockName), append(data, '\n'))
}

// Path is the tool's directory.
func (s Store) Path(t *Tool) string { return filepath.Join(s.Root, t.Dir) }

// Tree is the tool's root, as its run command sees it.
func (s Store) Tree(t *Tool) string { return filepath.Join(s.Root, t.Dir, TreeDir) }

// Approved is the manifest the user approved for t.
func (s Store) Approved(t *Tool) (*toolmanifest.Manifest, error) {
	data, err := readNoFollow(filepath.Join(s.Path(t), ApprovedName), toolmanifest.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("tool %s: read its approved manifest: %v (install it again): %w", t.Name, err, catalog.ErrIO)
	}
	m, err := toolmanifest.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tool %s: its approved manifest: %w", t.Name, err)
	}
	return m, nil
}

// File reads one of the files install wrote beside the tree (SchemaName,
// DocName).
func (s Store) File(t *Tool, name string) ([]byte, error) {
	return readNoFollow(filepath.Join(s.Path(t), name), 1<<20)
}

// Verify checks t's tree against its checksum, refusing a tree changed
// since install.
func (s Store) Verify(t *Tool) error {
	got, err := TreeHash(s.Tree(t))
	if err != nil {
		return fmt.Errorf("tool %s: %w", t.Name, err)
	}
	if got != t.Checksum {
		return fmt.Errorf("tool %s: its tree at %s changed since install (checksum %s, locked %s); install it again: %w",
			t.Name, s.Tree(t), got, t.Checksum, catalog.ErrPolicy)
	}
	return nil
}

// readNoFollow reads a regular file of at most max bytes, refusing a
// symbolic link in its last component.
func readNoFollow(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", path, max)
	}
	return data, nil
}

// writeAtomic replaces path with data: a temporary file beside it, synced,
// renamed over it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tool store: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

// ShortHash is the part of a checksum that names a tool's directory.
func ShortHash(sum string) string {
	_, h, _ := cutPrefix(sum)
	if len(h) > 16 {
		h = h[:16]
	}
	return h
}

func cutPrefix(sum string) (string, string, bool) {
	for i := range len(sum) {
		if sum[i] == ':' {
			return sum[:i], sum[i+1:], true
		}
	}
	return "", sum, false
}

// SumBytes is the "sha256:<hex>" of data.
func SumBytes(data []byte) string {
	h := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(h[:])
}

// RemoveTree removes path, a tree whose directories may have been made
// unwritable or unreadable (an installed tool's, made read-only; or what a
// plugin left in its scratch, to outlast it): its directories are made the
// owner's first. A link is removed, never followed.
func RemoveTree(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove %s: %v: %w", path, err, catalog.ErrIO)
	}
	return nil
}
