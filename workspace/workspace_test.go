package workspace_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// Tests in this package change the process umask: none of them runs in parallel.

const secret = "SECRET outside the workspace\n"

// fixture is a workspace (ws, with .git) next to a directory it must not reach:
//
//	base/outside/secret.txt
//	base/ws/.git/
//	base/ws/a.txt               "hello\n"
//	base/ws/sub/b.txt           "bee\n"
//	base/ws/sub/deeper/
//	base/ws/in_file    -> a.txt
//	base/ws/in_chain   -> in_file
//	base/ws/in_dir     -> sub
//	base/ws/sub/up     -> ../a.txt
//	base/ws/out_abs    -> base/outside/secret.txt   (absolute)
//	base/ws/out_rel    -> ../outside/secret.txt
//	base/ws/out_dir    -> ../outside
//	base/ws/out_dir_abs -> base/outside              (absolute)
//	base/ws/loop1 -> loop2, loop2 -> loop1, self -> self
//	base/ws/dangling   -> nothere.txt
//	base/ws/fifo       (named pipe, no writer)
type fixture struct {
	base, root, outside string
	place               workspace.Place
	r                   *workspace.Root
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{base: base, root: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mkdir(t, fx.outside, filepath.Join(fx.root, ".git"), filepath.Join(fx.root, "sub", "deeper"))
	writeFile(t, filepath.Join(fx.outside, "secret.txt"), secret, 0o644)
	writeFile(t, filepath.Join(fx.root, "a.txt"), "hello\n", 0o644)
	writeFile(t, filepath.Join(fx.root, "sub", "b.txt"), "bee\n", 0o644)
	links := map[string]string{
		"in_file":     "a.txt",
		"in_chain":    "in_file",
		"in_dir":      "sub",
		"sub/up":      "../a.txt",
		"out_abs":     filepath.Join(fx.outside, "secret.txt"),
		"out_rel":     "../outside/secret.txt",
		"out_dir":     "../outside",
		"out_dir_abs": fx.outside,
		"loop1":       "loop2",
		"loop2":       "loop1",
		"self":        "self",
		"dangling":    "nothere.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(fx.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(fx.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.place, err = workspace.Find(fx.root, []string{".git"})
	if err != nil {
		t.Fatal(err)
	}
	fx.r, err = workspace.Open(fx.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.r.Close() })
	return fx
}

func mkdir(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t testing.TB, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// read is what safe_read does: resolve the caller's path, open it confined, read it.
func read(pl workspace.Place, r *workspace.Root, p string) (string, error) {
	rel, err := pl.Resolve(p)
	if err != nil {
		return "", err
	}
	f, err := r.OpenRead(rel)
	if err != nil {
		if f != nil {
			return "", fmt.Errorf("OpenRead returned a file with error %v", err)
		}
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// tempFiles lists WriteFile's temporary files left in dir.
func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".contextd-") || strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

func wantClass(t *testing.T, err error, want *catalog.Class) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v (%s)", err, catalog.ClassOf(err).Code)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v (class %s), want %s (%s)", err, catalog.ClassOf(err).Code, want.Code, want.Name)
	}
}

func TestReadConfinement(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		name, path string
		want       *catalog.Class
		content    string
	}{
		{"plain", "a.txt", nil, "hello\n"},
		{"subdir", "sub/b.txt", nil, "bee\n"},
		{"dotdot that stays inside", "sub/../a.txt", nil, "hello\n"},
		{"dotdot escape", "../outside/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"dotdot escape via sub", "sub/../../outside/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"dotdot escape from deep", "sub/deeper/../../../outside/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"dotdot above then back in", "../ws/a.txt", catalog.ErrOutsideWorkspace, ""},
		{"absolute outside", "/etc/passwd", catalog.ErrOutsideWorkspace, ""},
		{"absolute sibling", fx.outside + "/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"absolute prefix trick", fx.root + "-evil/x", catalog.ErrOutsideWorkspace, ""},
		{"absolute escape by dotdot", fx.root + "/../outside/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"absolute proc", "/proc/self/root/etc/passwd", catalog.ErrOutsideWorkspace, ""},
		{"absolute inside", fx.root + "/a.txt", nil, "hello\n"},
		{"absolute inside with dotdot", fx.root + "/sub/../sub/b.txt", nil, "bee\n"},
		{"symlink inside", "in_file", nil, "hello\n"},
		{"symlink chain inside", "in_chain", nil, "hello\n"},
		{"symlink up stays inside", "sub/up", nil, "hello\n"},
		{"symlinked dir inside", "in_dir/b.txt", nil, "bee\n"},
		{"symlink out absolute", "out_abs", catalog.ErrOutsideWorkspace, ""},
		{"symlink out relative", "out_rel", catalog.ErrOutsideWorkspace, ""},
		{"symlinked dir out", "out_dir/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"symlinked dir out absolute", "out_dir_abs/secret.txt", catalog.ErrOutsideWorkspace, ""},
		{"symlink loop", "loop1", catalog.ErrSymlinkLoop, ""},
		{"symlink to itself", "self", catalog.ErrSymlinkLoop, ""},
		{"symlink loop as directory", "loop2/x", catalog.ErrSymlinkLoop, ""},
		{"dangling symlink", "dangling", catalog.ErrNotFound, ""},
		{"missing", "nope.txt", catalog.ErrNotFound, ""},
		{"directory", "sub", catalog.ErrNotRegular, ""},
		{"root directory", ".", catalog.ErrNotRegular, ""},
		{"symlink to directory", "in_dir", catalog.ErrNotRegular, ""},
		{"file used as directory", "a.txt/x", catalog.ErrNotRegular, ""},
		{"empty path", "", catalog.ErrBadInput, ""},
		{"NUL in path", "a.txt\x00/etc/passwd", catalog.ErrBadInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := read(fx.place, fx.r, tt.path)
			wantClass(t, err, tt.want)
			if got != tt.content {
				t.Errorf("content %q, want %q", got, tt.content)
			}
			if strings.Contains(got, "SECRET") {
				t.Fatal("read a file outside the workspace")
			}
		})
	}
}

// Root's methods take root-relative paths; an absolute one must not be taken as a
// path of the host even when a caller skips Resolve.
func TestRootRefusesAbsolute(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.r.OpenRead(filepath.Join(fx.outside, "secret.txt"))
	wantClass(t, err, catalog.ErrOutsideWorkspace)
	_, err = fx.r.WriteFile(filepath.Join(fx.outside, "new.txt"), []byte("x"))
	wantClass(t, err, catalog.ErrOutsideWorkspace)
	if _, err := os.Lstat(filepath.Join(fx.outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was created outside: %v", err)
	}
}

func TestResolve(t *testing.T) {
	fx := newFixture(t)
	sub, err := workspace.Find(filepath.Join(fx.root, "sub"), []string{".git"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pl   workspace.Place
		path string
		rel  string
		want *catalog.Class
	}{
		{"relative at root", fx.place, "a.txt", "a.txt", nil},
		{"relative from sub", sub, "b.txt", "sub/b.txt", nil},
		{"relative dotdot kept for the kernel", sub, "../a.txt", "sub/../a.txt", nil},
		{"absolute root itself", fx.place, fx.root, ".", nil},
		{"absolute cleaned", sub, fx.root + "//sub/./b.txt", "sub/b.txt", nil},
		{"absolute outside", sub, "/etc", "", catalog.ErrOutsideWorkspace},
		{"absolute parent", sub, fx.base, "", catalog.ErrOutsideWorkspace},
		{"empty", sub, "", "", catalog.ErrBadInput},
		{"NUL", sub, "x\x00", "", catalog.ErrBadInput},
		{"cwd outside root", workspace.Place{Root: fx.root, Cwd: fx.outside}, "x", "", catalog.ErrOutsideWorkspace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel, err := tt.pl.Resolve(tt.path)
			wantClass(t, err, tt.want)
			if rel != tt.rel {
				t.Errorf("Resolve(%q) = %q, want %q", tt.path, rel, tt.rel)
			}
		})
	}
}

// A workspace whose parent directory is reached through a symlink: the caller's
// absolute paths may use either spelling.
func TestLogicalRoot(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	realWS := filepath.Join(base, "real", "ws")
	mkdir(t, filepath.Join(realWS, ".git"), filepath.Join(realWS, "sub"))
	writeFile(t, filepath.Join(realWS, "a.txt"), "hello\n", 0o644)
	writeFile(t, filepath.Join(base, "real", "beside.txt"), secret, 0o644)
	if err := os.Symlink("real", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	logicalWS := filepath.Join(base, "link", "ws")

	pl, err := workspace.Find(filepath.Join(logicalWS, "sub"), []string{".git"})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Root != realWS || pl.Cwd != filepath.Join(realWS, "sub") || pl.LogicalRoot != logicalWS {
		t.Fatalf("Find = %+v, want root %s, cwd %s/sub, logical %s", pl, realWS, realWS, logicalWS)
	}
	r, err := workspace.Open(pl.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range []string{realWS + "/a.txt", logicalWS + "/a.txt", logicalWS + "/sub/../a.txt", "../a.txt"} {
		got, err := read(pl, r, p)
		if err != nil || got != "hello\n" {
			t.Errorf("read %s = %q, %v; want hello", p, got, err)
		}
	}
	for _, p := range []string{base + "/link/beside.txt", logicalWS + "/../beside.txt", base + "/real/beside.txt", "../../beside.txt"} {
		_, err := read(pl, r, p)
		if !errors.Is(err, catalog.ErrOutsideWorkspace) {
			t.Errorf("read %s: %v, want %s", p, err, catalog.ErrOutsideWorkspace.Code)
		}
	}
}

// A cwd reached through a symlink to a subdirectory of the workspace: its parent
// directory is not the workspace, so absolute paths spelled through it are outside
// and must not be mapped onto files of the workspace.
func TestLogicalRootMustBeTheRoot(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(base, "proj")
	mkdir(t, filepath.Join(proj, ".git"), filepath.Join(proj, "a"), filepath.Join(base, "elsewhere"))
	writeFile(t, filepath.Join(proj, "notes.txt"), "PROJ\n", 0o644)
	writeFile(t, filepath.Join(base, "elsewhere", "notes.txt"), "ELSEWHERE\n", 0o644)
	if err := os.Symlink(filepath.Join(proj, "a"), filepath.Join(base, "elsewhere", "a")); err != nil {
		t.Fatal(err)
	}
	pl, err := workspace.Find(filepath.Join(base, "elsewhere", "a"), []string{".git"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := workspace.Open(pl.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := read(pl, r, filepath.Join(base, "elsewhere", "notes.txt"))
	if !errors.Is(err, catalog.ErrOutsideWorkspace) {
		t.Errorf("read %s/elsewhere/notes.txt = %q, %v; want %s (it is not in the workspace)", base, got, err, catalog.ErrOutsideWorkspace.Code)
	}
	// Relative paths go from the real cwd, whatever its spelling.
	if got, err := read(pl, r, "../notes.txt"); err != nil || got != "PROJ\n" {
		t.Errorf("read ../notes.txt = %q, %v; want the workspace's file", got, err)
	}
}

// RESOLVE_NO_MAGICLINKS: /proc/PID/{fd/N,exe,root,cwd} name files anywhere; a
// workspace that contains a procfs must not follow them.
func TestProcMagicLinksRefused(t *testing.T) {
	fx := newFixture(t)
	f, err := os.Open(filepath.Join(fx.outside, "secret.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	pl, err := workspace.Find("/proc/self", []string{".git"})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Root != fmt.Sprintf("/proc/%d", os.Getpid()) {
		t.Fatalf("Find(/proc/self).Root = %s", pl.Root)
	}
	r, err := workspace.Open(pl.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A plain procfs file of the same root opens: the refusals are the magic links.
	if got, err := read(pl, r, "comm"); err != nil || got == "" {
		t.Fatalf("read comm: %q, %v", got, err)
	}
	for _, p := range []string{
		fmt.Sprintf("fd/%d", f.Fd()),
		"exe",
		"root/etc/passwd",
		"cwd/" + filepath.Base(fx.base),
		fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()),
		fmt.Sprintf("/proc/self/fd/%d", f.Fd()), // not lexically under the resolved root
	} {
		got, err := read(pl, r, p)
		if err == nil {
			t.Errorf("read %s succeeded (%d bytes) through a magic link", p, len(got))
			continue
		}
		if !errors.Is(err, catalog.ErrSymlinkLoop) && !errors.Is(err, catalog.ErrOutsideWorkspace) {
			t.Errorf("read %s: %v (%s), want a refusal", p, err, catalog.ClassOf(err).Code)
		}
	}
	// Through /proc as the root, /proc/self (a plain symlink) is followed and the
	// fd link (a magic one) is not; the kernel reports ELOOP.
	proc, err := workspace.Open("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	_, err = proc.OpenRead(fmt.Sprintf("self/fd/%d", f.Fd()))
	if !errors.Is(err, unix.ELOOP) || !errors.Is(err, catalog.ErrSymlinkLoop) {
		t.Fatalf("OpenRead(self/fd/N) = %v, want ELOOP refused", err)
	}
	if f, err := proc.OpenRead("self/status"); err != nil {
		t.Fatalf("OpenRead(self/status): %v", err)
	} else {
		f.Close()
	}
}

// openWithin runs fn and fails the test if it has not returned within d: a FIFO
// opened for reading without O_NONBLOCK waits for a writer forever.
func openWithin(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatal("open blocked: a FIFO without a writer must be refused at once")
		return nil
	}
}

func TestSpecialFilesRefused(t *testing.T) {
	fx := newFixture(t)
	if err := os.Symlink("fifo", filepath.Join(fx.root, "fifolink")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fifo", "fifolink"} {
		start := time.Now()
		err := openWithin(t, 5*time.Second, func() error {
			f, err := fx.r.OpenRead(p)
			if f != nil {
				f.Close()
			}
			return err
		})
		wantClass(t, err, catalog.ErrNotRegular)
		if time.Since(start) > time.Second {
			t.Errorf("refusing %s took %v", p, time.Since(start))
		}
	}

	// A Unix socket (open(2) says ENXIO).
	sockDir, err := os.MkdirTemp("", "ws")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sr, err := workspace.Open(sockDir)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	_, err = sr.OpenRead("s")
	wantClass(t, err, catalog.ErrNotRegular)

	// Devices.
	dev, err := workspace.Open("/dev")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	for _, p := range []string{"null", "zero"} {
		_, err := dev.OpenRead(p)
		wantClass(t, err, catalog.ErrNotRegular)
	}
}

func TestDirPath(t *testing.T) {
	fx := newFixture(t)
	tests := []struct {
		rel, want string
		class     *catalog.Class
	}{
		{".", fx.root, nil},
		{"sub", fx.root + "/sub", nil},
		{"in_dir", fx.root + "/sub", nil},
		{"sub/deeper/..", fx.root + "/sub", nil},
		{"..", "", catalog.ErrOutsideWorkspace},
		{"out_dir", "", catalog.ErrOutsideWorkspace},
		{"out_dir_abs", "", catalog.ErrOutsideWorkspace},
		{"a.txt", "", catalog.ErrNotRegular},
		{"nope", "", catalog.ErrNotFound},
		{"loop1", "", catalog.ErrSymlinkLoop},
	}
	for _, tt := range tests {
		got, err := fx.r.DirPath(tt.rel)
		if tt.class == nil && err != nil || tt.class != nil && !errors.Is(err, tt.class) {
			t.Errorf("DirPath(%q) error %v, want %v", tt.rel, err, tt.class)
		}
		if got != tt.want {
			t.Errorf("DirPath(%q) = %q, want %q", tt.rel, got, tt.want)
		}
	}
}

func TestFind(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(base, "proj")
	nested := filepath.Join(proj, "vendor", "mod")
	plain := filepath.Join(base, "plain", "dir")
	mkdir(t, filepath.Join(proj, ".git"), filepath.Join(proj, "a", "b"), filepath.Join(nested, "x"), plain)
	writeFile(t, filepath.Join(nested, ".git"), "gitdir: elsewhere\n", 0o644) // a submodule's .git is a file
	writeFile(t, filepath.Join(proj, "go.mod"), "module x\n", 0o644)
	writeFile(t, filepath.Join(proj, "file"), "", 0o644)
	if err := os.Symlink(filepath.Join(proj, "a"), filepath.Join(base, "alink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("proj", filepath.Join(base, "projlink")); err != nil {
		t.Fatal(err)
	}
	// base/elsewhere/a -> proj/a: a cwd of base/elsewhere/a/b ends in the same "a/b"
	// as the real one, but base/elsewhere is not a spelling of the root.
	mkdir(t, filepath.Join(base, "elsewhere"))
	if err := os.Symlink(filepath.Join(proj, "a"), filepath.Join(base, "elsewhere", "a")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, cwd  string
		markers    []string
		root, rcwd string
		logical    string
		class      *catalog.Class
	}{
		{"marker at cwd", proj, []string{".git"}, proj, proj, proj, nil},
		{"marker above cwd", proj + "/a/b", []string{".git"}, proj, proj + "/a/b", proj, nil},
		{"nearest marker wins", nested + "/x", []string{".git"}, nested, nested + "/x", nested, nil},
		{"other marker", proj + "/a", []string{"go.mod"}, proj, proj + "/a", proj, nil},
		{"no marker: cwd is the root", plain, []string{".git"}, plain, plain, plain, nil},
		{"no markers at all", proj + "/a/b", nil, proj + "/a/b", proj + "/a/b", proj + "/a/b", nil},
		{"unclean cwd", proj + "/a/../a/b/", []string{".git"}, proj, proj + "/a/b", proj, nil},
		{"cwd through symlink", base + "/alink/b", []string{".git"}, proj, proj + "/a/b", proj, nil},
		{"root through symlink", base + "/projlink/a", []string{".git"}, proj, proj + "/a", base + "/projlink", nil},
		{"root itself through symlink", base + "/projlink", []string{".git"}, proj, proj, base + "/projlink", nil},
		{"symlinked subdir elsewhere", base + "/elsewhere/a/b", []string{".git"}, proj, proj + "/a/b", proj, nil},
		{"slash refused", "/", []string{".git"}, "", "", "", catalog.ErrPolicy},
		{"slash refused without markers", "/", nil, "", "", "", catalog.ErrPolicy},
		{"relative cwd", "proj", []string{".git"}, "", "", "", catalog.ErrBadInput},
		{"missing cwd", base + "/nope", []string{".git"}, "", "", "", catalog.ErrNotFound},
		{"cwd is a file", proj + "/file", []string{".git"}, "", "", "", catalog.ErrBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := workspace.Find(tt.cwd, tt.markers)
			wantClass(t, err, tt.class)
			if tt.class != nil {
				return
			}
			if pl.Root != tt.root || pl.Cwd != tt.rcwd || pl.LogicalRoot != tt.logical {
				t.Errorf("Find(%s) = %+v, want root %s cwd %s logical %s", tt.cwd, pl, tt.root, tt.rcwd, tt.logical)
			}
		})
	}
}

func TestWriteFileCreates(t *testing.T) {
	fx := newFixture(t)
	for _, umask := range []int{0o022, 0o077, 0o000, 0o777} {
		t.Run(fmt.Sprintf("umask %04o", umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			name := fmt.Sprintf("new-%o.txt", umask)
			res, err := fx.r.WriteFile(name, []byte("new\n"))
			syscall.Umask(old)
			wantClass(t, err, nil)
			if !res.Created || res.Path != name || res.Mode != 0o644 {
				t.Errorf("result %+v, want created %s mode 0644", res, name)
			}
			fi, err := os.Stat(filepath.Join(fx.root, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o644 {
				t.Errorf("new file mode %v, want -rw-r--r-- whatever the umask", fi.Mode())
			}
			if got := readFile(t, filepath.Join(fx.root, name)); got != "new\n" {
				t.Errorf("content %q", got)
			}
		})
	}
	if tmp := tempFiles(t, fx.root); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	// Empty content makes an empty file.
	if _, err := fx.r.WriteFile("empty", nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(fx.root, "empty")); err != nil || fi.Size() != 0 {
		t.Fatalf("empty file: %v %v", fi, err)
	}
}

func TestWriteFileCreatesParents(t *testing.T) {
	fx := newFixture(t)
	res, err := fx.r.WriteFile("x/y/z/new.txt", []byte("deep"))
	wantClass(t, err, nil)
	if !res.Created || res.Path != "x/y/z/new.txt" {
		t.Errorf("result %+v", res)
	}
	if got := readFile(t, filepath.Join(fx.root, "x/y/z/new.txt")); got != "deep" {
		t.Errorf("content %q", got)
	}
	for _, d := range []string{"x", "x/y", "x/y/z"} {
		fi, err := os.Lstat(filepath.Join(fx.root, d))
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want a 0755 directory", d, fi.Mode(), err)
		}
	}
	// Parents through an in-workspace symlinked directory, and below an existing one.
	if _, err := fx.r.WriteFile("in_dir/new/n.txt", []byte("n")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(fx.root, "sub/new/n.txt")); got != "n" {
		t.Errorf("content %q", got)
	}
}

// Parent creation must not make anything outside, by `..` or through a symlink.
func TestWriteFileParentsConfined(t *testing.T) {
	fx := newFixture(t)
	for _, rel := range []string{
		"../outside/new.txt",
		"sub/../../outside/new.txt",
		"newdir/../../outside/new.txt",
		"out_dir/new.txt",
		"out_dir/newdir/new.txt",
		"out_dir_abs/newdir/new.txt",
		"../outside/newdir/new.txt",
		"x/../../outside/newdir/new.txt",
	} {
		t.Run(rel, func(t *testing.T) {
			_, err := fx.r.WriteFile(rel, []byte("escaped"))
			wantClass(t, err, catalog.ErrOutsideWorkspace)
			ents, err := os.ReadDir(fx.outside)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || ents[0].Name() != "secret.txt" {
				t.Fatalf("outside directory changed: %v", ents)
			}
			if got := readFile(t, filepath.Join(fx.outside, "secret.txt")); got != secret {
				t.Fatalf("secret changed: %q", got)
			}
		})
	}
}

func TestWriteFilePreservesMode(t *testing.T) {
	fx := newFixture(t)
	for _, mode := range []os.FileMode{0o600, 0o640, 0o755, 0o444, 0o700} {
		t.Run(mode.String(), func(t *testing.T) {
			name := fmt.Sprintf("m%o", mode)
			p := filepath.Join(fx.root, name)
			writeFile(t, p, "old", mode)
			res, err := fx.r.WriteFile(name, []byte("new content"))
			wantClass(t, err, nil)
			if res.Created || res.Mode != mode {
				t.Errorf("result %+v, want replaced with mode %v", res, mode)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != mode {
				t.Errorf("mode after replace %v, want %v", fi.Mode(), mode)
			}
			if got := readFile(t, p); got != "new content" {
				t.Errorf("content %q", got)
			}
		})
	}
	if tmp := tempFiles(t, fx.root); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestWriteFileThroughSymlink(t *testing.T) {
	tests := []struct {
		link, target, path string // path: WriteResult.Path
	}{
		{"in_file", "a.txt", "a.txt"},
		{"in_chain", "a.txt", "a.txt"},
		{"sub/up", "a.txt", "a.txt"},
		// A symlinked parent, not a symlinked file: the kernel follows it.
		{"in_dir/b.txt", "sub/b.txt", "in_dir/b.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.link, func(t *testing.T) {
			fx := newFixture(t)
			before, _ := os.Readlink(filepath.Join(fx.root, tt.link))
			res, err := fx.r.WriteFile(tt.link, []byte("through the link\n"))
			wantClass(t, err, nil)
			if res.Path != tt.path || res.Created {
				t.Errorf("result %+v, want %s replaced", res, tt.path)
			}
			if got := readFile(t, filepath.Join(fx.root, tt.target)); got != "through the link\n" {
				t.Errorf("target content %q", got)
			}
			after, _ := os.Readlink(filepath.Join(fx.root, tt.link))
			if before != after {
				t.Errorf("link changed: %q -> %q", before, after)
			}
			if before != "" {
				fi, err := os.Lstat(filepath.Join(fx.root, tt.link))
				if err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("%s is no longer a symlink", tt.link)
				}
			}
		})
	}
}

func TestWriteFileRefusals(t *testing.T) {
	tests := []struct {
		rel  string
		want *catalog.Class
	}{
		{"out_abs", catalog.ErrOutsideWorkspace},
		{"out_rel", catalog.ErrOutsideWorkspace},
		{"out_dir/secret.txt", catalog.ErrOutsideWorkspace},
		{"../outside/secret.txt", catalog.ErrOutsideWorkspace},
		{"dangling", catalog.ErrNotRegular},
		{"loop1", catalog.ErrSymlinkLoop},
		{"self", catalog.ErrSymlinkLoop},
		{"loop1/x", catalog.ErrSymlinkLoop},
		{"sub", catalog.ErrNotRegular},
		{"in_dir", catalog.ErrNotRegular},
		{"fifo", catalog.ErrNotRegular},
		{"a.txt/x", catalog.ErrNotRegular},
		{"sub/", catalog.ErrBadInput},
		{".", catalog.ErrBadInput},
		{"sub/..", catalog.ErrBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			fx := newFixture(t)
			err := openWithin(t, 5*time.Second, func() error {
				_, err := fx.r.WriteFile(tt.rel, []byte("should not land"))
				return err
			})
			wantClass(t, err, tt.want)
			if got := readFile(t, filepath.Join(fx.outside, "secret.txt")); got != secret {
				t.Fatalf("secret changed: %q", got)
			}
			if _, err := os.Lstat(filepath.Join(fx.root, "nothere.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the dangling link's target was created")
			}
			for _, d := range []string{fx.root, fx.root + "/sub", fx.outside} {
				if tmp := tempFiles(t, d); len(tmp) > 0 {
					t.Errorf("temporary files left in %s: %v", d, tmp)
				}
			}
			if fi, err := os.Lstat(filepath.Join(fx.root, "sub")); err != nil || !fi.IsDir() {
				t.Errorf("sub was replaced: %v", err)
			}
		})
	}
}

// A write that fails after the temporary file was created (here: the file size
// limit) leaves the old content and no temporary file.
func TestWriteFileFailureKeepsOldContent(t *testing.T) {
	fx := newFixture(t)
	old := "old content that must survive\n"
	writeFile(t, filepath.Join(fx.root, "keep.txt"), old, 0o640)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=write", "CTXD_WS_ROOT="+fx.root, "CTXD_WS_REL=keep.txt",
		"CTXD_WS_SIZE=1000000", "CTXD_WS_FSIZE=4096")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), catalog.ErrIO.Code) || !strings.Contains(string(out), "file too large") {
		t.Errorf("helper reported %q, want %s (file too large)", out, catalog.ErrIO.Code)
	}
	if got := readFile(t, filepath.Join(fx.root, "keep.txt")); got != old {
		t.Errorf("old content lost: %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(fx.root, "keep.txt")); fi.Mode() != 0o640 {
		t.Errorf("mode changed to %v", fi.Mode())
	}
	if tmp := tempFiles(t, fx.root); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// A read-only directory refuses the write with the file's permission class, and
// the old file stays. Root ignores directory permissions, so as root the write
// runs in a helper process as nobody.
func TestWriteFileReadOnlyDir(t *testing.T) {
	base, err := os.MkdirTemp("", "ctxd-ws-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Chmod(filepath.Join(base, "ws", "ro"), 0o755)
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "ws")
	ro := filepath.Join(root, "ro")
	mkdir(t, ro)
	writeFile(t, filepath.Join(ro, "f.txt"), "old\n", 0o666)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}

	var code string
	if os.Geteuid() != 0 {
		r, err := workspace.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, err = r.WriteFile("ro/f.txt", []byte("new\n"))
		if !errors.Is(err, os.ErrPermission) {
			t.Errorf("error %v does not wrap EACCES", err)
		}
		code = catalog.ClassOf(err).Code
		if err == nil {
			code = "ok"
		}
	} else {
		bin := publicCopyOfSelf(t, base)
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = []string{helperEnv + "=write", "CTXD_WS_ROOT=" + root, "CTXD_WS_REL=ro/f.txt", "CTXD_WS_SIZE=10"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as uid 65534: %v\n%s", err, out)
		}
		code, _, _ = strings.Cut(string(out), " ")
	}
	if code != catalog.ErrFilePermission.Code {
		t.Errorf("write into a read-only directory: %s, want %s", code, catalog.ErrFilePermission.Code)
	}
	if got := readFile(t, filepath.Join(ro, "f.txt")); got != "old\n" {
		t.Errorf("old content lost: %q", got)
	}
	if tmp := tempFiles(t, ro); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// FuzzConfinement: whatever path a caller sends, a read never yields a file outside
// the workspace and a write never changes anything outside it.
func FuzzConfinement(f *testing.F) {
	for _, s := range []string{
		"a.txt", "../outside/secret.txt", "sub/../../outside/secret.txt", "out_abs", "out_rel",
		"out_dir/secret.txt", "out_dir_abs/x", "in_dir/../../outside/secret.txt", "loop1", "fifo",
		"/etc/passwd", "/proc/self/root/etc/passwd", "sub/up", "dangling", "x/y/../../../outside/z",
		"in_dir/../in_dir/./b.txt", ".git/../../outside", "sub/deeper/../../..",
	} {
		f.Add(s)
	}
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := fx.place.Resolve(p)
		if err != nil {
			return
		}
		if fh, err := fx.r.OpenRead(rel); err == nil {
			real, lerr := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fh.Fd()))
			b, _ := io.ReadAll(fh)
			fh.Close()
			if lerr != nil || !strings.HasPrefix(real, fx.root+"/") {
				t.Fatalf("OpenRead(%q) opened %s (%v), outside %s", rel, real, lerr, fx.root)
			}
			if strings.Contains(string(b), "SECRET") {
				t.Fatalf("OpenRead(%q) read the secret", rel)
			}
		} else if catalog.ClassOf(err) == catalog.ErrInternal {
			t.Fatalf("OpenRead(%q): unclassified error %v", rel, err)
		}
		res, err := fx.r.WriteFile(rel, []byte("fuzz"))
		if err == nil {
			if _, ok := strings.CutPrefix(filepath.Clean(filepath.Join(fx.root, res.Path)), fx.root+"/"); !ok {
				t.Fatalf("WriteFile(%q) reports %q, outside the root", rel, res.Path)
			}
		} else if catalog.ClassOf(err) == catalog.ErrInternal {
			t.Fatalf("WriteFile(%q): unclassified error %v", rel, err)
		}
		ents, err := os.ReadDir(fx.outside)
		if err != nil || len(ents) != 1 || readFile(t, filepath.Join(fx.outside, "secret.txt")) != secret {
			t.Fatalf("WriteFile(%q) changed the outside directory: %v %v", rel, ents, err)
		}
		ents, err = os.ReadDir(fx.base)
		if err != nil || len(ents) != 2 {
			t.Fatalf("WriteFile(%q) created something beside the workspace: %v %v", rel, ents, err)
		}
	})
}
