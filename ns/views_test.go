//go:build linux

package ns_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/ns"
)

// The views of issue 16: a persistent scratch $HOME (HomeDir), files shown
// at another path (Binds), toolchain caches behind an overlay (Overlays)
// and a deny-list that wins over all of them (Masks).

// overlayDirs makes a lower, upper and work directory under $TMPDIR (which
// the sandbox's /tmp covers) and removes them afterwards, work/work (mode
// 0, made by the kernel) included.
func overlayDirs(t *testing.T) (lower, upper, work string) {
	t.Helper()
	root := workspace(t)
	t.Cleanup(func() { chmodTree(root) })
	lower, upper, work = filepath.Join(root, "lower"), filepath.Join(root, "upper"), filepath.Join(root, "work")
	for _, d := range []string{lower, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return lower, upper, work
}

// chmodTree gives the owner back every directory of root, so that
// t.TempDir's cleanup can remove it.
func chmodTree(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileState is what "unchanged" means for a file of a lower layer.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	data  string // regular files: the content; links: the target
}

// snapshot records every file below root, root included.
func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.data = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			st.data, _ = os.Readlink(p)
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]fileState) {
	t.Helper()
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Errorf("%s: %s is gone", what, p)
		case a != b:
			t.Errorf("%s: %s changed: %+v, was %+v", what, p, a, b)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s is new", what, p)
		}
	}
}

// setupFailure runs s, which must fail at setup, and returns the error.
// atStart: Start itself refuses it (validation), before any process.
func setupFailure(t *testing.T, s *ns.Spec, atStart bool) error {
	t.Helper()
	c, err := startSandbox(s, nil, nil, nil)
	if atStart {
		if err == nil {
			c.Kill()
			c.Wait()
			t.Fatal("Start accepted the spec")
		}
		return err
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	c.Release()
	code, _, err := c.Wait()
	if err == nil || code != -1 {
		t.Fatalf("Wait: code %d err %v, want a setup error", code, err)
	}
	return err
}

// wantSetupError checks that err is a SetupError at step, wrapping errno
// when that is not 0, and that the command (which touches marker) did not
// run.
func wantSetupError(t *testing.T, err error, step string, errno syscall.Errno, marker string) {
	t.Helper()
	var se *ns.SetupError
	if !errors.Is(err, ns.ErrSetup) || !errors.As(err, &se) {
		t.Fatalf("error %v (%T) does not wrap ErrSetup", err, err)
	}
	if se.Step != step {
		t.Errorf("step %q, want %q (%v)", se.Step, step, err)
	}
	if errno != 0 && !errors.Is(err, errno) {
		t.Errorf("error %v is not %v", err, errno)
	}
	t.Logf("%v", err)
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		t.Error("the command ran despite the failed setup")
	}
}

func TestHomeDirPersists(t *testing.T) {
	home := homeDir(t)
	secret := filepath.Join(home, ".ctxd-secret")
	if err := os.WriteFile(secret, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	ws := homeWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws, "in-ws"), []byte("ws"), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch := workspace(t)

	s := spec(t, ws, "sh", "-c", `echo kept > "$HOME/state" && mkdir -p "$HOME/.cache/tool" && echo warm > "$HOME/.cache/tool/entry" && stat -c %a "$HOME"`)
	s.HomeDir = scratch
	if out := strings.TrimSpace(mustRun(t, s)); out != "755" && out != "700" {
		t.Errorf("mode of $HOME %q, want the scratch directory's", out)
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "state")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the write to $HOME is not in the scratch directory: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(home, "state")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the write to $HOME reached the real home: %v", err)
	}

	// A second sandbox finds it; the workspace is still mounted over the
	// scratch home, and the real home is still hidden.
	s = toolSpec(t, ws, "read", home+"/state", home+"/.cache/tool/entry", ws+"/in-ws", secret)
	s.HomeDir = scratch
	m := probe(t, s)
	want := map[string]string{
		home + "/state":             `OK "kept\n"`,
		home + "/.cache/tool/entry": `OK "warm\n"`,
		ws + "/in-ws":               `OK "ws"`,
		secret:                      "ENOENT",
	}
	for p, w := range want {
		if m[p] != w {
			t.Errorf("read %s: %s, want %s", p, m[p], w)
		}
	}
	// The workspace's mount point was made in the scratch directory, empty.
	rel, _ := filepath.Rel(home, ws)
	if ents, err := os.ReadDir(filepath.Join(scratch, rel)); err != nil || len(ents) != 0 {
		t.Errorf("mount point of the workspace in the scratch home: %v %v", ents, err)
	}
}

func TestHomeDirRefused(t *testing.T) {
	home := homeDir(t)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	tmp := workspace(t)
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, nil, 0o644)
	inWS := filepath.Join(ws, "scratch")
	os.Mkdir(inWS, 0o755)
	linkHome := filepath.Join(tmp, "link-home")
	os.Symlink(home, linkHome)
	linkRoot := filepath.Join(tmp, "link-root")
	os.Symlink("/", linkRoot)
	linkWS := filepath.Join(tmp, "link-ws")
	os.Symlink(inWS, linkWS)

	cases := []struct {
		name    string
		homeDir string
		noHome  bool
		step    string
		errno   syscall.Errno
		atStart bool
	}{
		{"not owned by the caller", "/var", false, ns.StepMounts, syscall.EPERM, false},
		{"missing", filepath.Join(tmp, "missing"), false, ns.StepMounts, syscall.ENOENT, false},
		{"a file", file, false, ns.StepMounts, syscall.ENOTDIR, false},
		{"the home itself", home, false, ns.StepValidate, 0, true},
		{"an ancestor of the home", filepath.Dir(home), false, ns.StepValidate, 0, true},
		{"in the workspace", inWS, false, ns.StepValidate, 0, true},
		{"relative", "scratch", false, ns.StepValidate, 0, true},
		{"without a home", tmp, true, ns.StepValidate, 0, true},
		{"a link to the home", linkHome, false, ns.StepValidate, 0, false},
		{"a link to /", linkRoot, false, ns.StepValidate, 0, false},
		{"a link into the workspace", linkWS, false, ns.StepValidate, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, ws, "touch", marker)
			s.HomeDir = tc.homeDir
			if tc.noHome {
				s.Home = ""
			}
			wantSetupError(t, setupFailure(t, s, tc.atStart), tc.step, tc.errno, marker)
		})
	}
}

func TestBinds(t *testing.T) {
	home := homeDir(t)
	ws := workspace(t)
	src := workspace(t)
	writeFiles(t, src, map[string]string{
		"npmrc":         "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=PLACEHOLDER\n",
		"conf/tool.ini": "[tool]\n",
	})
	rw := workspace(t)
	npmrc := filepath.Join(home, ".npmrc-ctxd")
	conf := filepath.Join(home, ".config-ctxd", "a", "b") // parents made on the home tmpfs
	top := "/ctxd-bind-rw"                                // made on the root tmpfs
	before := snapshot(t, src)

	s := toolSpec(t, ws, "read", npmrc, conf+"/tool.ini")
	s.Binds = []ns.Bind{
		{Source: filepath.Join(src, "npmrc"), Target: npmrc},
		{Source: filepath.Join(src, "conf"), Target: conf},
		{Source: rw, Target: top, Writable: true},
	}
	m := probe(t, s)
	if m[npmrc] != `OK "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=PLACEHOLDER\n"` || m[conf+"/tool.ini"] != `OK "[tool]\n"` {
		t.Errorf("bound content: %v", m)
	}

	s.Argv = []string{"touch", npmrc, conf + "/tool.ini", conf + "/new", top + "/new"}
	m = probe(t, s)
	want := map[string]string{npmrc: "EROFS", conf + "/tool.ini": "EROFS", conf + "/new": "EROFS", top + "/new": "OK"}
	for p, w := range want {
		if m[p] != w {
			t.Errorf("touch %s: %s, want %s", p, m[p], w)
		}
	}
	sameTree(t, "read-only bind source", before, snapshot(t, src))
	if _, err := os.Stat(filepath.Join(rw, "new")); err != nil {
		t.Errorf("write through the writable bind: %v", err)
	}
	for _, p := range []string{npmrc, filepath.Join(home, ".config-ctxd"), top} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was created on the host: %v", p, err)
		}
	}

	// A mount point is never created inside a bind-mounted host tree;
	// the source must exist; the target may not be a place the sandbox
	// provides itself.
	marker := filepath.Join(ws, "ran")
	exposed := workspace(t)
	for _, tc := range []struct {
		name    string
		bind    ns.Bind
		step    string
		errno   syscall.Errno
		atStart bool
	}{
		{"target missing in a host tree", ns.Bind{Source: filepath.Join(src, "npmrc"), Target: exposed + "/npmrc"}, ns.StepMounts, syscall.ENOENT, false},
		{"missing source", ns.Bind{Source: src + "/missing", Target: npmrc}, ns.StepMounts, syscall.ENOENT, false},
		{"target under /proc", ns.Bind{Source: filepath.Join(src, "npmrc"), Target: "/proc/x"}, ns.StepValidate, 0, true},
		{"relative target", ns.Bind{Source: filepath.Join(src, "npmrc"), Target: ".npmrc"}, ns.StepValidate, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, ws, "touch", marker)
			s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), exposed)
			s.Binds = []ns.Bind{tc.bind}
			wantSetupError(t, setupFailure(t, s, tc.atStart), tc.step, tc.errno, marker)
		})
	}
	if _, err := os.Lstat(exposed + "/npmrc"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a mount point was created in the host tree: %v", err)
	}
}

func TestOverlay(t *testing.T) {
	lower, upper, work := overlayDirs(t)
	writeFiles(t, lower, map[string]string{
		"a":        "alpha\n",
		"sub/b":    "beta\n",
		"sub/c":    "gamma\n",
		"pkg/x.go": "package x\n",
	})
	os.Chmod(filepath.Join(lower, "pkg", "x.go"), 0o444)
	// Older mtimes, so that a change could not hide within the clock's
	// resolution.
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(lower, func(p string, d fs.DirEntry, err error) error { return os.Chtimes(p, old, old) })
	before := snapshot(t, lower)
	ws := workspace(t)

	// Read, modify, create, delete, make a directory, touch: every kind of
	// write an overlay turns into a copy-up or a whiteout.
	script := `set -e; L="$1"
cat "$L/a"
echo more >> "$L/a"
echo new > "$L/new"
rm "$L/sub/b"
mkdir "$L/sub/d" && echo dd > "$L/sub/d/f"
touch "$L/sub/c"
chmod u+w "$L/pkg/x.go" && echo "// changed" >> "$L/pkg/x.go"
cat "$L/a"`
	s := spec(t, ws, "sh", "-c", script, "sh", lower)
	s.Overlays = []ns.Overlay{{Lower: lower, Upper: upper, Work: work}}
	if got := strings.Join(lines(mustRun(t, s)), ","); got != "alpha,alpha,more" {
		t.Errorf("inside: %q", got)
	}

	// From outside: the lower layer is byte for byte what it was, and the
	// writes are in the upper one.
	sameTree(t, "lower layer", before, snapshot(t, lower))
	for name, want := range map[string]string{"a": "alpha\nmore\n", "new": "new\n", "sub/d/f": "dd\n", "sub/c": "gamma\n", "pkg/x.go": "package x\n// changed\n"} {
		if b, err := os.ReadFile(filepath.Join(upper, name)); err != nil || string(b) != want {
			t.Errorf("upper %s: %q %v, want %q", name, b, err, want)
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(upper, "sub", "b"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("upper sub/b is not a whiteout: %+v %v", st, err)
	}

	// A second sandbox with the same upper layer sees the first one's
	// writes, here at another target (below the home tmpfs).
	target := filepath.Join(homeDir(t), ".cache-ctxd", "view")
	s = toolSpec(t, ws, "read", target+"/a", target+"/new", target+"/sub/b", target+"/sub/d/f")
	s.Overlays = []ns.Overlay{{Lower: lower, Upper: upper, Work: work, Target: target}}
	m := probe(t, s)
	want := map[string]string{
		target + "/a": `OK "alpha\nmore\n"`, target + "/new": `OK "new\n"`,
		target + "/sub/b": "ENOENT", target + "/sub/d/f": `OK "dd\n"`,
	}
	for p, w := range want {
		if m[p] != w {
			t.Errorf("second sandbox, read %s: %s, want %s", p, m[p], w)
		}
	}
	sameTree(t, "lower layer after the second sandbox", before, snapshot(t, lower))

	// The sandbox's mount table names the layers by descriptor, not by
	// their host paths.
	s = spec(t, ws, "cat", "/proc/self/mountinfo")
	s.Overlays = []ns.Overlay{{Lower: lower, Upper: upper, Work: work}}
	out := mustRun(t, s)
	if !strings.Contains(out, "lowerdir=/proc/self/fd/") || strings.Contains(out, upper) || strings.Contains(out, work) {
		t.Errorf("mount table inside:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(homeDir(t), ".cache-ctxd")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target's parents were created in the real home: %v", err)
	}
}

// A lower file owned by a uid the user namespace does not map (root's)
// cannot be copied up: writing it fails, reading it works, nothing changes.
func TestOverlayRootOwnedLower(t *testing.T) {
	lower := rootOwned(t, "skel", "/etc/skel", func(dir string) error {
		fi, err := os.Stat(dir + "/.profile")
		if err == nil && fi.Sys().(*syscall.Stat_t).Uid != 0 {
			err = errors.New(".profile is not root's")
		}
		return err
	})
	if fi, err := os.Stat(lower + "/.profile"); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("%s/.profile is not a file of root's: %v", lower, err)
	}
	_, upper, work := overlayDirs(t)
	before := snapshot(t, lower)
	target := filepath.Join(homeDir(t), "skel")
	s := spec(t, workspace(t), "sh", "-c", `head -c 1 "$1/.profile" >/dev/null && echo read; echo x >> "$1/.profile" 2>/dev/null || echo refused`, "sh", target)
	s.Overlays = []ns.Overlay{{Lower: lower, Upper: upper, Work: work, Target: target}}
	if got := strings.Join(lines(mustRun(t, s)), ","); got != "read,refused" {
		t.Errorf("inside: %q, want read,refused", got)
	}
	sameTree(t, lower, before, snapshot(t, lower))
}

// A missing lower directory skips the overlay, and its target then shows
// nothing: not the host's files at that path, when an exposed tree has it.
func TestOverlayMissingLower(t *testing.T) {
	_, upper, work := overlayDirs(t)
	exposed := workspace(t)
	writeFiles(t, exposed, map[string]string{"cache/entry": "host"})
	ws := workspace(t)
	missing := filepath.Join(workspace(t), "missing")
	homeTarget := filepath.Join(homeDir(t), ".cache-missing")
	s := toolSpec(t, ws, "list", exposed+"/cache", homeTarget, exposed)
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), exposed)
	s.Overlays = []ns.Overlay{
		{Lower: missing, Upper: upper, Work: work, Target: exposed + "/cache"},
		{Lower: missing + "2", Upper: upper, Work: work, Target: homeTarget},
	}
	m := probe(t, s)
	if m[exposed+"/cache"] != "EACCES" || m[homeTarget] != "ENOENT" || m[exposed] != "OK cache" {
		t.Errorf("targets of overlays without a lower layer: %v", m)
	}
}

func TestOverlayErrors(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	lower, upper, work := overlayDirs(t)
	writeFiles(t, lower, map[string]string{"f": "x"})
	inUpper := filepath.Join(upper, "nested")
	if err := os.Mkdir(inUpper, 0o755); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		o       ns.Overlay
		step    string
		errno   syscall.Errno
		atStart bool
	}{
		{"upper missing", ns.Overlay{Lower: lower, Upper: upper + "/missing", Work: work}, ns.StepMounts, syscall.ENOENT, false},
		{"work missing", ns.Overlay{Lower: lower, Upper: upper, Work: work + "/missing"}, ns.StepMounts, syscall.ENOENT, false},
		{"lower is a file", ns.Overlay{Lower: lower + "/f", Upper: upper, Work: work}, ns.StepMounts, syscall.ENOTDIR, false},
		// The kernel refuses a lower layer inside the upper one: the mount
		// itself fails. (The other way round it mounts, and fails lookups
		// of the upper directory with ELOOP.)
		{"lower inside upper", ns.Overlay{Lower: inUpper, Upper: upper, Work: work}, ns.StepMounts, 0, false},
		{"upper is work", ns.Overlay{Lower: lower, Upper: upper, Work: upper}, ns.StepValidate, 0, true},
		{"relative upper", ns.Overlay{Lower: lower, Upper: "upper", Work: work}, ns.StepValidate, 0, true},
		{"target under /dev", ns.Overlay{Lower: lower, Upper: upper, Work: work, Target: "/dev/x"}, ns.StepValidate, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, ws, "touch", marker)
			s.Overlays = []ns.Overlay{tc.o}
			err := setupFailure(t, s, tc.atStart)
			wantSetupError(t, err, tc.step, tc.errno, marker)
			if tc.step == ns.StepMounts && !strings.Contains(err.Error(), "overlay") {
				t.Errorf("%v does not name the overlay", err)
			}
		})
	}
	// The mount failure names the mount and every layer.
	s := spec(t, ws, "touch", marker)
	s.Overlays = []ns.Overlay{{Lower: inUpper, Upper: upper, Work: work}}
	var se *ns.SetupError
	if err := setupFailure(t, s, false); !errors.As(err, &se) || se.Syscall != "mount" ||
		!strings.Contains(se.Path, "lowerdir="+inUpper) || !strings.Contains(se.Path, "upperdir="+upper) || !strings.Contains(se.Path, "workdir="+work) {
		t.Errorf("overlay mount failure: %+v", se)
	}
}

// Upper and work on different file systems are refused before the mount
// (EXDEV); on one file system but through different mounts, the kernel
// refuses the mount itself. ProbeOverlay says yes on tmpfs (user.* extended
// attributes since Linux 6.6) and no where the mount fails.
func TestOverlayAcrossMounts(t *testing.T) {
	if !nested(t) {
		return
	}
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	lower, _, work := overlayDirs(t)
	tmpfs := workspace(t)
	if err := unix.Mount("tmpfs", tmpfs, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(tmpfs, unix.MNT_DETACH) })
	otherMount := workspace(t)
	if err := unix.Mount(filepath.Dir(work), otherMount, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(otherMount, unix.MNT_DETACH) })
	onTmpfs := filepath.Join(tmpfs, "upper")
	os.Mkdir(onTmpfs, 0o755)

	for _, tc := range []struct {
		name  string
		o     ns.Overlay
		errno syscall.Errno
	}{
		{"upper on tmpfs, work on the disk", ns.Overlay{Lower: lower, Upper: onTmpfs, Work: work}, syscall.EXDEV},
		{"one file system, two mounts", ns.Overlay{Lower: lower, Upper: filepath.Join(otherMount, "upper"), Work: work}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, ws, "touch", marker)
			s.Overlays = []ns.Overlay{tc.o}
			err := setupFailure(t, s, false)
			wantSetupError(t, err, ns.StepMounts, tc.errno, marker)
			if !strings.Contains(err.Error(), "overlay") {
				t.Errorf("%v does not name the overlay", err)
			}
		})
	}

	if err := ns.ProbeOverlay(tmpfs); err != nil {
		t.Errorf("ProbeOverlay on tmpfs: %v", err)
	}
}

func TestMasks(t *testing.T) {
	home := homeDir(t)
	ws := workspace(t)
	exposed := workspace(t) // a stand-in for an exposed ~ or ~/.config
	writeFiles(t, exposed, map[string]string{
		".ssh/id_ed25519":       "SECRET-ssh",
		".netrc":                "SECRET-netrc",
		".config/real-gh/hosts": "SECRET-gh",
		".config/other/ok":      "visible",
		"visible":               "visible",
	})
	os.Symlink("real-gh", filepath.Join(exposed, ".config", "gh")) // the masked path is a link
	os.Symlink(".ssh", filepath.Join(exposed, "ssh-link"))         // a link to a masked directory
	os.Symlink(".netrc", filepath.Join(exposed, "netrc-link"))     // and to a masked file
	writeFiles(t, ws, map[string]string{".env": "SECRET-env", "code.go": "package main\n"})
	bindSrc := workspace(t)
	writeFiles(t, bindSrc, map[string]string{"creds": "SECRET-bind"})
	lower, upper, work := overlayDirs(t)
	writeFiles(t, lower, map[string]string{"mod/ok.go": "package ok\n", "secret/key": "SECRET-overlay", "token": "SECRET-token"})
	before := snapshot(t, exposed)

	s := spec(t, ws, "true")
	// The parent is exposed read-only, and one masked directory even
	// explicitly: the mask wins.
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), exposed, exposed+"/.ssh")
	s.Binds = []ns.Bind{{Source: bindSrc + "/creds", Target: home + "/.git-credentials"}}
	s.Overlays = []ns.Overlay{{Lower: lower, Upper: upper, Work: work}}
	s.Masks = []string{
		exposed + "/.ssh", exposed + "/.netrc", exposed + "/.config/gh",
		exposed + "/.ssh/id_ed25519", // below another mask
		exposed + "/.aws",            // not on the host
		ws + "/.env",                 // in the read-write workspace
		home + "/.git-credentials",   // what a Bind put there
		lower + "/secret", lower + "/token",
	}
	hidden := []string{
		exposed + "/.ssh/id_ed25519", exposed + "/ssh-link/id_ed25519", exposed + "/.netrc", exposed + "/netrc-link",
		exposed + "/.config/gh/hosts", exposed + "/.config/real-gh/hosts",
		ws + "/.env", home + "/.git-credentials", lower + "/secret/key", lower + "/token",
	}
	visible := []string{exposed + "/visible", exposed + "/.config/other/ok", ws + "/code.go", lower + "/mod/ok.go"}

	s.Mode, s.Argv = ns.ModeTestProbe, append([]string{"read"}, append(hidden, visible...)...)
	m := probe(t, s)
	for _, p := range hidden {
		if m[p] != "EACCES" {
			t.Errorf("read %s: %s, want EACCES", p, m[p])
		}
	}
	for _, p := range visible {
		if !strings.HasPrefix(m[p], "OK ") {
			t.Errorf("read %s: %s, want it readable", p, m[p])
		}
	}
	// Masked directories cannot be listed; a masked path the host does not
	// have is not made.
	s.Argv = []string{"list", exposed + "/.ssh", exposed + "/ssh-link", exposed + "/.config/real-gh", lower + "/secret", exposed + "/.aws"}
	m = probe(t, s)
	for _, p := range s.Argv[1:5] {
		if m[p] != "EACCES" {
			t.Errorf("list %s: %s, want EACCES", p, m[p])
		}
	}
	if m[exposed+"/.aws"] != "ENOENT" {
		t.Errorf("list %s: %s, want ENOENT", exposed+"/.aws", m[exposed+"/.aws"])
	}

	// Nor can they be changed, removed or unmasked from inside, in a
	// writable tree either; no secret comes out of any of it.
	s.Mode = ns.ModeExec
	s.Argv = []string{"sh", "-c", `
for f in "$@"; do
	cat "$f"; echo x > "$f"; chmod 644 "$f"; rm -f "$f"; mv "$f" "$f.moved"; cp -r "$f" /tmp/copy; cat /tmp/copy
	umount "$f"; unshare -Urm sh -c 'umount "$1" && cat "$1"' sh "$f"
done 2>&1
cat "$@" 2>&1; ls -la "$@" 2>&1; true`, "sh",
		ws + "/.env", lower + "/token", lower + "/secret", lower + "/secret/key", home + "/.git-credentials", exposed + "/.ssh/id_ed25519", exposed + "/.netrc"}
	out := mustRun(t, s)
	t.Logf("attempts:\n%s", out)
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret came out:\n%s", out)
	}
	// On the host, everything is still there.
	sameTree(t, "exposed tree", before, snapshot(t, exposed))
	if b, err := os.ReadFile(ws + "/.env"); err != nil || string(b) != "SECRET-env" {
		t.Errorf("masked workspace file on the host: %q %v", b, err)
	}
	if _, err := os.Lstat(lower + "/secret/key"); err != nil {
		t.Errorf("masked lower file: %v", err)
	}
}

// A bind placed below a masked directory is hidden with it: masks are
// mounted last.
func TestMaskCoversLaterEntries(t *testing.T) {
	home := homeDir(t)
	ws := workspace(t)
	src := workspace(t)
	writeFiles(t, src, map[string]string{"config": "SECRET-config"})
	s := toolSpec(t, ws, "read", home+"/.ssh/config")
	s.Binds = []ns.Bind{{Source: src + "/config", Target: home + "/.ssh/config"}}
	s.Masks = []string{home + "/.ssh"}
	if m := probe(t, s); m[home+"/.ssh/config"] != "EACCES" {
		t.Errorf("bind below a mask: %v", m)
	}
}

// Directories the init cannot search: one of the user's own (mode 0) is
// searched anyway (CAP_DAC_OVERRIDE) and its masked child stays hidden after
// the command makes it searchable; below one of another owner (root's,
// mode 0700, like /root) the command can never look, and the mask needs
// nothing.
func TestMaskBehindUnsearchableDirs(t *testing.T) {
	ws := workspace(t)
	writeFiles(t, ws, map[string]string{"locked/secret": "SECRET-locked"})
	locked := filepath.Join(ws, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	s := spec(t, ws, "sh", "-c", `chmod 700 "$1" && cat "$1/secret" 2>&1; true`, "sh", locked)
	s.Masks = []string{locked + "/secret"}
	if out := mustRun(t, s); strings.Contains(out, "SECRET") || !strings.Contains(out, "Permission denied") {
		t.Errorf("masked file in a directory the command made searchable: %q", out)
	}

	rootsDir := rootOwned(t, "locked", "/root", func(dir string) error {
		fi, err := os.Stat(dir)
		if err == nil && fi.Mode().Perm()&0o005 != 0 {
			err = errors.New("others can search it")
		}
		return err
	})
	if fi, err := os.Stat(rootsDir); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 || fi.Mode().Perm()&0o005 != 0 {
		t.Fatalf("%s is not a directory of root's that others cannot search: %v", rootsDir, err)
	}
	s = toolSpec(t, ws, "list", rootsDir)
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), rootsDir)
	s.Masks = []string{rootsDir + "/.ssh"}
	if m := probe(t, s); m[rootsDir] != "EACCES" {
		t.Errorf("list %s: %v", rootsDir, m)
	}
}

// Masks over host mounts: one right on a host mount below an exposed tree,
// one above a read-only entry that brought a host mount along. Setup must
// neither fail on the covered mounts nor show them.
func TestMaskOverHostMounts(t *testing.T) {
	if !nested(t) {
		return
	}
	exposed := workspace(t)
	for _, d := range []string{"mnt", "dir/ro/mnt"} {
		p := filepath.Join(exposed, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
		writeFiles(t, p, map[string]string{"secret": "SECRET"})
	}
	s := toolSpec(t, workspace(t), "read", exposed+"/mnt/secret", exposed+"/dir/ro/mnt/secret")
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), exposed, exposed+"/dir/ro")
	s.Masks = []string{exposed + "/mnt", exposed + "/dir"}
	m := probe(t, s)
	if m[exposed+"/mnt/secret"] != "EACCES" || m[exposed+"/dir/ro/mnt/secret"] != "EACCES" {
		t.Errorf("masked host mounts: %v", m)
	}
}

func TestProbeOverlay(t *testing.T) {
	dir := workspace(t)
	if err := ns.ProbeOverlay(dir); err != nil {
		t.Fatalf("ProbeOverlay: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v behind", ents)
	}
	if err := ns.ProbeOverlay(filepath.Join(dir, "missing")); err == nil {
		t.Error("ProbeOverlay in a missing directory: nil")
	}
}
