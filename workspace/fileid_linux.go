package workspace

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// FileID names a file as a descriptor of it shows it: its device and inode,
// and its path as the kernel resolved it. Reversible redaction ties a secret
// to the FileID of the file it was read from, so that it goes back only into
// that file: the path as written can be made to name another file (a symbolic
// link, a renamed directory) between the read and the write. The inode alone
// is not enough, as a freed inode number is soon reused by another file;
// the resolved path alone would take a new file under the old name for the
// old one.
type FileID struct {
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Path string `json:"path"`
}

// Key is the FileID as one comparable string ("" for the zero FileID).
func (id FileID) Key() string {
	if id.Path == "" {
		return ""
	}
	return strconv.FormatUint(id.Dev, 10) + ":" + strconv.FormatUint(id.Ino, 10) + ":" + id.Path
}

// Identify returns the FileID of the open file f.
func Identify(f *os.File) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileID{}, errnoErr("fstat", err)
	}
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return FileID{}, errnoErr("readlink", err)
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Path: p}, nil
}

// entryID is the FileID of the entry base of the open directory dirfd, whose
// status st already holds (fstatat without following a link).
func entryID(dirfd int, base string, st *unix.Stat_t) (FileID, error) {
	dir, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dirfd))
	if err != nil {
		return FileID{}, errnoErr("readlink", err)
	}
	if dir != "/" {
		dir += "/"
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Path: dir + base}, nil
}
