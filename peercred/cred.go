// Package peercred reads who is at the other end of a Unix socket (SO_PEERCRED). It
// is the part of the peer check both sides use: the daemon on every accepted
// connection, the proxy on the daemon before it sends anything. It links nothing
// but the standard library and x/sys, because the proxy starts on every call.
package peercred

import "fmt"

// Cred is who is at the other end of a Unix socket, as the kernel saw it at
// connect time.
type Cred struct {
	PID int32
	UID uint32
	GID uint32
}

// AuthType names the credential kind; it makes Cred a gRPC credentials.AuthInfo
// without this package importing gRPC.
func (Cred) AuthType() string { return "unix-peercred" }

func (c Cred) String() string { return fmt.Sprintf("pid=%d uid=%d gid=%d", c.PID, c.UID, c.GID) }

// ErrServerIdentity is returned to a client when the process serving the socket
// runs as another uid than the one it expects.
type ErrServerIdentity struct{ Got, Want uint32 }

func (e *ErrServerIdentity) Error() string {
	return fmt.Sprintf("the contextd socket is served by uid %d, not uid %d", e.Got, e.Want)
}
