package install

// Every path install and uninstall read or write inside the project is looked
// up by the kernel beneath the project root (openat2 RESOLVE_BENEATH): a
// symlink anywhere on the way (a parent directory or the file itself) that
// leads out of the project makes the call fail, with no window between a
// check and the write for an agent to swap a link in. Links that stay inside
// the project (CLAUDE.md -> AGENTS.md) still work. Files outside the project
// are the user's own agent settings in $HOME (~/.codex/config.toml, Gemini's
// trustedFolders.json), which a sandboxed agent cannot write.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// beneath confines every lookup to the directory it starts from; magic links
// (/proc/*/fd) could name any file.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// projectPath says where p (absolute, or relative to root) is: inside the
// project (rel is then relative to root), or outside it (the user's own
// files). A relative path that climbs out (a forged record) is refused.
func projectPath(root, p string) (rel string, in bool, err error) {
	if !filepath.IsAbs(p) {
		if !filepath.IsLocal(p) {
			return "", false, fmt.Errorf("%s is not a path inside the project %s; install never goes outside it: %w", p, root, catalog.ErrOutsideWorkspace)
		}
		return filepath.Clean(p), true, nil
	}
	r, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(r) {
		return p, false, nil
	}
	return r, true, nil
}

// escaped rewrites a refused lookup into a message that names the path and
// says what to do; other errors pass unchanged.
func escaped(root, rel string, err error) error {
	if errors.Is(err, catalog.ErrOutsideWorkspace) || errors.Is(err, catalog.ErrSymlinkLoop) {
		return fmt.Errorf("%s in %s leads out of the project through a symlink (the file or a directory on its way); install and uninstall never read or write through a link that leaves the project: replace the link with a real file or directory (or remove it), then run again: %w",
			rel, root, catalog.ErrOutsideWorkspace)
	}
	return err
}

func openRoot(root string) (*workspace.Root, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("project %s: %v: %w", root, err, catalog.ErrIO)
	}
	// The host's own root: install writes the agents' configuration.
	return workspace.OpenHost(real)
}

// readIn reads the file at p; inside the project only beneath its root. A
// missing file is an error matching fs.ErrNotExist; anything but a regular
// file matches catalog.ErrNotRegular.
func readIn(root, p string) ([]byte, error) {
	rel, in, err := projectPath(root, p)
	if err != nil {
		return nil, err
	}
	if !in {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if fi, serr := os.Stat(p); serr == nil && !fi.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: %w", p, catalog.ErrNotRegular)
			}
			return nil, fmt.Errorf("read %s: %v: %w", p, err, catalog.ErrIO)
		}
		return b, err
	}
	ws, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	f, err := ws.OpenRead(rel)
	if err != nil {
		return nil, escaped(root, rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w", rel, err, catalog.ErrIO)
	}
	return b, nil
}

// writeIn replaces the file at p with data (atomically; unchanged content is
// not rewritten, so its mtime stays); inside the project only beneath its
// root, a link staying inside it written at its target.
func writeIn(root, p string, data []byte) error {
	rel, in, err := projectPath(root, p)
	if err != nil {
		return err
	}
	if !in {
		return writeAtomic(p, data)
	}
	if cur, err := readIn(root, rel); err == nil && bytes.Equal(cur, data) {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	ws, err := openRoot(root)
	if err != nil {
		return err
	}
	defer ws.Close()
	if _, err := ws.WriteFile(rel, data); err != nil {
		return escaped(root, rel, err)
	}
	return nil
}

// removeIn removes the file (or, dir set, the empty directory) at p; inside
// the project the lookup of its directory stays beneath the root, and a link
// is removed itself, never followed.
func removeIn(root, p string, dir bool) error {
	rel, in, err := projectPath(root, p)
	if err != nil {
		return err
	}
	if !in {
		return os.Remove(p)
	}
	if rel == "." {
		return fmt.Errorf("refusing to remove the project root %s: %w", root, catalog.ErrInternal)
	}
	d, err := openProjectDir(root, filepath.Dir(rel), false)
	if err != nil {
		return err
	}
	defer d.close()
	if dir {
		return d.rmdir(filepath.Base(rel))
	}
	return d.remove(filepath.Base(rel))
}

// dirAt is an open directory; its methods take one name in it and never
// follow a symlink at that name.
type dirAt struct {
	fd   int
	path string // for messages
}

func (d *dirAt) close() { unix.Close(d.fd) }

func openat2(dirfd int, rel string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: beneath})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue // EAGAIN: a rename raced the lookup
		}
		if errors.Is(err, unix.ENOSYS) {
			return -1, fmt.Errorf("the kernel lacks openat2 (Linux 5.6+), which install needs to stay inside the project: %w", catalog.ErrPolicy)
		}
		return fd, err
	}
}

// openProjectDir opens the directory rel beneath the project root, creating
// missing components (0755) when create is set.
func openProjectDir(root, rel string, create bool) (*dirAt, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("project %s: %v: %w", root, err, catalog.ErrIO)
	}
	rfd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project %s: %v: %w", root, err, catalog.ErrIO)
	}
	defer unix.Close(rfd)
	return walkDir(&dirAt{fd: rfd, path: root}, rel, create)
}

// walkDir opens rel beneath base one component at a time, creating the
// missing ones when create is set.
func walkDir(base *dirAt, rel string, create bool) (*dirAt, error) {
	rel = filepath.Clean(rel)
	cur := "."
	for _, part := range strings.Split(rel, "/") {
		if part == "." || part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		if create {
			pfd, err := openat2(base.fd, cur, unix.O_PATH|unix.O_DIRECTORY)
			if err != nil {
				return nil, dirErr(base.path, cur, err)
			}
			err = unix.Mkdirat(pfd, part, 0o755)
			unix.Close(pfd)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, fmt.Errorf("create %s: %v: %w", filepath.Join(base.path, next), err, catalog.ErrIO)
			}
		}
		cur = next
	}
	fd, err := openat2(base.fd, cur, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, dirErr(base.path, cur, err)
	}
	return &dirAt{fd: fd, path: filepath.Join(base.path, cur)}, nil
}

func dirErr(base, rel string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
		return escaped(base, rel, catalog.ErrOutsideWorkspace)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: %w", filepath.Join(base, rel), fs.ErrNotExist)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory; move it away, then run again: %w", filepath.Join(base, rel), catalog.ErrConflict)
	case errors.Is(err, catalog.ErrPolicy):
		return err
	}
	return fmt.Errorf("open %s: %v: %w", filepath.Join(base, rel), err, catalog.ErrIO)
}

// lstat returns the type bits (unix.S_IFMT) of name, or 0 when it is missing.
func (d *dirAt) lstat(name string) (uint32, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stat %s: %v: %w", filepath.Join(d.path, name), err, catalog.ErrIO)
	}
	return st.Mode & unix.S_IFMT, nil
}

func (d *dirAt) readlink(name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(d.fd, name, buf)
	if err != nil {
		return "", fmt.Errorf("readlink %s: %v: %w", filepath.Join(d.path, name), err, catalog.ErrIO)
	}
	return string(buf[:n]), nil
}

// readFile reads the regular file name; a link, a directory or anything else
// there is ErrNotRegular.
func (d *dirAt) readFile(name string) ([]byte, error) {
	fd, err := openat2(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.path, name), fs.ErrNotExist)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.ENXIO):
		return nil, fmt.Errorf("%s: %w", filepath.Join(d.path, name), catalog.ErrNotRegular)
	case err != nil:
		return nil, fmt.Errorf("open %s: %v: %w", filepath.Join(d.path, name), err, catalog.ErrIO)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", f.Name(), catalog.ErrNotRegular)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %v: %w", f.Name(), err, catalog.ErrIO)
	}
	return b, nil
}

// put makes name hold data (file) or be a symlink to link, replacing what is
// there by a rename: a link at name is replaced, never written through.
func (d *dirAt) put(name string, data []byte, link string) error {
	for i := 0; ; i++ {
		tmp := fmt.Sprintf(".%s.contextd-%d-%d", name, os.Getpid(), i)
		var err error
		if link != "" {
			err = unix.Symlinkat(link, d.fd, tmp)
		} else {
			var fd int
			fd, err = unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				f := os.NewFile(uintptr(fd), tmp)
				_, err = f.Write(data)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					unix.Unlinkat(d.fd, tmp, 0)
				}
			}
		}
		if errors.Is(err, unix.EEXIST) && i < 100 {
			continue
		}
		if err == nil {
			if err = unix.Renameat(d.fd, tmp, d.fd, name); err != nil {
				unix.Unlinkat(d.fd, tmp, 0)
			}
		}
		if err != nil {
			return fmt.Errorf("write %s: %v: %w", filepath.Join(d.path, name), err, catalog.ErrIO)
		}
		return nil
	}
}

func (d *dirAt) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

func (d *dirAt) rmdir(name string) error {
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil {
		return &fs.PathError{Op: "rmdir", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// The manifest lives in the project, where an agent in the sandbox can
// rewrite it; what uninstall takes from it outside the project is therefore
// limited to the one thing install writes there: this project's trust entry
// (in the Codex config or Gemini's trusted folders, wherever the user kept
// them when installing), without text to put back, which install never
// records for it. Inside the project every path must stay inside.

func (o *Options) trustedTOML(root string, e tomlEntry) bool {
	if _, in, err := projectPath(root, e.File); err != nil || in {
		return err == nil
	}
	return filepath.Base(e.File) == "config.toml" && e.Key == "" && e.Replaced == "" &&
		len(e.Table) == 2 && e.Table[0] == "projects" && e.Table[1] == root
}

func (o *Options) trustedJSON(root string, e jsonEntry) bool {
	if _, in, err := projectPath(root, e.File); err != nil || in {
		return err == nil
	}
	real := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		real = r
	}
	return strings.HasSuffix(e.File, ".json") && !e.Append && e.Replaced == "" &&
		len(e.Path) == 1 && e.Path[0] == real && string(compact(e.Value)) == `"TRUST_FOLDER"`
}

// trustedDir says whether uninstall may remove (when empty) the directory d
// from the manifest: inside the project, or the directory of a trust file
// accepted above.
func trustedDir(root, d string, outside []string) bool {
	if _, in, err := projectPath(root, d); err != nil || in {
		return err == nil
	}
	for _, f := range outside {
		if filepath.Dir(f) == d {
			return true
		}
	}
	return false
}
