package pages

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// secureDir makes dir exist as a directory of this user's, mode 0700: stored
// output is command output, scrubbed only when a page is read.
func secureDir(dir string) error {
	// Parents are created 0700 too ($XDG_STATE_HOME/contextd holds other
	// private state); existing parents are left as they are.
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("pages: mkdir %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pages: mkdir %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("pages: lstat %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("pages: %s is not a directory (%v); refusing to store output there", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("pages: %s is owned by uid %d, not by this user (uid %d); refusing to store output there", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("pages: chmod 0700 %s: %w", dir, err)
		}
	}
	return nil
}
