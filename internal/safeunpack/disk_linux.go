package safeunpack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// resolve confines every lookup under the destination's descriptor: no
// absolute path, no "..", no symbolic link on the way, so a link planted by
// a racing process cannot redirect a write, whatever the names checked.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Extract writes the archive in src (tar, tar.gz or zip, told by its magic
// bytes) under dest, an existing directory, and refuses the whole archive at
// the first entry that is a link, a special file, a name that escapes or
// repeats, or that passes lim. Nothing existing is overwritten: files are
// created exclusively. On an error dest holds part of the archive (at most
// lim's bytes); the caller removes it.
func Extract(src io.ReaderAt, size int64, dest string, lim Limits) (Report, error) {
	d, err := openDisk(dest)
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	w := newWalker(lim, d)
	err = eachEntry(src, size, w)
	return w.rep, err
}

// disk is the sink that writes under the destination's descriptor.
type disk struct{ root int }

func openDisk(dest string) (*disk, error) {
	fd, err := unix.Open(dest, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("destination %q: %w: %w", dest, catalog.ErrIO, err)
	}
	return &disk{root: fd}, nil
}

func (d *disk) close() { unix.Close(d.root) }

// openDir opens rel beneath the root as a directory, making each missing
// element one at a time from its parent's descriptor.
func (d *disk) openDir(rel string) (int, error) {
	fd, err := unix.Dup(d.root)
	if err != nil {
		return -1, osErr(err)
	}
	if rel == "" || rel == "." {
		return fd, nil
	}
	for elem := range strings.SplitSeq(rel, "/") {
		if err := unix.Mkdirat(fd, elem, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, osErr(err)
		}
		next, err := unix.Openat2(fd, elem, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
		unix.Close(fd)
		if err != nil {
			return -1, osErr(err)
		}
		fd = next
	}
	return fd, nil
}

func (d *disk) dir(rel string, perm fs.FileMode) error {
	fd, err := d.openDir(rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return osErr(unix.Fchmod(fd, uint32(perm)))
}

func (d *disk) file(rel string, perm fs.FileMode, r io.Reader) (int64, error) {
	parent, err := d.openDir(path.Dir(rel))
	if err != nil {
		return 0, err
	}
	fd, err := unix.Openat2(parent, path.Base(rel), &unix.OpenHow{
		Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC, Mode: 0o600, Resolve: resolve})
	unix.Close(parent)
	if err != nil {
		return 0, osErr(err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	n, err := io.Copy(f, r)
	if err != nil {
		if errors.Is(err, ErrFormat) {
			return n, err
		}
		return n, osErr(err)
	}
	if err := f.Chmod(perm); err != nil {
		return n, osErr(err)
	}
	return n, osErr(f.Close())
}

// osErr names what the kernel's refusal means here: a link on the way
// (ELOOP under RESOLVE_NO_SYMLINKS), an escape (EXDEV under
// RESOLVE_BENEATH), a name taken (EEXIST) or a file where a directory must
// be (ENOTDIR); anything else is an I/O failure.
func osErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w (a symbolic link on the way): %w", ErrLink, err)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %w", ErrEscape, err)
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: %w", ErrDuplicate, err)
	}
	return fmt.Errorf("%w: %w", catalog.ErrIO, err)
}
