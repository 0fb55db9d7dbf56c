package cachelayer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxTries bounds the loops that retry after losing a race with a
// deletion; each lost race means someone else made progress.
const maxTries = 100

var (
	// errBusy: another open file description holds the lock.
	errBusy = errors.New("held by another lease")
	// errMoved: the lock was taken on a file that is no longer at its path
	// (a deletion renamed or removed it meanwhile).
	errMoved = errors.New("lock file moved")
)

// tryLock opens the lock file at path (creating it with create) and takes
// an exclusive flock on it without waiting: errBusy when it is held,
// errMoved when the file it locked is no longer the one at path. A
// symlink at path is an error (O_NOFOLLOW).
func tryLock(path string, create bool) (*os.File, error) {
	flag := os.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		f.Close()
		return nil, err
	}
	held, err1 := f.Stat()
	now, err2 := os.Lstat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, errMoved
	}
	return f, nil
}

func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if errors.Is(ferr, unix.EWOULDBLOCK) {
		return errBusy
	}
	if ferr != nil {
		return &fs.PathError{Op: "flock", Path: f.Name(), Err: ferr}
	}
	return nil
}

// tmpEntry is a name in .tmp: its lock file, held, and the directory
// beside it, which exists only while the lock file does and is held.
// Whoever holds the lock file owns the directory; a sweep removes a
// directory whose lock file is free or gone.
type tmpEntry struct {
	dir  string
	lock *os.File
}

// newTmp reserves a fresh name in .tmp (prefix + random); the directory is
// not made.
func (m *Manager) newTmp(prefix string) (*tmpEntry, error) {
	base := filepath.Join(m.root, tmpDir)
	if err := mkdirOwn(base); err != nil {
		return nil, err
	}
	for range maxTries {
		dir := filepath.Join(base, prefix+randomHex(8))
		f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, ioError(err)
		}
		if err := flock(f); err != nil {
			// A sweep found the new file and is removing it: take another.
			f.Close()
			if errors.Is(err, errBusy) {
				continue
			}
			return nil, ioError(err)
		}
		// Check that a sweep did not remove it before we locked it.
		held, err1 := f.Stat()
		now, err2 := os.Lstat(dir + ".lock")
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		return &tmpEntry{dir: dir, lock: f}, nil
	}
	return nil, fmt.Errorf("cache layers: no free name in %s: %w", base, errMoved)
}

// remove deletes the entry's directory, then its lock file, and unlocks.
func (t *tmpEntry) remove() error {
	err := removeTree(t.dir)
	if err == nil {
		err = os.Remove(t.dir + ".lock")
	}
	t.lock.Close()
	if err != nil {
		return ioError(err)
	}
	return nil
}

// sweepTmp removes what .tmp holds that no lease or deletion holds: the
// layers of the ephemeral leases of a daemon that crashed, and deletions a
// crash or an error cut short.
func (m *Manager) sweepTmp() error {
	base := filepath.Join(m.root, tmpDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ioError(err)
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(base, e.Name())
		if stem, ok := strings.CutSuffix(p, ".lock"); ok && e.Type().IsRegular() {
			f, err := tryLock(p, false)
			if err != nil {
				continue // in use, or its owner just removed it
			}
			errs = append(errs, (&tmpEntry{dir: stem, lock: f}).remove())
			continue
		}
		// A directory exists only while its lock file does, until its
		// owner has removed it: one without is what a crash left.
		if _, err := os.Lstat(p + ".lock"); errors.Is(err, fs.ErrNotExist) {
			if err := removeTree(p); err != nil {
				errs = append(errs, ioError(err))
			}
		}
	}
	return errors.Join(errs...)
}

// discard removes a directory under the root so that at every instant it
// is whole or gone: one rename moves it into .tmp, and it is deleted
// there. A crash in between leaves it for the next sweep.
func (m *Manager) discard(path string) error {
	t, err := m.newTmp("gone-")
	if err != nil {
		return err
	}
	if err := os.Rename(path, t.dir); err != nil {
		t.remove()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return ioError(err)
	}
	return t.remove()
}

// locksHeld returns the files (device and inode) that some process holds a
// flock on, from /proc/locks: whether layers are in use can be read there
// without taking their lock, which would turn a call starting at that
// moment ephemeral. ok is false when /proc/locks cannot be read.
func locksHeld() (held map[[2]uint64]bool, ok bool) {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil, false
	}
	held = map[[2]uint64]bool{}
	for line := range strings.Lines(string(b)) {
		// "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10242354 0 EOF"; a
		// waiter's line has "->" after the number.
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		var major, minor uint32
		var ino uint64
		if _, err := fmt.Sscanf(f[5], "%x:%x:%d", &major, &minor, &ino); err != nil {
			continue
		}
		held[[2]uint64{unix.Mkdev(major, minor), ino}] = true
	}
	return held, true
}
