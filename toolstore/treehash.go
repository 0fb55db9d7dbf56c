package toolstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// TreeHash is "sha256:<hex>" over a tree: each regular file's path, whether
// it is executable and its content, and each directory's path, in sorted
// order. A symbolic link, a device or any other special file is refused: an
// installed tool's tree holds none.
func TreeHash(root string) (string, error) {
	h := sha256.New()
	if err := hashDir(h, root, "."); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func hashDir(h io.Writer, root, rel string) error {
	dir := filepath.Join(root, rel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("tree %s: %v: %w", root, err, catalog.ErrIO)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	fmt.Fprintf(h, "d %q\n", rel)
	for _, e := range ents {
		r := filepath.Join(rel, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if err := hashDir(h, root, r); err != nil {
				return err
			}
		case t.IsRegular():
			if err := hashFile(h, root, r); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tree %s: %s is a %s, not a file or a directory: %w", root, r, fileKind(t), catalog.ErrPolicy)
		}
	}
	return nil
}

func hashFile(h io.Writer, root, rel string) error {
	f, err := os.OpenFile(filepath.Join(root, rel), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tree %s: %v: %w", root, err, catalog.ErrIO)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tree %s: %v: %w", root, err, catalog.ErrIO)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("tree %s: %s changed while read: %w", root, rel, catalog.ErrPolicy)
	}
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return fmt.Errorf("tree %s: %v: %w", root, err, catalog.ErrIO)
	}
	fmt.Fprintf(h, "f %q %t %x\n", rel, st.Mode()&0o111 != 0, fh.Sum(nil))
	return nil
}

func fileKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
