package gitguard

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Every access below the workspace root goes through openat2 with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS: the workspace is written by
// sandboxed commands, and a link planted in it must neither make the guard
// read nor, worse, remove or write anything outside it.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

type kind uint8

const (
	kindMissing kind = iota
	kindFile
	kindDir
	kindLink
	kindOther
)

func (k kind) String() string {
	return [...]string{"missing", "file", "directory", "symbolic link", "special file"}[k]
}

func openRoot(root string) (int, error) {
	return unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// openBeneath opens rel below the root descriptor.
func openBeneath(rootFD int, rel string, flags uint64, mode uint64) (int, error) {
	for {
		fd, err := unix.Openat2(rootFD, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolve})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// parentBeneath opens the directory holding rel and returns it with rel's
// last component.
func parentBeneath(rootFD int, rel string) (int, string, error) {
	dir, name := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	fd, err := openBeneath(rootFD, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, name, err
}

// stat is what lies at rel, not following a link there: its kind, and
// kindMissing when a component is missing, not a directory, or a link.
func statBeneath(rootFD int, rel string) (kind, unix.Stat_t, error) {
	var st unix.Stat_t
	dfd, name, err := parentBeneath(rootFD, rel)
	if err != nil {
		if gone(err) {
			return kindMissing, st, nil
		}
		return kindMissing, st, err
	}
	defer unix.Close(dfd)
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if gone(err) {
			return kindMissing, st, nil
		}
		return kindMissing, st, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return kindFile, st, nil
	case unix.S_IFDIR:
		return kindDir, st, nil
	case unix.S_IFLNK:
		return kindLink, st, nil
	}
	return kindOther, st, nil
}

// gone: nothing the host's git would reach is there (a link on the way is
// not followed by the guard; git would follow it, which is why the link
// itself is an entry of its own).
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV)
}

func kindBeneath(root, rel string) (kind, error) {
	rfd, err := openRoot(root)
	if err != nil {
		return kindMissing, err
	}
	defer unix.Close(rfd)
	k, _, err := statBeneath(rfd, rel)
	return k, err
}

// readBeneath reads a regular file of at most max bytes.
func readBeneath(root, rel string, max int64) ([]byte, error) {
	rfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	return readAt(rfd, rel, max)
}

func readAt(rootFD int, rel string, max int64) ([]byte, error) {
	fd, err := openBeneath(rootFD, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, unix.EINVAL
	}
	if fi.Size() > max {
		return nil, unix.EFBIG
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

func listBeneath(root, rel string) ([]string, error) {
	rfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	return listAt(rfd, rel)
}

func listAt(rootFD int, rel string) ([]string, error) {
	fd, err := openBeneath(rootFD, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// removeAt removes rel and, for a directory, everything below it, without
// following any link.
func removeAt(rootFD int, rel string) error {
	dfd, name, err := parentBeneath(rootFD, rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(dfd)
	return removeIn(dfd, name, 0)
}

func removeIn(dfd int, name string, depth int) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	if depth > 64 {
		return unix.ELOOP
	}
	sub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(sub), name)
	names, err := f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeIn(sub, n, depth+1); err != nil {
				break
			}
		}
	}
	f.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
}

// mkdirAllAt creates rel and its missing parents below the root.
func mkdirAllAt(rootFD int, rel string) error {
	cur := ""
	for _, c := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, c)
		dfd, name, err := parentBeneath(rootFD, cur)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(dfd, name, 0o755)
		unix.Close(dfd)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return nil
}

// writeAt creates rel (which must not exist) with data and mode.
func writeAt(rootFD int, rel string, data []byte, mode uint32) error {
	fd, err := openBeneath(rootFD, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, uint64(mode&0o7777))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(os.FileMode(mode & 0o777))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func symlinkAt(rootFD int, rel, target string) error {
	dfd, name, err := parentBeneath(rootFD, rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Symlinkat(target, dfd, name)
}

func readlinkAt(rootFD int, rel string) (string, error) {
	dfd, name, err := parentBeneath(rootFD, rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
