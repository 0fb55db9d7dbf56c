package ns

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// planOverlay opens the three host directories of a Spec.Overlays entry
// while the host's tree is intact (they may well lie under /tmp, which the
// new root covers) and adds the entry. When the lower directory does not
// exist it adds nothing and returns the target, to be masked: the sandbox
// then sees nothing there rather than whatever else would show at that
// path.
func (b *rootBuilder) planOverlay(o Overlay) (string, *SetupError) {
	dest := placed(o.Target)
	if se := checkExtraPath(dest); se != nil {
		se.Path = "overlay target " + o.Target
		return "", se
	}
	layers := fmt.Sprintf("lowerdir=%s, upperdir=%s, workdir=%s", o.Lower, o.Upper, o.Work)
	e := &entry{dest: dest, kind: kindOverlay, what: "overlay", isDir: true,
		srcFD: -1, upperFD: -1, workFD: -1, layers: layers}
	open := func(p, layer string) (int, *SetupError) {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, sysErr(StepMounts, "open", "overlay "+layer+" "+p, err)
		}
		return fd, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(o.Lower, &st); err == unix.ENOENT {
		return dest, nil
	}
	var se *SetupError
	if e.srcFD, se = open(o.Lower, "lowerdir"); se != nil {
		return "", se
	}
	b.entries = append(b.entries, e)
	if e.upperFD, se = open(o.Upper, "upperdir"); se != nil {
		return "", se
	}
	if e.workFD, se = open(o.Work, "workdir"); se != nil {
		return "", se
	}
	// The kernel wants both on one mount and says only EINVAL otherwise.
	var up, work unix.Stat_t
	if err := unix.Fstat(e.upperFD, &up); err != nil {
		return "", sysErr(StepMounts, "fstat", "overlay upperdir "+o.Upper, err)
	}
	if err := unix.Fstat(e.workFD, &work); err != nil {
		return "", sysErr(StepMounts, "fstat", "overlay workdir "+o.Work, err)
	}
	if up.Dev != work.Dev {
		return "", &SetupError{Step: StepMounts, Path: "overlay " + dest + " (" + layers + ")", Errno: unix.EXDEV,
			Msg: "upperdir and workdir are on different file systems"}
	}
	return "", nil
}

// mountOverlay mounts the overlay of e at the mount point t. The layers
// are named by their descriptors (/proc/self/fd/N): they were opened before
// the new root covered /tmp, a descriptor cannot be redirected by a
// symbolic link planted since, and the option string needs no escaping of
// the commas and colons a path may hold. The kernel keeps the layers it
// resolved, so the descriptors can be closed after the mount; inside, the
// mount table shows only those /proc/self/fd paths, not the host's.
//
// userxattr: the overlay's own metadata (whiteouts, opaque directories)
// goes into user.overlay.* extended attributes of the upper layer, which
// an unprivileged user namespace may write (trusted.* it may not).
// Neither redirect_dir nor metacopy is on with it, so renaming a directory
// that came from the lower layer fails with EXDEV (tools fall back to a
// copy). A file of the lower layer owned by a uid the user namespace does
// not map (root's) cannot be copied up: writing it fails (EOVERFLOW), and
// the lower layer is unchanged either way.
func mountOverlay(e *entry, t int, where string) *SetupError {
	opts := "lowerdir=" + procFD(e.srcFD) + ",upperdir=" + procFD(e.upperFD) +
		",workdir=" + procFD(e.workFD) + ",userxattr"
	if err := unix.Mount("overlay", procFD(t), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return sysErr(StepMounts, "mount", where+" ("+e.layers+")", err)
	}
	return nil
}

// probeProfile lets the probe's shell do anything: the command is fixed,
// and only the mount is being tested.
var probeProfile = []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`)

// ProbeOverlay says whether Spec.Overlays work for this user on this
// machine, the honest way: it runs a sandbox like any call's (Start; the
// binary must call Init first thing, as for every sandbox) with an overlay
// whose layers it makes in a new directory below dir, in which a shell
// appends to a lower file (a copy-up) and creates a new file; then it checks
// from outside that both writes are in the upper layer and the lower layer
// is as it was. nil means overlays work. Otherwise the error says why: a
// *SetupError (StepMounts, the mount's errno) when the kernel refused the
// mount, a plain error when the mount worked but the writes did not.
//
// dir must be a writable directory on the file system that will hold the
// upper layers (under $XDG_CACHE_HOME/contextd): whether that one supports
// the user.* extended attributes overlayfs needs is part of the answer.
// The probe costs one fresh sandbox start (tens of milliseconds); the
// daemon runs it once (at start, and for doctor) and decides, before it
// builds any Spec, whether to use overlays or its fallback (a read-only
// cache and a private writable one). It removes what it made.
func ProbeOverlay(dir string) error {
	root, err := os.MkdirTemp(dir, "contextd-overlay-probe-")
	if err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	defer removeOverlayDirs(root)
	lower, upper, work, ws := filepath.Join(root, "lower"), filepath.Join(root, "upper"),
		filepath.Join(root, "work"), filepath.Join(root, "ws")
	view := filepath.Join(ws, "view")
	for _, d := range []string{lower, upper, work, ws, view} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("overlay probe: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "old"), []byte("lower\n"), 0o600); err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	// The layers lie outside the workspace: only the overlay shows them.
	s := &Spec{
		Argv:      []string{"sh", "-c", "echo upper >> view/old && echo new > view/new"},
		Env:       []string{"PATH=/usr/bin:/bin", "LANG=C"},
		Workspace: ws,
		Overlays:  []Overlay{{Lower: lower, Upper: upper, Work: work, Target: view}},
		Seccomp:   probeProfile,
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("overlay probe: %w", err)
	}
	defer errR.Close()
	c, err := Start(s, nil, nil, errW)
	errW.Close()
	if err != nil {
		return err
	}
	c.Release()
	stderr := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(io.LimitReader(errR, 4096)); stderr <- b }()
	code, _, err := c.Wait()
	msg := bytes.TrimSpace(<-stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("overlay probe: the overlay mounted, but writing through it failed (exit status %d): %s", code, msg)
	}
	for _, f := range []struct{ path, want string }{
		{filepath.Join(lower, "old"), "lower\n"},
		{filepath.Join(upper, "old"), "lower\nupper\n"},
		{filepath.Join(upper, "new"), "new\n"},
	} {
		got, err := os.ReadFile(f.path)
		if err != nil || string(got) != f.want {
			return fmt.Errorf("overlay probe: after writing through the overlay, %s holds %q (%v), want %q", f.path, got, err, f.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(lower, "new")); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("overlay probe: a write through the overlay reached the lower layer (%v)", err)
	}
	return nil
}

// removeOverlayDirs removes a tree that held an overlay's layers. The
// kernel leaves workdir/work with mode 0, which os.RemoveAll cannot
// descend into while it is not empty: give back the owner's permissions
// first.
func removeOverlayDirs(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(root)
}
