// Package workspace confines file access to a call's workspace (its project root):
// every open goes through openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) relative to
// a directory fd of the root, so `..`, absolute paths and symlinks cannot leave it,
// whatever races happen on the file system meanwhile.
package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// Place is where a call happens: its workspace root and working directory.
type Place struct {
	Root        string // workspace root, resolved through symlinks
	Cwd         string // working directory, resolved through symlinks
	LogicalRoot string // the root as the caller spells it (its cwd may pass symlinks)
}

// Find returns the place of a call made from cwd: the workspace is the nearest
// ancestor of cwd (or cwd itself) holding one of markers (".git" by default), else
// cwd. The file system root is never a workspace: a call from "/" is refused.
func Find(cwd string, markers []string) (Place, error) {
	if !filepath.IsAbs(cwd) {
		return Place{}, fmt.Errorf("working directory %q is not absolute: %w", cwd, catalog.ErrBadInput)
	}
	cwd = filepath.Clean(cwd)
	realCwd, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return Place{}, fmt.Errorf("working directory %q: %w", cwd, errnoErr("stat", err))
	}
	fi, err := os.Stat(realCwd)
	if err != nil {
		return Place{}, fmt.Errorf("working directory %q: %w", cwd, errnoErr("stat", err))
	}
	if !fi.IsDir() {
		return Place{}, fmt.Errorf("working directory %q is not a directory: %w", cwd, catalog.ErrBadInput)
	}
	root := realCwd
	for dir := realCwd; ; dir = filepath.Dir(dir) {
		if hasMarker(dir, markers) {
			root = dir
			break
		}
		if dir == "/" {
			break
		}
	}
	if root == "/" {
		return Place{}, fmt.Errorf("working directory / cannot be a workspace; start the agent in a project directory: %w", catalog.ErrPolicy)
	}
	logical := root
	if sub, _ := under(root, realCwd); sub == "." {
		logical = cwd
	} else if cand, ok := strings.CutSuffix(cwd, "/"+sub); ok && sameDir(cand, root) {
		// Only a spelling of the root itself: a symlink to a subdirectory can give
		// the cwd the same tail under a directory that is not the workspace.
		logical = cand
	}
	return Place{Root: root, Cwd: realCwd, LogicalRoot: logical}, nil
}

func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func hasMarker(dir string, markers []string) bool {
	for _, m := range markers {
		if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
			return true
		}
	}
	return false
}

// Resolve turns a path given by the caller into a path relative to the root, for
// Root's methods. Relative paths are taken from the working directory and are not
// cleaned: `..` and symlinks are left for the kernel to resolve under
// RESOLVE_BENEATH. Absolute paths must lie lexically under the root (in its resolved
// or its logical spelling) or are refused.
func (pl Place) Resolve(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path: %w", catalog.ErrBadInput)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path contains a NUL byte: %w", catalog.ErrBadInput)
	}
	if filepath.IsAbs(p) {
		if rel, ok := under(pl.Root, p); ok {
			return rel, nil
		}
		if rel, ok := under(pl.LogicalRoot, p); ok && pl.LogicalRoot != "" {
			return rel, nil
		}
		return "", fmt.Errorf("%s: %w (workspace %s)", p, catalog.ErrOutsideWorkspace, pl.Root)
	}
	base, ok := under(pl.Root, pl.Cwd)
	if !ok {
		return "", fmt.Errorf("working directory %s is outside workspace %s: %w", pl.Cwd, pl.Root, catalog.ErrOutsideWorkspace)
	}
	if base == "." {
		return p, nil
	}
	return base + "/" + p, nil
}

// under returns p relative to root when p is root or below it, judged on the
// cleaned strings (no file system access).
func under(root, p string) (string, bool) {
	p = filepath.Clean(p)
	if p == root {
		return ".", true
	}
	if strings.HasPrefix(p, root+"/") {
		return p[len(root)+1:], true
	}
	return "", false
}
