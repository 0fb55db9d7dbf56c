package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// resolveFlags confine every lookup: RESOLVE_BENEATH refuses absolute paths and any
// `..` or symlink that would step above the root at any point of the walk;
// RESOLVE_NO_MAGICLINKS refuses /proc/*/fd-style links, which could name any open
// file of any process.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// Root is an open workspace root. Methods take paths relative to it (see Resolve).
type Root struct {
	path string
	dir  *os.File // O_PATH|O_DIRECTORY fd of the root, the anchor of every lookup
	// host: the root of a program of the host's own (contextd-proxy
	// install), which writes the agents' configuration itself; a sandboxed
	// tool's Root refuses it (HostRunAt).
	host bool
}

// Open opens the workspace root at path (absolute, already resolved).
func Open(path string) (*Root, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", path, errnoErr("open", err))
	}
	return &Root{path: path, dir: os.NewFile(uintptr(fd), path)}, nil
}

// OpenHost is Open for the host's own tools (contextd-proxy install and
// uninstall): the same confinement beneath the root, but the agents' and
// editors' configuration may be written, as writing it is their job. Never
// for what a sandboxed tool does.
func OpenHost(path string) (*Root, error) {
	r, err := Open(path)
	if err == nil {
		r.host = true
	}
	return r, err
}

// Path is the root's absolute path.
func (r *Root) Path() string { return r.path }

// Close releases the root's fd.
func (r *Root) Close() error { return r.dir.Close() }

func (r *Root) openat2(dirfd int, rel string, flags uint64, mode uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			// EAGAIN: a rename raced the lookup; the kernel asks us to retry.
			continue
		}
		return fd, err
	}
}

// OpenRead opens a regular file for reading. FIFOs, devices, sockets and
// directories are refused (a FIFO would otherwise block the call forever).
func (r *Root) OpenRead(rel string) (*os.File, error) {
	fd, err := r.openat2(int(r.dir.Fd()), rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, errnoErr("openat2", err))
	}
	f := os.NewFile(uintptr(fd), filepath.Join(r.path, rel))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", rel, errnoErr("fstat", err))
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is a %s: %w", rel, kind(fi.Mode()), catalog.ErrNotRegular)
	}
	return f, nil
}

// WriteResult says what WriteFile did.
type WriteResult struct {
	Path    string      // path relative to the root that was written (after a symlink)
	Created bool        // the file did not exist before
	Mode    os.FileMode // permission bits of the written file
	File    FileID      // the file written (a new inode: the write renames a new file into place)
}

// DefaultMode is the mode of files WriteFile creates.
const DefaultMode = 0o644

// WriteFile replaces rel with data atomically: the data goes to a temporary file in
// the same directory, is synced, gets the old file's permission bits (DefaultMode for
// a new file), and is renamed over the target. A crash or error at any point leaves
// the old content in place. Missing parent directories are created (0755) inside the
// workspace. A symlink at rel is followed, confined like any lookup, and its target
// replaced; the link stays.
func (r *Root) WriteFile(rel string, data []byte) (WriteResult, error) {
	return r.WriteFileOver(rel, data, "")
}

// ErrNotThatFile is WriteFileOver's refusal: the path names another file than
// the one expected.
var ErrNotThatFile = errors.New("the path names another file than the one expected")

// WriteFileOver is WriteFile that replaces only the file whose FileID.Key is
// expect ("": any file, or none). The target is identified once every link
// is followed, from the directory the new file is then renamed into, so a
// link or directory swapped in since expect was taken is caught; anything
// else (a missing target included) is refused with an error wrapping
// ErrNotThatFile and catalog.ErrPolicy, and nothing is written.
func (r *Root) WriteFileOver(rel string, data []byte, expect string) (WriteResult, error) {
	for hops := 0; ; hops++ {
		res, next, err := r.writeOnce(rel, data, expect)
		if err != nil || next == "" {
			return res, err
		}
		if hops >= 8 {
			return WriteResult{}, fmt.Errorf("%s: %w", rel, catalog.ErrSymlinkLoop)
		}
		rel = next
	}
}

func (r *Root) writeOnce(rel string, data []byte, expect string) (WriteResult, string, error) {
	dirRel, base := path.Split(rel)
	if base == "" || base == "." || base == ".." {
		return WriteResult{}, "", fmt.Errorf("%q does not name a file: %w", rel, catalog.ErrBadInput)
	}
	// Agent and editor configuration is refused by name twice: as written,
	// before a missing parent is made for it, and as actually opened (a
	// symlinked directory, `..`, the case a case-insensitive directory
	// stores), below.
	if err := r.refuseHostRun(rel, path.Clean(rel)); err != nil {
		return WriteResult{}, "", err
	}
	dirfd, err := r.openDir(dirRel, true)
	if err != nil {
		return WriteResult{}, "", err
	}
	defer unix.Close(dirfd)
	if err := r.refuseOpened(rel, dirfd, base); err != nil {
		return WriteResult{}, "", err
	}

	res := WriteResult{Path: path.Clean(rel), Mode: DefaultMode}
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
		res.Created = true
	case err != nil:
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("fstatat", err))
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		next, err := r.linkTarget(rel)
		return WriteResult{}, next, err
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return WriteResult{}, "", fmt.Errorf("%s is a %s: %w", rel, kind(os.FileMode(st.Mode)), catalog.ErrNotRegular)
	default:
		res.Mode = os.FileMode(st.Mode & 0o7777)
	}
	if expect != "" {
		var key string
		if !res.Created {
			id, err := entryID(dirfd, base, &st)
			if err != nil {
				return WriteResult{}, "", fmt.Errorf("%s: %w", rel, err)
			}
			key = id.Key()
		}
		if key != expect {
			return WriteResult{}, "", fmt.Errorf("%s: %w: %w", rel, ErrNotThatFile, catalog.ErrPolicy)
		}
	}

	tmp, err := tempName(base)
	if err != nil {
		return WriteResult{}, "", err
	}
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return WriteResult{}, "", fmt.Errorf("%s: create temporary file: %w", rel, errnoErr("openat", err))
	}
	f := os.NewFile(uintptr(fd), tmp)
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return WriteResult{}, "", fmt.Errorf("%s: write: %w", rel, errnoErr("write", err))
	}
	// fchmod, not the open mode: the umask must not change the preserved bits.
	if err := unix.Fchmod(fd, uint32(res.Mode)); err != nil {
		f.Close()
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("fchmod", err))
	}
	var nst unix.Stat_t
	if err := unix.Fstat(fd, &nst); err != nil {
		f.Close()
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("fstat", err))
	}
	// The new file's identity under the name it is renamed to.
	if res.File, err = entryID(dirfd, base, &nst); err != nil {
		f.Close()
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("fsync", err))
	}
	if err := f.Close(); err != nil {
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("close", err))
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		return WriteResult{}, "", fmt.Errorf("%s: %w", rel, errnoErr("renameat", err))
	}
	committed = true
	// Make the rename itself durable. The data is already in place; a failure here
	// only weakens crash safety, so it is not reported as a failed write.
	unix.Fsync(dirfd)
	return res, "", nil
}

// openDir opens dirRel under the root for use as a dirfd, creating missing
// components when create is set. Every component is looked up with openat2 from the
// root, so a `..` or a symlink among them is confined like any other path.
func (r *Root) openDir(dirRel string, create bool) (int, error) {
	if dirRel == "" {
		dirRel = "."
	}
	fd, err := r.openat2(int(r.dir.Fd()), dirRel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err == nil || !create || !errors.Is(err, unix.ENOENT) {
		if err != nil {
			return -1, fmt.Errorf("%s: %w", dirRel, errnoErr("openat2", err))
		}
		return fd, nil
	}
	parts := strings.Split(strings.Trim(dirRel, "/"), "/")
	parent := "."
	for _, p := range parts {
		if p == "" {
			continue
		}
		pfd, err := r.openat2(int(r.dir.Fd()), parent, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", parent, errnoErr("openat2", err))
		}
		err = unix.Mkdirat(pfd, p, 0o755)
		unix.Close(pfd)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("%s/%s: %w", parent, p, errnoErr("mkdirat", err))
		}
		parent = parent + "/" + p
	}
	fd, err = r.openat2(int(r.dir.Fd()), dirRel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", dirRel, errnoErr("openat2", err))
	}
	return fd, nil
}

// linkTarget resolves the symlink at rel, confined to the root, and returns its
// target relative to the root. A dangling link is refused rather than followed into
// a file that would be created wherever it points.
func (r *Root) linkTarget(rel string) (string, error) {
	fd, err := r.openat2(int(r.dir.Fd()), rel, unix.O_PATH, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "", fmt.Errorf("%s is a symlink to a missing file: %w", rel, catalog.ErrNotRegular)
		}
		return "", fmt.Errorf("%s: %w", rel, errnoErr("openat2", err))
	}
	defer unix.Close(fd)
	// Our own fd's /proc link names the resolved file; the lookup above already
	// proved it lies beneath the root.
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, errnoErr("readlink", err))
	}
	next, ok := under(r.path, real)
	if !ok || next == "." {
		return "", fmt.Errorf("%s resolves to %s: %w", rel, real, catalog.ErrOutsideWorkspace)
	}
	return next, nil
}

// refuseOpened refuses a write of base in dirfd when the directory, as the
// kernel has it, makes it host-run configuration (HostRunAt). An existing
// entry's name is taken as the directory stores it.
func (r *Root) refuseOpened(rel string, dirfd int, base string) error {
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dirfd))
	if err != nil {
		return fmt.Errorf("%s: %w", rel, errnoErr("readlink", err))
	}
	dir, ok := under(r.path, real)
	if !ok {
		return fmt.Errorf("%s resolves to %s: %w", rel, real, catalog.ErrOutsideWorkspace)
	}
	return r.refuseHostRun(rel, path.Join(dir, base))
}

// refuseHostRun is refuseHostRun for this root: nothing for the host's own.
func (r *Root) refuseHostRun(display, rel string) error {
	if r.host {
		return nil
	}
	return refuseHostRun(display, rel)
}

func tempName(base string) (string, error) {
	var b [6]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		return "", fmt.Errorf("temporary name: %w", catalog.ErrInternal)
	}
	name := "." + base + ".contextd-" + hex.EncodeToString(b[:]) + ".tmp"
	if len(name) > 255 {
		name = ".contextd-" + hex.EncodeToString(b[:]) + ".tmp"
	}
	return name, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// errnoErr names the syscall and maps its errno to the catalog, keeping the errno
// in the chain for errors.Is.
func errnoErr(syscall string, err error) error {
	var c *catalog.Class
	switch {
	case errors.Is(err, unix.EXDEV):
		// openat2 with RESOLVE_BENEATH: the path left the root.
		c = catalog.ErrOutsideWorkspace
	case errors.Is(err, unix.ELOOP):
		c = catalog.ErrSymlinkLoop
	case errors.Is(err, unix.ENOENT):
		c = catalog.ErrNotFound
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS),
		errors.Is(err, unix.EBUSY): // EBUSY: renaming over a mount point (a protected file)
		c = catalog.ErrFilePermission
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ENXIO):
		// ENXIO: open(2) of a Unix socket (or a device without a driver).
		c = catalog.ErrNotRegular
	case errors.Is(err, unix.ENOSYS):
		// No openat2 (kernel < 5.6): fail closed, never fall back to plain open.
		return fmt.Errorf("%s: kernel lacks openat2 (Linux 5.6+ needed to confine paths): %w", syscall, catalog.ErrPolicy)
	default:
		c = catalog.ErrIO
	}
	return &sysErr{call: syscall, errno: err, class: c}
}

type sysErr struct {
	call  string
	errno error
	class *catalog.Class
}

func (e *sysErr) Error() string {
	if e.class == catalog.ErrOutsideWorkspace {
		return e.class.Name
	}
	return e.call + ": " + e.errno.Error()
}

// Unwrap exposes both the class (for the catalog) and the errno (for errors.Is).
func (e *sysErr) Unwrap() []error { return []error{e.class, e.errno} }

// DirPath opens rel as a directory through the confined lookup and returns its
// resolved absolute path, for use as a process's working directory.
func (r *Root) DirPath(rel string) (string, error) {
	fd, err := r.openat2(int(r.dir.Fd()), rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, errnoErr("openat2", err))
	}
	defer unix.Close(fd)
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", fmt.Errorf("%s: %w", rel, errnoErr("readlink", err))
	}
	return p, nil
}
