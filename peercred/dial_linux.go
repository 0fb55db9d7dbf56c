package peercred

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/contextd/contextd/catalog"
)

// The client side of the peer check, shared by the proxy (light protocol)
// and the gRPC client: connect, and check who serves the socket before a
// byte is sent.

// DialChecked connects to the socket at path and checks that the process
// serving it runs as the expected uid (DaemonUID), which it returns. The
// gRPC client uses it for its first connection too.
func DialChecked(path string) (net.Conn, uint32, error) {
	want, err := DaemonUID()
	if err != nil {
		return nil, 0, err
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, 0, DialError(path, err)
	}
	got, err := Read(conn)
	if err != nil {
		conn.Close()
		return nil, 0, fmt.Errorf("%s: %v: %w", path, err, catalog.ErrInternal)
	}
	if got.UID != want {
		conn.Close()
		return nil, 0, fmt.Errorf("%s: %v: %w", path, &ErrServerIdentity{Got: got.UID, Want: want}, catalog.ErrDaemonIdentity)
	}
	return conn, want, nil
}

// DaemonUID is the uid the daemon must run as: ours, unless CONTEXTD_DAEMON_UID
// names another (a daemon that lists us in its allowed_uids).
func DaemonUID() (uint32, error) {
	v := os.Getenv("CONTEXTD_DAEMON_UID")
	if v == "" {
		return uint32(os.Getuid()), nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("CONTEXTD_DAEMON_UID=%q is not a uid: %w", v, catalog.ErrUsage)
	}
	return uint32(n), nil
}

// DialError classifies a failed connect(2).
func DialError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("no daemon at %s (%v): %w", path, errno(err), catalog.ErrDaemonUnavailable)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("cannot connect to %s (%v): %w", path, errno(err), catalog.ErrSocketPermission)
	}
	return fmt.Errorf("cannot connect to %s: %v: %w", path, err, catalog.ErrDaemonUnavailable)
}

func errno(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return err
}

// SocketOwner is the uid owning the socket file at path.
func SocketOwner(path string) (uint32, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
