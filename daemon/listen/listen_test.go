package listen

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/catalog"
)

func TestBindMakesPrivateDirAndSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "contextd")
	path := filepath.Join(dir, "contextd.sock")
	l, err := Bind(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
	if l.Activated {
		t.Error("a bound socket reports socket activation")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("socket does not accept: %v", err)
	}
	c.Close()
	l.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket not removed on close: %v", err)
	}
}

// An existing directory is used as it is, never re-moded: it may be /tmp.
func TestBindLeavesExistingDirAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	l, err := Bind(filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Fatalf("an existing directory was changed to %v", fi.Mode())
	}
	sfi, _ := os.Stat(filepath.Join(dir, "s.sock"))
	if sfi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %o, want 600", sfi.Mode().Perm())
	}
}

func TestBindRemovesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "s.sock")
	first, err := Bind(path)
	if err != nil {
		t.Fatal(err)
	}
	// A daemon that died leaves its socket file behind (no unlink on crash).
	first.Listener.(*net.UnixListener).SetUnlinkOnClose(false)
	first.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("precondition: stale socket missing: %v", err)
	}
	second, err := Bind(path)
	if err != nil {
		t.Fatalf("stale socket not cleaned up: %v", err)
	}
	second.Close()
}

func TestSecondDaemonRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "s.sock")
	first, err := Bind(path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := Bind(path); !errors.Is(err, catalog.ErrAlreadyRunning) {
		t.Fatalf("second Bind on a locked path: %v, want ErrAlreadyRunning", err)
	}
	// The first one still serves.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("first daemon's socket broken by the refused second: %v", err)
	}
	c.Close()
}

// A socket someone else listens on without our lock (systemd's contextd.socket) is
// live and must not be replaced.
func TestLiveForeignSocketRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o700)
	path := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Bind(path); !errors.Is(err, catalog.ErrAlreadyRunning) {
		t.Fatalf("Bind over a live socket: %v, want ErrAlreadyRunning", err)
	}
	if c, err := net.Dial("unix", path); err != nil {
		t.Fatalf("live socket was removed: %v", err)
	} else {
		c.Close()
	}
}

func TestForeignDirRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a directory to another uid; CI runs as root")
	}
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Bind(filepath.Join(dir, "s.sock"))
	if !errors.Is(err, catalog.ErrSocketPermission) {
		t.Fatalf("Bind in another uid's directory: %v, want ErrSocketPermission", err)
	}
}
