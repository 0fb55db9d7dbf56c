package ns

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// maskFileName is the empty file that file masks are bound from, on the
// new root's tmpfs until the masks are in place.
const maskFileName = ".contextd-mask"

// planMasks turns Spec.Masks (and the targets of overlays without a lower
// directory) into mask entries, mounted after every other entry.
//
// A mask is placed where the sandbox's tree has its path (placed: the
// parents resolved on the host). When the path itself is a symbolic link
// on the host, what it points to is masked as well, at its canonical path:
// a link, in an exposed tree or anywhere else, resolves inside the sandbox
// to the same canonical path it does on the host (the sandbox mirrors the
// host's layout), and finds the mask there. Masks below another mask are
// dropped: the outer one hides them. Paths the sandbox provides itself (/proc, /dev) are never masked:
// the common ~/.something -> /dev/null must not take /dev/null away.
func planMasks(masks, hide []string) []*entry {
	var dests []string
	for _, m := range masks {
		p := placed(m)
		dests = append(dests, p)
		if real, err := canonical(m); err == nil && real != p {
			dests = append(dests, real)
		}
	}
	dests = append(dests, hide...)
	sort.Strings(dests)
	var out []*entry
	for _, d := range dests {
		if checkExtraPath(d) != nil {
			continue
		}
		if n := len(out); n > 0 && within(d, out[n-1].dest) {
			continue // sorted: an enclosing mask is the last one kept
		}
		out = append(out, &entry{dest: d, kind: kindMask, what: "mask", srcFD: -1, upperFD: -1, workFD: -1})
	}
	return out
}

// mountMask covers whatever the sandbox's tree has at e.dest by now: a
// directory with an empty tmpfs of mode 0, read-only; any other file with a
// read-only bind of an empty file of mode 0. Either way the owner (the
// user, without capabilities) can neither read, list nor change it, nor
// unmount it. A path the tree does not have needs nothing, and nothing is
// created for it; a symbolic link is left as it is (its target is masked at
// its own path if the host has it, see planMasks).
func (b *rootBuilder) mountMask(e *entry) *SetupError {
	rel := strings.TrimPrefix(e.dest, "/")
	where := "mask " + e.dest
	parent, t, err := b.lookup(rel)
	if err != nil {
		return sysErr(StepMounts, "openat", where, err)
	}
	if t < 0 {
		return nil
	}
	defer unix.Close(parent)
	defer unix.Close(t)
	name := filepath.Base(rel)
	var st unix.Stat_t
	if err := unix.Fstat(t, &st); err != nil {
		return sysErr(StepMounts, "fstat", where, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
		if err := unix.Mount("tmpfs", procFD(t), "tmpfs",
			unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0,size=4k"); err != nil {
			return sysErr(StepMounts, "mount", where, err)
		}
		return nil
	}
	src, se := b.maskFile()
	if se != nil {
		return se
	}
	if err := unix.Mount(procFD(src), procFD(t), "", unix.MS_BIND, ""); err != nil {
		return sysErr(StepMounts, "mount", where, err)
	}
	top, err := reopen(parent, name)
	if err != nil {
		return sysErr(StepMounts, "openat", where, err)
	}
	defer unix.Close(top)
	if err := remountReadOnly(procFD(top)); err != nil {
		return sysErr(StepMounts, "mount", where+" (remount read-only)", err)
	}
	return nil
}

// lookup opens rel in the new root and its parent directory, creating
// nothing and following no symbolic link. t < 0 with a nil error: nothing
// the command could reach is at rel (a component is missing, not a
// directory, a link, or a directory of another owner that the init may not
// search: the command may not either, and cannot chmod it). A directory of
// the user's own that the init cannot search (mode 0, with a group the user
// namespace does not map) is an error, since the command could chmod it
// and see what the mask is for.
func (b *rootBuilder) lookup(rel string) (parent, t int, err error) {
	fd, err := unix.Openat(b.rootFD, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	parts := strings.Split(rel, "/")
	for i, c := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, c, flags, 0)
		switch {
		case err == nil && i == len(parts)-1:
			return fd, next, nil
		case err == nil:
			unix.Close(fd)
			fd = next
			continue
		case err == unix.ENOENT || err == unix.ENOTDIR:
			err = nil
		case err == unix.EACCES && !ownedByCaller(fd):
			err = nil
		}
		unix.Close(fd)
		return -1, -1, err
	}
	unix.Close(fd)
	return -1, -1, unix.EINVAL // rel was empty: the root itself is never masked
}

func ownedByCaller(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Getuid()
}

// maskFile makes (once) the empty file of mode 0 that file masks are bound
// from, on the new root's own tmpfs.
func (b *rootBuilder) maskFile() (int, *SetupError) {
	if b.maskFD >= 0 {
		return b.maskFD, nil
	}
	f, err := unix.Openat(b.rootFD, maskFileName, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, sysErr(StepMounts, "openat", "mask file", err)
	}
	unix.Close(f)
	fd, err := unix.Openat(b.rootFD, maskFileName, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, sysErr(StepMounts, "openat", "mask file", err)
	}
	b.maskFD = fd
	return fd, nil
}

// dropMaskFile unlinks the mask file from the new root: the binds keep it,
// the sandbox's / does not show it.
func (b *rootBuilder) dropMaskFile() *SetupError {
	if b.maskFD < 0 {
		return nil
	}
	if err := unix.Unlinkat(b.rootFD, maskFileName, 0); err != nil {
		return sysErr(StepMounts, "unlinkat", "mask file", err)
	}
	unix.Close(b.maskFD)
	b.maskFD = -1
	return nil
}
