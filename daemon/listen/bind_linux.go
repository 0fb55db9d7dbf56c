package listen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
)

// Bind binds a Unix socket at path. The directory is created 0700 (and must belong
// to us and not be open to others), the socket is made 0600. A lock file next to the
// socket serialises daemons: the one that holds the lock owns the path. A socket file
// left by a daemon that died is removed; a socket that answers belongs to a live
// daemon (or systemd's contextd.socket), and Bind refuses with ErrAlreadyRunning.
func Bind(path string) (*Listener, error) {
	dir := filepath.Dir(path)
	if err := secureDir(dir); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path+".lock", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked by another contextd: %w", path, catalog.ErrAlreadyRunning)
		}
		return nil, fmt.Errorf("flock %s: %w", path+".lock", err)
	}
	// We hold the lock, so no other contextd is binding this path right now. A socket
	// that still answers is someone else's (systemd's socket unit holds its socket
	// without holding our lock).
	if _, err := os.Lstat(path); err == nil {
		if c, derr := net.Dial("unix", path); derr == nil {
			c.Close()
			lock.Close()
			return nil, fmt.Errorf("%s answers connections (is contextd.socket enabled?): %w", path, catalog.ErrAlreadyRunning)
		}
		if err := os.Remove(path); err != nil {
			lock.Close()
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("bind %s: %w", path, err)
	}
	// The directory is already 0700, so the window before chmod exposes nothing.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		lock.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	return &Listener{Listener: ln, Path: path, release: func() { lock.Close() }}, nil
}

// secureDir makes dir (0700) when it is missing. An existing directory is never
// changed (it may be /tmp, or anyone's): it must be ours, or, if not, sticky (like
// /tmp: nobody else can remove or replace our socket there). The socket itself is
// always 0600, so a directory others can list exposes nothing.
func secureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create socket directory %s: %w", dir, err)
		}
		// MkdirAll applies the umask; make the mode exact.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("chmod 0700 %s: %w", dir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory: %w", dir, catalog.ErrConfig)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Getuid() && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("socket directory %s belongs to uid %d, not to us (uid %d), and is not sticky: %w", dir, st.Uid, os.Getuid(), catalog.ErrSocketPermission)
	}
	return nil
}
