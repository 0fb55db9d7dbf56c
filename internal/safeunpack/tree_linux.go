package safeunpack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// ScanTree checks the directory tree at root as CopyTree would, writing
// nothing. It is the re-walk of what a sandboxed fetch left behind.
//
// Every symbolic link is refused, wherever it points: a tool's source needs
// none, and a link that stays inside the tree today can be followed out of
// it by whoever copies or moves the tree later. A regular file with more
// than one name is refused as a hard link, since its other name may lie
// outside the tree. Devices, fifos and sockets are refused as special.
func ScanTree(root string, lim Limits) (Report, error) {
	return walkTree(root, newWalker(lim, scanSink{}), false)
}

// CopyTree copies the tree at src into dest, an existing directory, with
// ScanTree's checks and Extract's writes (exclusive creation, modes
// stripped of special bits and of write for group and others). Entries
// named .git are left out at any depth: a repository's metadata carries
// configuration and hooks that must not outlive the fetch.
func CopyTree(src, dest string, lim Limits) (Report, error) {
	d, err := openDisk(dest)
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	return walkTree(src, newWalker(lim, d), true)
}

func walkTree(root string, w *walker, skipGit bool) (Report, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Report{}, fmt.Errorf("source %q: %w: %w", root, catalog.ErrIO, err)
	}
	t := treeWalk{w: w, skipGit: skipGit}
	err = t.dir(fd, "")
	return w.rep, err
}

type treeWalk struct {
	w       *walker
	skipGit bool
}

// dir walks the directory open at fd (which it closes), whose path from
// the root is rel.
func (t *treeWalk) dir(fd int, rel string) error {
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if t.skipGit && name == ".git" {
				continue
			}
			if err := t.member(fd, name, path.Join(rel, name)); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("directory %q: %w: %w", rel, catalog.ErrIO, err)
		}
	}
}

func (t *treeWalk) member(parent int, name, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("entry %q: %w", rel, osErr(err))
	}
	perm := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := t.w.add(entry{name: rel, dir: true, perm: perm}); err != nil {
			return err
		}
		fd, err := openBeneath(parent, name, unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("entry %q: %w", rel, err)
		}
		return t.dir(fd, rel)
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return fmt.Errorf("entry %q: %w (a hard link: %d names)", rel, ErrLink, st.Nlink)
		}
		return t.w.add(entry{name: rel, perm: perm, claim: -1, open: func() (io.ReadCloser, error) {
			fd, err := openBeneath(parent, name, unix.O_NONBLOCK)
			if err != nil {
				return nil, err
			}
			// The name was checked by its stat; the file opened must be
			// the one checked, not one swapped in since (opened without
			// blocking, in case what was swapped in is a fifo).
			var now unix.Stat_t
			if err := unix.Fstat(fd, &now); err != nil || now.Ino != st.Ino || now.Dev != st.Dev || now.Nlink > 1 {
				unix.Close(fd)
				return nil, fmt.Errorf("%w: the file changed while it was read", catalog.ErrIO)
			}
			return os.NewFile(uintptr(fd), rel), nil
		}})
	case unix.S_IFLNK:
		target := make([]byte, 4096)
		n, _ := unix.Readlinkat(parent, name, target)
		return fmt.Errorf("entry %q: %w (a symbolic link to %q)", rel, ErrLink, target[:max(n, 0)])
	}
	return fmt.Errorf("entry %q: %w (mode %#o)", rel, ErrSpecial, st.Mode&unix.S_IFMT)
}

// openBeneath opens one name of the directory at parent for reading,
// refusing a symbolic link there.
func openBeneath(parent int, name string, flags int) (int, error) {
	fd, err := unix.Openat2(parent, name, &unix.OpenHow{Flags: uint64(flags | unix.O_RDONLY | unix.O_CLOEXEC), Resolve: resolve})
	return fd, osErr(err)
}
