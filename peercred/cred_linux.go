package peercred

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Read returns the credentials of the process at the other end of conn, which must
// be a Unix stream socket.
func Read(conn net.Conn) (Cred, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("peer: %T is not a Unix socket connection", conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("peer: SyscallConn: %w", err)
	}
	var (
		ucred *unix.Ucred
		serr  error
	)
	if err := raw.Control(func(fd uintptr) {
		ucred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, fmt.Errorf("peer: control: %w", err)
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("peer: getsockopt(SO_PEERCRED): %w", serr)
	}
	return Cred{PID: ucred.Pid, UID: ucred.Uid, GID: ucred.Gid}, nil
}
