// Package cachelayer keeps the per-workspace upper layers over the user's toolchain caches.
package cachelayer

// The sandbox shows a toolchain cache (Go's module and build caches, ~/.npm,
// ~/.cargo/registry...) as the read-only lower layer of an overlay, so that
// warm builds reuse it and no sandboxed write ever reaches it: a poisoned
// build-cache entry would run later in the user's own, unsandboxed builds.
// What calls write goes to an upper layer kept here, so the next call is warm
// too. This package keeps those layers; it mounts nothing.
//
// Layout, under Root (0700, the user's own, not a symlink):
//
//	<id>/              one sandbox's layers in one workspace; id = hex of the
//	                   first 128 bits of SHA-256(Key: root, identity, sandbox)
//	  .layer.json      the Key
//	  .lock            held by the lease that has these layers mounted
//	  <cache>/         its mtime is when a call last released it
//	  <cache>/upper    the overlay's upper layer: what calls wrote
//	  <cache>/work     overlayfs' work directory (same file system as upper)
//	.tmp/              what nobody holds here is removed on sight:
//	  <name>.lock      held for the whole life of <name>
//	  <name>/          a throwaway lease's layers, or layers being deleted
//
// Layers are per workspace and per sandbox, not per user: an entry one
// project's sandbox wrote (poisoned or just broken) is read only by that
// project's calls, and only by the same kind of sandbox (safe_bash, one
// wrapped MCP server): a ~/.npmrc or npx cache entry planted by a safe_bash
// call never runs in a server with other egress rules, nor the other way
// round. A workspace is known by its identity (Identity: the root
// directory's inode, birth time and generation), not only its path, so a
// project deleted and made again at the same path starts with empty layers;
// the old ones expire.
// The root must be on a file system that can hold an overlay's upper layer
// in a user namespace (unprivileged overlayfs stores its metadata in user.*
// xattrs): ext4, xfs, btrfs, or tmpfs from Linux 6.6; not NFS, not another
// overlay. The doctor probes that; this package does not.
//
// Locking. A workspace's .lock is held (flock, exclusive) by the one lease
// that uses its layers: overlayfs must not have one upper directory mounted
// twice at once. A call that finds it held gets fresh throwaway layers
// instead of waiting, which could take as long as the other call's time
// limit. flock belongs to the open file description, so two leases in one
// process exclude each other as two processes do, and a lock dies with its
// holder: a crashed daemon leaves no stale lock (the file stays and is used
// again). Deleting layers (Clear, Expire, the size bound) holds the lock
// and renames the directory into .tmp, lock file and all; whoever opened
// the old file and locks it afterwards finds that the path names another
// file now, and tries again (tryLock). So a lock held always guards the
// directory at its path. Every lock is tried, never waited for, so no lock
// order can deadlock; a deletion holds a workspace's lock and then a .tmp
// entry's, never the other way round.
//
// Deleting never follows a symlink (os.RemoveAll unlinks links; the chmod
// that makes read-only directories removable goes through an os.Root), and
// nothing under the root is used unless it is a directory, checked with
// lstat. The sandbox never sees the root itself, only the overlay's merged
// view, but a symlink written through the overlay lands in an upper layer.

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/contextd/contextd/catalog"
	"golang.org/x/sys/unix"
)

// Defaults of Options.
const (
	// DefaultMaxBytes bounds one workspace's layers. An upper layer holds
	// only what sandboxed calls added to the user's cache (build outputs of
	// changed code, mostly: the network is off by default), not a copy of
	// it; 2 GiB is days of edit-and-test on a large Go or Rust project, and
	// ten active workspaces then cost at most 20 GiB.
	DefaultMaxBytes = 2 << 30
	// DefaultMaxAge: a workspace none of whose caches was used for two weeks
	// loses its layers. Its next call starts from the user's caches again,
	// which the user's own builds keep warm meanwhile.
	DefaultMaxAge = 14 * 24 * time.Hour
)

// BusyWarning is Lease.Warning when another call holds the workspace's layers.
const BusyWarning = "cache writes of this call are not kept: another call in this workspace holds the cache layers"

// Names under the root and in a workspace's directory. Cache names start
// with a letter or digit, so they never meet these.
const (
	tmpDir   = ".tmp"
	lockName = ".lock"
	metaName = ".layer.json"
)

// cacheName is what a cache may be called: a plain directory name, lower
// case, not starting with a dot.
var cacheName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// idPattern is a workspace directory's name.
var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Options configure a Manager. The zero value (or nil) means every default.
type Options struct {
	// Root holds the layers. Default: $XDG_CACHE_HOME/contextd/layers, or
	// ~/.cache/contextd/layers when XDG_CACHE_HOME is unset or not absolute.
	// It is created 0700 when a lease first needs it, and refused if it is a
	// symlink or another user's.
	Root string
	// MaxBytes bounds one workspace's layers on disk. Default DefaultMaxBytes.
	MaxBytes int64
	// MaxAge: Expire removes a workspace's layers once none of its caches
	// was used for this long. Default DefaultMaxAge.
	MaxAge time.Duration
	// Ephemeral keeps nothing: every lease gets throwaway layers that
	// Release removes ([cache] enabled = false).
	Ephemeral bool
	// Now is the clock of the last-used times. Default time.Now.
	Now func() time.Time
}

// Manager keeps the upper layers. Its state is on disk only, guarded by
// the lock files, so it is safe for concurrent use, and several Managers
// (the daemon's, `contextd cache`) may work on one root at once.
type Manager struct {
	root      string
	maxBytes  int64
	maxAge    time.Duration
	ephemeral bool
	now       func() time.Time

	// mu guards ending. A leaf: never held while a lock file is taken or
	// a lease is waited for.
	mu sync.Mutex
	// ending holds, by workspace id, the lease of this process whose call
	// is over but whose sandbox is still being torn down (Lease.Ending):
	// its channel is closed when it unlocks.
	ending map[string]chan struct{}
	// onWait, when set (tests), is called when Acquire starts waiting for
	// an ending lease.
	onWait func()
}

// EndingWait bounds how long Acquire waits for an ending lease of the same
// workspace before it takes throwaway layers: the kernel tears a sandbox's
// namespaces down in milliseconds; a machine too loaded for that in a few
// seconds gets the warning rather than a call that waits on.
const EndingWait = 3 * time.Second

// New returns a Manager of the layers under o.Root. It touches nothing on
// disk.
func New(o *Options) (*Manager, error) {
	if o == nil {
		o = &Options{}
	}
	if o.MaxBytes < 0 || o.MaxAge < 0 {
		return nil, fmt.Errorf("cache layers: the size bound and the age must not be negative: %w", catalog.ErrConfig)
	}
	m := &Manager{root: o.Root, maxBytes: o.MaxBytes, maxAge: o.MaxAge, ephemeral: o.Ephemeral, now: o.Now}
	if m.root == "" {
		d, err := DefaultRoot()
		if err != nil {
			return nil, err
		}
		m.root = d
	}
	if !filepath.IsAbs(m.root) || filepath.Clean(m.root) == "/" {
		return nil, fmt.Errorf("cache layers: root %q must be an absolute path and not /: %w", m.root, catalog.ErrConfig)
	}
	m.root = filepath.Clean(m.root)
	if m.maxBytes == 0 {
		m.maxBytes = DefaultMaxBytes
	}
	if m.maxAge == 0 {
		m.maxAge = DefaultMaxAge
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m, nil
}

// DefaultRoot returns the default Options.Root.
func DefaultRoot() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "contextd", "layers"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cache layers: no cache directory (XDG_CACHE_HOME and HOME unset): %w", catalog.ErrConfig)
	}
	return filepath.Join(home, ".cache", "contextd", "layers"), nil
}

// Root returns the directory holding the layers.
func (m *Manager) Root() string { return m.root }

// MaxBytes returns the bound on one workspace's layers.
func (m *Manager) MaxBytes() int64 { return m.maxBytes }

// MaxAge returns how long unused layers are kept.
func (m *Manager) MaxAge() time.Duration { return m.maxAge }

// Layer is one cache's directories for a call: mount the user's cache as
// lowerdir with upperdir=Upper and workdir=Work.
type Layer struct {
	Cache string // the cache's name, as Acquire was given it
	Upper string
	Work  string
}

// Key names one set of layers.
type Key struct {
	// Workspace is the workspace root, as the daemon resolved it.
	Workspace string `json:"workspace"`
	// Identity is the workspace root's Identity when the call began.
	Identity string `json:"identity"`
	// Sandbox is the kind of sandbox the layers are mounted in: "safe_bash",
	// "mcp:NAME". Required: layers are never shared between two kinds.
	Sandbox string `json:"sandbox"`
}

// Identity tells a workspace root apart from another directory that once
// had its path: device, inode, birth time and (where the file system keeps
// one) inode generation, which ext4 and xfs draw anew when an inode number
// is reused. A root that cannot be looked at is an error: layers are never
// handed out on a guess.
func Identity(root string) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, root, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_TYPE, &st); err != nil {
		return "", fmt.Errorf("cache layers: workspace %s: %w", root, ioError(err))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", fmt.Errorf("cache layers: workspace %s is not a directory: %w", root, catalog.ErrInternal)
	}
	id := fmt.Sprintf("%d:%d", unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(":b%d.%09d", st.Btime.Sec, st.Btime.Nsec)
	}
	if f, err := os.OpenFile(root, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		if g, err := unix.IoctlGetUint32(int(f.Fd()), fsIocGetversion); err == nil {
			id += fmt.Sprintf(":g%d", g)
		}
		f.Close()
	}
	return id, nil
}

// fsIocGetversion is FS_IOC_GETVERSION (_IOR('v', 1, long)), which
// x/sys/unix does not name: the inode's generation number.
const fsIocGetversion = 0x80087601

// Lease is a call's use of its workspace's layers, from Acquire to Release.
type Lease struct {
	Key
	// Layers are the caches asked for, in the order asked (duplicates
	// dropped).
	Layers []Layer
	// Ephemeral: the layers are fresh, and Release removes them; nothing
	// the call writes to its caches is kept.
	Ephemeral bool
	// Warning is BusyWarning when the layers are ephemeral because another
	// call in the workspace holds its layers, for the call's result; empty
	// otherwise (Options.Ephemeral makes every lease ephemeral, silently).
	Warning string

	m    *Manager
	id   string
	lock *os.File  // the workspace's lock, for kept layers
	tmp  *tmpEntry // the throwaway layers

	once sync.Once
	err  error

	unlockOnce sync.Once
	unlockErr  error

	// Guarded by m.mu: endingc is the lease's entry in m.ending (closed at
	// unlock), unlocked is set when the lock is given back.
	endingc  chan struct{}
	unlocked bool
}

// Layer returns the layer of cache, if the lease has one.
func (l *Lease) Layer(cache string) (Layer, bool) {
	for _, ly := range l.Layers {
		if ly.Cache == cache {
			return ly, true
		}
	}
	return Layer{}, false
}

// Acquire gives a call the upper and work directories of caches of the
// layers k names, creating them as needed. It never waits: when another lease holds the workspace's layers,
// this one gets fresh ephemeral layers and says so (Ephemeral, Warning).
// With no caches it returns an empty lease and touches nothing.
//
// An error means there is no lease and nothing to release. Otherwise the
// caller must Release the lease once the call is over.
func (m *Manager) Acquire(k Key, caches []string) (*Lease, error) {
	k, err := cleanKey(k)
	if err != nil {
		return nil, err
	}
	names, err := cleanNames(caches)
	if err != nil {
		return nil, err
	}
	l := &Lease{Key: k, m: m, id: layersID(k)}
	if len(names) == 0 {
		return l, nil
	}
	if _, err := m.checkRoot(true); err != nil {
		return nil, err
	}
	if !m.ephemeral {
		lock, err := m.lockWorkspace(l.id)
		if errors.Is(err, errBusy) && m.awaitEnding(l.id) {
			lock, err = m.lockWorkspace(l.id)
		}
		switch {
		case err == nil:
			l.lock = lock
			if err := m.prepare(l, names); err != nil {
				lock.Close()
				return nil, err
			}
			return l, nil
		case !errors.Is(err, errBusy):
			return nil, err
		}
		l.Warning = BusyWarning
	}
	l.Ephemeral = true
	t, err := m.newTmp(l.id + "-")
	if err != nil {
		return nil, err
	}
	l.tmp = t
	if err := mkdirOwn(t.dir); err != nil {
		t.remove()
		return nil, err
	}
	for _, name := range names {
		ly, err := makeLayer(t.dir, name)
		if err != nil {
			t.remove()
			return nil, err
		}
		l.Layers = append(l.Layers, ly)
	}
	return l, nil
}

// awaitEnding waits, at most EndingWait, for this process's ending lease of
// workspace id to unlock. false: there is none, or it did not unlock in
// time (the caller then takes throwaway layers, as for a running call's).
func (m *Manager) awaitEnding(id string) bool {
	m.mu.Lock()
	ch := m.ending[id]
	m.mu.Unlock()
	if ch == nil {
		return false
	}
	if m.onWait != nil {
		m.onWait()
	}
	t := time.NewTimer(EndingWait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Ending says that the lease's call is over and only its sandbox's
// teardown is left (the overlays still mounted in a namespace the kernel is
// ending), so Unlock is near: a call of the same workspace that finds the
// layers held then waits for it (up to EndingWait) instead of running
// without keeping its cache writes. Throwaway and empty leases hold nothing
// and ignore it.
func (l *Lease) Ending() {
	if l.lock == nil {
		return
	}
	m := l.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if l.endingc != nil || l.unlocked {
		return
	}
	if m.ending == nil {
		m.ending = map[string]chan struct{}{}
	}
	l.endingc = make(chan struct{})
	m.ending[l.id] = l.endingc
}

// lockWorkspace takes the lock of workspace id's layers, creating their
// directory if needed; errBusy when a lease or a deletion holds it.
func (m *Manager) lockWorkspace(id string) (*os.File, error) {
	dir := filepath.Join(m.root, id)
	for range maxTries {
		if err := mkdirOwn(dir); errors.Is(err, fs.ErrNotExist) {
			// A deletion renamed the directory between our mkdir and our
			// look at it: make it again.
			continue
		} else if err != nil {
			return nil, err
		}
		f, err := tryLock(filepath.Join(dir, lockName), true)
		// Moved, or gone with its directory: a deletion got there between
		// our mkdir and our lock. The path is free again.
		if errors.Is(err, errMoved) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil && !errors.Is(err, errBusy) {
			err = ioError(err)
		}
		return f, err
	}
	return nil, fmt.Errorf("cache layers: the lock of %s kept moving: %w", dir, catalog.ErrIO)
}

// prepare makes the lease's layers in its workspace's directory, whose lock
// it holds, and records the workspace there.
func (m *Manager) prepare(l *Lease, names []string) error {
	dir := filepath.Join(m.root, l.id)
	md, merr := readMeta(dir) // missing or damaged: written afresh below
	if md.Workspace != "" && md.Key != l.Key {
		return fmt.Errorf("cache layers: %s holds the layers of %+v, not %+v: %w", dir, md.Key, l.Key, catalog.ErrInternal)
	}
	for _, name := range names {
		ly, err := makeLayer(dir, name)
		if err != nil {
			return err
		}
		// overlayfs wants an empty work directory; the last mount left its
		// work/work there (mode 000, holding whiteouts after a crash).
		if err := emptyDir(ly.Work); err != nil {
			return ioError(err)
		}
		l.Layers = append(l.Layers, ly)
	}
	if merr != nil || md.Workspace == "" {
		return writeMeta(dir, meta{Key: l.Key})
	}
	return nil
}

// Planned returns where Acquire would put cache's kept layer for k, without
// making or locking anything (contextd sandbox show).
func (m *Manager) Planned(k Key, cache string) Layer {
	k.Workspace = filepath.Clean(k.Workspace)
	dir := filepath.Join(m.root, layersID(k), cache)
	return Layer{Cache: cache, Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work")}
}

// makeLayer makes (or checks) dir/name/{upper,work}.
func makeLayer(dir, name string) (Layer, error) {
	ly := Layer{Cache: name, Upper: filepath.Join(dir, name, "upper"), Work: filepath.Join(dir, name, "work")}
	for _, d := range []string{filepath.Join(dir, name), ly.Upper, ly.Work} {
		if err := mkdirOwn(d); err != nil {
			return Layer{}, err
		}
	}
	// overlayfs refuses an upper and a work directory on different file
	// systems; only something mounted in between could do that.
	up, err1 := os.Lstat(ly.Upper)
	wk, err2 := os.Lstat(ly.Work)
	if err := errors.Join(err1, err2); err != nil {
		return Layer{}, ioError(err)
	}
	if up.Sys().(*syscall.Stat_t).Dev != wk.Sys().(*syscall.Stat_t).Dev {
		return Layer{}, fmt.Errorf("cache layers: %s and %s are on different file systems (overlayfs needs one): %w", ly.Upper, ly.Work, catalog.ErrIO)
	}
	return ly, nil
}

// Release ends the lease. Call it once every process that could see the
// lease's overlay mounts has exited (the sandbox's mount namespace is gone).
// Ephemeral layers are removed. Kept layers get their last-used time and
// are unlocked; then, if the workspace's layers are over the size bound,
// whole caches are removed until they fit: first any cache larger than the
// bound by itself (it can never fit) or that could not be measured, then
// the least recently used (among those last used at the same time, the
// largest first). A cache goes whole or not at all: part of an upper layer
// could pair a build cache's index entry with a missing output, or bring
// back a file the calls had deleted.
//
// Measuring walks the layers, so Release may take a while on large ones:
// call it after the call's result is sent. The bound is checked without
// holding the lock, and enforced only if the lock is free: a call that
// started meanwhile enforces it at its own Release.
//
// Later calls return the first one's result.
func (l *Lease) Release() error {
	l.once.Do(func() {
		err := l.Unlock()
		if l.tmp == nil && l.lock != nil {
			err = errors.Join(err, l.m.enforce(l.id))
		}
		l.err = err
	})
	return l.err
}

// Unlock gives the layers back at once (ephemeral ones are removed), without
// checking the size bound: the call's own path does this, so that the next
// call in the workspace finds the layers free, and Release, which measures,
// follows off that path. Later calls return the first one's result.
func (l *Lease) Unlock() error {
	l.unlockOnce.Do(func() { l.unlockErr = l.unlock() })
	return l.unlockErr
}

func (l *Lease) unlock() error {
	switch {
	case l.tmp != nil:
		return l.tmp.remove()
	case l.lock == nil:
		return nil
	}
	m := l.m
	dir := filepath.Join(m.root, l.id)
	// A cache's last use is its directory's mtime: setting it costs one
	// system call, where rewriting a file would cost ext4 a flush.
	var errs []error
	now := m.now()
	for _, ly := range l.Layers {
		if err := os.Chtimes(filepath.Join(dir, ly.Cache), now, now); err != nil {
			errs = append(errs, ioError(err))
		}
	}
	l.lock.Close()
	m.mu.Lock()
	l.unlocked = true
	if l.endingc != nil {
		if m.ending[l.id] == l.endingc {
			delete(m.ending, l.id)
		}
		close(l.endingc)
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

// enforce removes whole caches of workspace id's layers until they fit
// MaxBytes, in the order Release documents, if their lock is free.
func (m *Manager) enforce(id string) error {
	dir := filepath.Join(m.root, id)
	caches, err := measure(dir)
	if err != nil {
		return err
	}
	var total int64
	for _, c := range caches {
		total += c.Bytes
		if c.Partial {
			// What could not be read may be anything: a directory a tool
			// made unreadable must not hide gigabytes from the bound.
			total += m.maxBytes + 1
		}
	}
	if total <= m.maxBytes {
		return nil
	}
	lock, err := tryLock(filepath.Join(dir, lockName), false)
	if err != nil {
		// Held by a call (its Release enforces the bound), or deleted.
		return nil
	}
	defer lock.Close()
	// A cache that can never fit goes first; then the least recently used.
	hopeless := func(c CacheUsage) bool { return c.Partial || c.Bytes > m.maxBytes }
	slices.SortStableFunc(caches, func(a, b CacheUsage) int {
		if ha, hb := hopeless(a), hopeless(b); ha != hb {
			if ha {
				return -1
			}
			return 1
		}
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		return cmp.Compare(b.Bytes, a.Bytes)
	})
	var errs []error
	for _, c := range caches {
		if total <= m.maxBytes {
			break
		}
		if err := m.discard(filepath.Join(dir, c.Name)); err != nil {
			errs = append(errs, err)
			continue
		}
		total -= c.Bytes
		if c.Partial {
			total -= m.maxBytes + 1
		}
	}
	return errors.Join(errs...)
}

// checkRoot makes sure the root is a directory of this user's, mode 0700,
// and not a symlink (its parents may be: a ~/.cache on another disk is
// common). With create, a missing root is made (and missing parents,
// 0700); without, exists is false for a missing one.
func (m *Manager) checkRoot(create bool) (exists bool, err error) {
	if create {
		if err := os.MkdirAll(filepath.Dir(m.root), 0o700); err != nil {
			return false, ioError(err)
		}
		if err := os.Mkdir(m.root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return false, ioError(err)
		}
	}
	fi, err := os.Lstat(m.root)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return false, nil
	}
	if err != nil {
		return false, ioError(err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("cache layers: %s is %s, not a directory; refusing to keep cache layers there (remove it, or set [cache] path): %w", m.root, kind(fi.Mode()), catalog.ErrConfig)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return false, fmt.Errorf("cache layers: %s belongs to uid %d, not to this user (uid %d); refusing to keep cache layers there (set [cache] path): %w", m.root, st.Uid, os.Geteuid(), catalog.ErrConfig)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(m.root, 0o700); err != nil {
			return false, ioError(err)
		}
	}
	return true, nil
}

// mkdirOwn makes dir (0700) unless it exists, and checks that it is a
// directory: a symlink or anything else there is refused, never followed.
func mkdirOwn(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioError(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return ioError(err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cache layers: %s is %s, not a directory; refusing to use it: %w", dir, kind(fi.Mode()), catalog.ErrIO)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsRegular():
		return "a file"
	}
	return "not a directory (" + m.Type().String() + ")"
}

// layersID names the directory of k's layers. The parts are joined with a
// NUL, which none of them can hold, so two keys never meet.
func layersID(k Key) string {
	sum := sha256.Sum256([]byte(k.Workspace + "\x00" + k.Identity + "\x00" + k.Sandbox))
	return hex.EncodeToString(sum[:16])
}

func cleanKey(k Key) (Key, error) {
	ws, err := cleanWorkspace(k.Workspace)
	if err != nil {
		return Key{}, err
	}
	if k.Sandbox == "" || strings.ContainsRune(k.Sandbox, 0) || strings.ContainsRune(k.Identity, 0) {
		return Key{}, fmt.Errorf("cache layers: layers of %s asked for without a sandbox name: %w", ws, catalog.ErrInternal)
	}
	k.Workspace = ws
	return k, nil
}

func cleanWorkspace(ws string) (string, error) {
	if !filepath.IsAbs(ws) || filepath.Clean(ws) == "/" {
		return "", fmt.Errorf("cache layers: workspace %q must be an absolute path and not /: %w", ws, catalog.ErrInternal)
	}
	return filepath.Clean(ws), nil
}

func cleanNames(caches []string) ([]string, error) {
	var names []string
	for _, c := range caches {
		if !cacheName.MatchString(c) {
			return nil, fmt.Errorf("cache layers: %q is not a cache name (lower-case letters, digits and ._-, starting with a letter or digit): %w", c, catalog.ErrInternal)
		}
		if !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	return names, nil
}

// ioError classifies a failure of the file system.
func ioError(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("cache layers: %w: %w", err, catalog.ErrFilePermission)
	}
	return fmt.Errorf("cache layers: %w: %w", err, catalog.ErrIO)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
