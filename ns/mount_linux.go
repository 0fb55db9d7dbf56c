package ns

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// newRootAt is where the init mounts the tmpfs that becomes the sandbox's
// root. The tmpfs exists only in the init's new mount namespace; covering
// the host's /tmp there hides nothing from anyone else. Every host path the
// sandbox needs is opened before it is mounted (a workspace may well live
// under /tmp), and bind-mounted from that descriptor.
const newRootAt = "/tmp"

type kind int

const (
	kindProc    kind = iota // fresh procfs of the new PID namespace
	kindDev                 // minimal /dev
	kindTmp                 // fresh /tmp
	kindHome                // $HOME: empty tmpfs, or Spec.HomeDir bound read-write
	kindBindRO              // host path, read-only
	kindBindRW              // host path, read-write
	kindSymlink             // host symlink, recreated (e.g. /bin -> usr/bin)
	kindOverlay             // overlayfs of a host lower directory (Spec.Overlays)
	kindMask                // covers what is at dest (Spec.Masks), mounted last
)

// entry is one thing to put into the new root, at dest (an absolute path as
// seen inside the sandbox, which is also the canonical host path for binds).
type entry struct {
	dest  string
	kind  kind
	what  string // for messages: "workspace", "read-only path", ...
	srcFD int    // O_PATH descriptor of the source (binds, HomeDir, overlay lower)
	isDir bool   // the source is a directory (binds)
	link  string // the symlink's target (kindSymlink)

	upperFD, workFD int    // the overlay's other layers (kindOverlay), or -1
	layers          string // the overlay's host paths, for messages
}

// rootBuilder builds the new root under newRootAt.
type rootBuilder struct {
	entries []*entry
	rootFD  int
	// own holds the mount ids of the tmpfs mounts the init made, and of the
	// bind of Spec.HomeDir (contextd's own scratch directory). Only there
	// may it create directories, files and symlinks: a mount point that does
	// not exist inside any other bind-mounted host tree is never created, as
	// that would write to the host's file system. Mount ids rather than
	// device numbers: a bind shares its device with every other bind from
	// the same host file system, so a bind the init may write to would
	// otherwise make all of them writable.
	own map[uint64]bool
	// maskFD is the empty, unreadable file that file masks are bound from
	// (made on the new root's tmpfs when the first is needed, unlinked
	// before the root is made read-only), or -1.
	maskFD int
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// buildRoot builds the sandbox's file system and pivots into it. It returns
// Spec.Dir as seen inside.
func (sb *sandbox) buildRoot() (string, *SetupError) {
	s := sb.spec
	// Nothing mounted from here on may propagate to the host, and nothing
	// the host mounts later may appear in the sandbox.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", sysErr(StepMounts, "mount", "/ (make private)", err)
	}
	b := &rootBuilder{rootFD: -1, maskFD: -1, own: map[uint64]bool{}}
	defer b.close()
	if e := b.plan(s); e != nil {
		return "", e
	}
	sb.mark("plan")
	// Spec.Dir as the sandbox will see it. If it does not exist, chdir fails
	// inside, with the same error as for a host path that is not visible:
	// the sandbox does not tell which host paths exist.
	dir, err := canonical(s.Dir)
	if err != nil {
		dir = s.Dir
	}

	if err := unix.Mount("tmpfs", newRootAt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return "", sysErr(StepMounts, "mount", "new root (tmpfs on "+newRootAt+")", err)
	}
	fd, err := unix.Open(newRootAt, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", sysErr(StepMounts, "open", "new root", err)
	}
	b.rootFD = fd
	if e := b.markOwn(fd, "new root"); e != nil {
		return "", e
	}

	for _, e := range b.entries {
		if se := b.mountEntry(e); se != nil {
			return "", se
		}
	}
	sb.mark("mounts")
	if e := b.dropMaskFile(); e != nil {
		return "", e
	}
	sb.mark("submounts")
	// Nothing may be created at the top level of the sandbox.
	if err := unix.Mount("", procFD(b.rootFD), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return "", sysErr(StepMounts, "mount", "/ (remount read-only)", err)
	}
	if e := pivot(b.rootFD); e != nil {
		return "", e
	}
	return dir, nil
}

func (b *rootBuilder) close() {
	for _, e := range b.entries {
		for _, fd := range []*int{&e.srcFD, &e.upperFD, &e.workFD} {
			if *fd > 2 {
				unix.Close(*fd)
				*fd = -1
			}
		}
	}
	if b.maskFD >= 0 {
		unix.Close(b.maskFD)
		b.maskFD = -1
	}
	if b.rootFD >= 0 {
		unix.Close(b.rootFD)
		b.rootFD = -1
	}
}

// plan collects the entries, opening every host source while the host's
// tree is intact, and orders them parents first, masks last. Every entry
// is added as soon as its descriptors are open, so that close releases
// them whatever fails later.
func (b *rootBuilder) plan(s *Spec) *SetupError {
	b.entries = append(b.entries,
		&entry{dest: "/proc", kind: kindProc, what: "/proc", srcFD: -1},
		&entry{dest: "/dev", kind: kindDev, what: "/dev", srcFD: -1},
		&entry{dest: "/tmp", kind: kindTmp, what: "/tmp", srcFD: -1},
	)
	// Paths listed below the workspace (the protected ones, the
	// directories on their way) must still resolve below it when opened:
	// a directory swapped for a link by a concurrent call must not bring
	// in, read-only or read-write, what it names outside (checked once the
	// workspace is open, below).
	type listed struct {
		p string
		e *entry
	}
	var beneath []listed
	for _, l := range []struct {
		paths []string
		k     kind
		what  string
	}{{s.ReadOnly, kindBindRO, "read-only path"}, {s.ReadWrite, kindBindRW, "read-write path"}} {
		for _, p := range l.paths {
			e, se := hostEntry(p, l.k, l.what, true)
			if se != nil {
				return se
			}
			if e == nil {
				continue
			}
			b.entries = append(b.entries, e)
			if e.kind != kindSymlink && within(filepath.Clean(p), filepath.Clean(s.Workspace)) {
				beneath = append(beneath, listed{p, e})
			}
		}
	}
	ws, se := hostEntry(s.Workspace, kindBindRW, "workspace", false)
	if se != nil {
		return se
	}
	if !ws.isDir {
		unix.Close(ws.srcFD)
		return &SetupError{Step: StepMounts, Syscall: "open", Path: "workspace " + s.Workspace, Errno: unix.ENOTDIR}
	}
	// The home and the workspace never share a path (refused below), so
	// the workspace's place in the list decides only its ties with the
	// read-only and read-write paths above: it wins them (a stable sort
	// keeps the later entry on top).
	b.entries = append(b.entries, ws)
	for _, l := range beneath {
		if !within(l.e.dest, ws.dest) {
			return &SetupError{Step: StepMounts, Path: l.e.what + " " + l.p, Errno: unix.EXDEV,
				Msg: "it now resolves to " + l.e.dest + ", outside the workspace " + ws.dest + " (a link planted on its way?)"}
		}
	}
	for _, p := range s.Pins {
		e, se := hostEntry(p, kindBindRW, "pinned path", true)
		if se != nil {
			return se
		}
		if e == nil || e.kind == kindSymlink {
			continue // gone or a link since it was listed: nothing to pin
		}
		b.entries = append(b.entries, e)
		if e.dest == ws.dest || !within(e.dest, ws.dest) {
			return &SetupError{Step: StepMounts, Path: "pinned path " + p, Errno: unix.EXDEV,
				Msg: "it now resolves to " + e.dest + ", outside the workspace " + ws.dest + " (a link planted on its way?)"}
		}
	}
	if s.Home != "" {
		home, err := canonical(s.Home)
		if err != nil {
			home = s.Home // nothing there to hide; still give HOME a tmpfs if it can be placed
		}
		if home == ws.dest {
			return &SetupError{Step: StepValidate, Path: home, Msg: "workspace is the home directory; use a project directory below it"}
		}
		h := &entry{dest: home, kind: kindHome, what: "home", srcFD: -1}
		b.entries = append(b.entries, h)
		if s.HomeDir != "" {
			if se := openHomeDir(h, s.HomeDir, ws.dest); se != nil {
				return se
			}
		}
	}
	for _, bd := range s.Binds {
		if se := b.planBind(bd); se != nil {
			return se
		}
	}
	var hide []string // targets of overlays without a lower directory
	for _, o := range s.Overlays {
		dest, se := b.planOverlay(o)
		if se != nil {
			return se
		}
		if dest != "" {
			hide = append(hide, dest)
		}
	}
	// Parents before children: a path sorts before every path it prefixes.
	// Stable, so that for equal paths the later entry is mounted on top.
	sort.SliceStable(b.entries, func(i, j int) bool { return b.entries[i].dest < b.entries[j].dest })
	// Masks come after everything else, so that no entry is mounted over
	// one, or below one where it would show again.
	b.entries = append(b.entries, planMasks(s.Masks, hide)...)
	return nil
}

// openHomeDir opens Spec.HomeDir for h (the $HOME entry) and checks it
// where it really is: an existing directory owned by the caller, and, with
// every symbolic link resolved, neither the home nor above it nor in the
// workspace (a link must not turn the scratch home into the real one).
func openHomeDir(h *entry, dir, workspace string) *SetupError {
	what := "home directory " + dir
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysErr(StepMounts, "open", what, err)
	}
	h.srcFD, h.isDir = fd, true
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return sysErr(StepMounts, "fstat", what, err)
	}
	real, err := os.Readlink(procFD(fd))
	if err != nil {
		return sysErr(StepMounts, "readlink", what, err)
	}
	e := checkHomeDirPlace(real, h.dest, workspace)
	if e == nil {
		e = checkExtraPath(real)
	}
	if e != nil {
		e.Path = what
		return e
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &SetupError{Step: StepMounts, Path: what, Errno: unix.EPERM,
			Msg: fmt.Sprintf("owned by uid %d, not by the caller (uid %d)", st.Uid, uid)}
	}
	return nil
}

// planBind adds a Spec.Binds entry: the source opened now, the target
// where the sandbox's tree has that path.
func (b *rootBuilder) planBind(bd Bind) *SetupError {
	k := kindBindRO
	if bd.Writable {
		k = kindBindRW
	}
	e, se := hostEntry(bd.Source, k, "bind of "+bd.Source+" at", false)
	if se != nil {
		return se
	}
	b.entries = append(b.entries, e)
	e.dest = placed(bd.Target)
	if se := checkExtraPath(e.dest); se != nil {
		se.Path = "bind target " + bd.Target
		return se
	}
	return nil
}

// placed says where p is in the sandbox's tree, which has host paths at
// their canonical place: p's parent resolved on the host as far as it
// exists there, its last component as it is (so that a target or a mask
// that is a symbolic link on the host is placed at the link, not where it
// points).
func placed(p string) string {
	if p == "/" {
		return p
	}
	dir, rest := filepath.Dir(p), filepath.Base(p)
	for {
		if c, err := canonical(dir); err == nil {
			return filepath.Join(c, rest)
		}
		if dir == "/" {
			return p
		}
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
	}
}

// hostEntry opens a host path for binding. optional: a missing path yields
// no entry, and a symbolic link is recreated as a link rather than
// followed (so /bin -> usr/bin stays a link on merged-/usr systems).
func hostEntry(p string, k kind, what string, optional bool) (*entry, *SetupError) {
	p = filepath.Clean(p)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		if optional && (err == unix.ENOENT || err == unix.ENOTDIR) {
			return nil, nil
		}
		return nil, sysErr(StepMounts, "lstat", what+" "+p, err)
	}
	if optional && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := os.Readlink(p)
		if err != nil {
			return nil, sysErr(StepMounts, "readlink", what+" "+p, err)
		}
		parent, err := canonical(filepath.Dir(p))
		if err != nil {
			parent = filepath.Dir(p)
		}
		return &entry{dest: filepath.Join(parent, filepath.Base(p)), kind: kindSymlink, what: what, srcFD: -1, link: target}, nil
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if optional && err == unix.ENOENT {
			return nil, nil
		}
		return nil, sysErr(StepMounts, "open", what+" "+p, err)
	}
	real, err := os.Readlink(procFD(fd))
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		unix.Close(fd)
		return nil, sysErr(StepMounts, "readlink", what+" "+p, err)
	}
	if verr := checkExtraPath(real); verr != nil {
		unix.Close(fd)
		verr.Path = what + " " + p
		return nil, verr
	}
	return &entry{dest: real, kind: k, what: what, srcFD: fd, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

// canonical resolves p to the path the kernel has for it.
func canonical(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return os.Readlink(procFD(fd))
}

// markOwn records the mount that fd is on as one where the init may create
// mount points.
func (b *rootBuilder) markOwn(fd int, what string) *SetupError {
	id, err := mountID(fd)
	if err != nil {
		return sysErr(StepMounts, "statx", what, err)
	}
	b.own[id] = true
	return nil
}

func (b *rootBuilder) isOwn(fd int) bool {
	id, err := mountID(fd)
	return err == nil && b.own[id]
}

// mountID is the id of the mount fd is on (Linux 5.8; without it nothing
// counts as the init's own, and setup fails rather than guess).
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &stx); err != nil {
		return 0, err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, unix.ENOSYS
	}
	return stx.Mnt_id, nil
}

// walk opens the directory rel (relative to the new root) without following
// any symbolic link, creating missing directories where that is allowed
// (see rootBuilder.own). It returns an O_PATH descriptor.
func (b *rootBuilder) walk(rel string) (int, error) {
	fd, err := unix.Openat(b.rootFD, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." || rel == "" {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && b.isOwn(fd) {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// target opens (creating it where allowed) the mount point name in dirFD:
// a directory when dir, else a file. A symbolic link there is refused.
func (b *rootBuilder) target(dirFD int, name string, dir bool) (int, error) {
	fd, err := unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT && b.isOwn(dirFD) {
		if dir {
			err = unix.Mkdirat(dirFD, name, 0o755)
		} else {
			var f int
			f, err = unix.Openat(dirFD, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(f)
			}
		}
		if err == nil {
			fd, err = unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	switch t := st.Mode & unix.S_IFMT; {
	case t == unix.S_IFLNK:
		err = unix.ELOOP
	case dir && t != unix.S_IFDIR:
		err = unix.ENOTDIR
	case !dir && t == unix.S_IFDIR:
		err = unix.EISDIR
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// reopen opens what is now mounted at name in dirFD (the top of the stack).
func reopen(dirFD int, name string) (int, error) {
	return unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func (b *rootBuilder) mountEntry(e *entry) *SetupError {
	if e.kind == kindMask {
		return b.mountMask(e)
	}
	rel := strings.TrimPrefix(e.dest, "/")
	parentRel, name := filepath.Dir(rel), filepath.Base(rel)
	where := e.what
	if where != e.dest {
		where += " " + e.dest
	}
	parent, err := b.walk(parentRel)
	if err != nil {
		if err == unix.ENOENT && (e.kind == kindHome || e.kind == kindSymlink) {
			return nil // its place is not visible in the sandbox: nothing to do
		}
		return sysErr(StepMounts, "openat", where, err)
	}
	defer unix.Close(parent)

	if e.kind == kindSymlink {
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil || !b.isOwn(parent) {
			return nil // already visible through a bind, or cannot be placed
		}
		if err := unix.Symlinkat(e.link, parent, name); err != nil {
			return sysErr(StepMounts, "symlinkat", where, err)
		}
		return nil
	}

	dir := e.isDir || e.kind != kindBindRO && e.kind != kindBindRW
	t, err := b.target(parent, name, dir)
	if err != nil {
		if err == unix.ENOENT && e.kind == kindHome {
			return nil
		}
		return sysErr(StepMounts, "openat", where, err)
	}
	defer unix.Close(t)

	switch e.kind {
	case kindBindRO, kindBindRW:
		if err := unix.Mount(procFD(e.srcFD), procFD(t), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return sysErr(StepMounts, "mount", where, err)
		}
		if e.kind == kindBindRO {
			top, err := reopen(parent, name)
			if err != nil {
				return sysErr(StepMounts, "openat", where, err)
			}
			defer unix.Close(top)
			if se := b.readOnlyTree(top, where); se != nil {
				return se
			}
		}
	case kindHome:
		if e.srcFD < 0 {
			// Owned by the user: the mapped uid mounts it.
			return b.mountTmpfs(parent, name, t, where, "mode=0700")
		}
		// Spec.HomeDir: contextd's scratch directory for this home. Mount
		// points below $HOME are created in it, as they would be on the
		// tmpfs.
		if err := unix.Mount(procFD(e.srcFD), procFD(t), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return sysErr(StepMounts, "mount", where, err)
		}
		top, err := reopen(parent, name)
		if err != nil {
			return sysErr(StepMounts, "openat", where, err)
		}
		defer unix.Close(top)
		return b.markOwn(top, where)
	case kindTmp:
		return b.mountTmpfs(parent, name, t, where, "mode=1777")
	case kindOverlay:
		return mountOverlay(e, t, where)
	case kindProc:
		// A proc of the new PID namespace: it shows only the sandbox's
		// processes. The kernel allows it only while a fully visible proc
		// is mounted in this mount namespace (the host's, until the pivot)
		// and only with at least that one's nosuid/nodev/noexec.
		if err := unix.Mount("proc", procFD(t), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return sysErr(StepMounts, "mount", where, err)
		}
	case kindDev:
		return b.setupDev(parent, name, t)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of the init's own at t (name in parent).
func (b *rootBuilder) mountTmpfs(parent int, name string, t int, where, mode string) *SetupError {
	if err := unix.Mount("tmpfs", procFD(t), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode); err != nil {
		return sysErr(StepMounts, "mount", where, err)
	}
	top, err := reopen(parent, name)
	if err != nil {
		return sysErr(StepMounts, "openat", where, err)
	}
	defer unix.Close(top)
	return b.markOwn(top, where)
}

// devNodes are bind-mounted from the host: device nodes cannot be created
// (mknod) in a user namespace, and a tmpfs mounted there is nodev anyway.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// setupDev builds a minimal /dev: a small tmpfs with the host's harmless
// character devices bound in, a private devpts instance, /dev/shm and the
// usual symlinks; then makes the tmpfs itself read-only.
func (b *rootBuilder) setupDev(parent int, name string, t int) *SetupError {
	const devFlags = unix.MS_NOSUID | unix.MS_NOEXEC
	if err := unix.Mount("tmpfs", procFD(t), "tmpfs", devFlags, "mode=0755,size=64k"); err != nil {
		return sysErr(StepMounts, "mount", "/dev", err)
	}
	dev, err := reopen(parent, name)
	if err != nil {
		return sysErr(StepMounts, "openat", "/dev", err)
	}
	defer unix.Close(dev)
	if se := b.markOwn(dev, "/dev"); se != nil {
		return se
	}
	for _, n := range devNodes {
		host := "/dev/" + n
		var st unix.Stat_t
		if unix.Stat(host, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
			continue
		}
		nt, err := b.target(dev, n, false)
		if err != nil {
			return sysErr(StepMounts, "openat", host, err)
		}
		err = unix.Mount(host, procFD(nt), "", unix.MS_BIND, "")
		unix.Close(nt)
		if err != nil {
			return sysErr(StepMounts, "mount", host, err)
		}
	}

	pts, err := b.target(dev, "pts", true)
	if err != nil {
		return sysErr(StepMounts, "openat", "/dev/pts", err)
	}
	// newinstance: the sandbox's own pty namespace, not the host's ptys.
	// No gid= option: the tty group is not mapped in the user namespace.
	err = unix.Mount("devpts", procFD(pts), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	unix.Close(pts)
	if err != nil {
		return sysErr(StepMounts, "mount", "/dev/pts", err)
	}

	shm, err := b.target(dev, "shm", true)
	if err != nil {
		return sysErr(StepMounts, "openat", "/dev/shm", err)
	}
	err = unix.Mount("tmpfs", procFD(shm), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	unix.Close(shm)
	if err != nil {
		return sysErr(StepMounts, "mount", "/dev/shm", err)
	}

	for _, l := range [][2]string{
		{"ptmx", "pts/ptmx"},
		{"fd", "/proc/self/fd"},
		{"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"},
	} {
		if err := unix.Symlinkat(l[1], dev, l[0]); err != nil {
			return sysErr(StepMounts, "symlinkat", "/dev/"+l[0], err)
		}
	}
	if err := unix.Mount("", procFD(dev), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|devFlags, ""); err != nil {
		return sysErr(StepMounts, "mount", "/dev (remount read-only)", err)
	}
	return nil
}

// remountReadOnly makes the bind mount at target read-only. A mount that
// came from the host into this user namespace has its flags locked: a
// remount that would clear nosuid, nodev, noexec or change the atime mode
// fails with EPERM. So the flags it already has (statfs) are passed along.
func remountReadOnly(target string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, m := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&m.st != 0 {
			flags |= m.ms
		}
	}
	// Neither noatime nor relatime: strictatime. Recent kernels keep the
	// atime mode of a remount that names none, older ones switch it to
	// relatime (EPERM when locked); naming the mode the mount has works on
	// both.
	if uintptr(st.Flags)&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		flags |= unix.MS_STRICTATIME
	}
	return unix.Mount("", target, "", flags, "")
}

// readOnlyTree makes the bind at top read-only, with every mount the
// recursive bind brought along below it (a host mount below /usr or /etc,
// say): one mount_setattr(AT_RECURSIVE), which only adds the flag, so the
// ones the kernel locked on a host mount (nosuid, nodev, noexec, the atime
// mode) stay as they are. It needs Linux 5.12; an older kernel fails the
// setup here, with that said, rather than leave a submount writable.
func (b *rootBuilder) readOnlyTree(top int, where string) *SetupError {
	err := unix.MountSetattr(top, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err == unix.ENOSYS {
		return &SetupError{Step: StepMounts, Syscall: "mount_setattr", Path: where, Errno: unix.ENOSYS,
			Msg: "the kernel cannot make a mount tree read-only (needs Linux 5.12)"}
	}
	if err != nil {
		return sysErr(StepMounts, "mount_setattr", where+" (read-only)", err)
	}
	return nil
}

// pivot makes the new root the root and detaches the old one entirely.
// pivot_root(".", ".") stacks the old root on top of the new one at "/";
// unmounting "." then removes it (the approach LXC and runc use), with no
// put_old directory needed in the read-only new root.
func pivot(rootFD int) *SetupError {
	old, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysErr(StepPivotRoot, "open", "/", err)
	}
	defer unix.Close(old)
	if err := unix.Fchdir(rootFD); err != nil {
		return sysErr(StepPivotRoot, "fchdir", "new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return sysErr(StepPivotRoot, "pivot_root", "", err)
	}
	if err := unix.Fchdir(old); err != nil {
		return sysErr(StepPivotRoot, "fchdir", "old root", err)
	}
	if err := unix.Mount("", ".", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return sysErr(StepPivotRoot, "mount", "old root (make private)", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return sysErr(StepPivotRoot, "umount2", "old root", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return sysErr(StepPivotRoot, "chdir", "/", err)
	}
	return nil
}
