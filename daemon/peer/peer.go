// Package peer is the peer check: it reads SO_PEERCRED from every accepted Unix
// connection before any protocol byte is read, refuses callers of another uid, and
// hands the caller's pid/uid/gid to gRPC handlers as the connection's AuthInfo.
package peer

import (
	"context"
	"fmt"

	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"
)

// Cred is who is at the other end of a Unix socket, as the kernel saw it at
// connect time. It is the gRPC AuthInfo of every connection the daemon accepts.
type Cred struct {
	PID int32
	UID uint32
	GID uint32
}

// AuthType implements credentials.AuthInfo.
func (Cred) AuthType() string { return "unix-peercred" }

func (c Cred) String() string { return fmt.Sprintf("pid=%d uid=%d gid=%d", c.PID, c.UID, c.GID) }

var _ credentials.AuthInfo = Cred{}

// FromContext returns the caller of a gRPC handler. It fails when the connection
// did not come through Listener, which a handler must treat as a refusal.
func FromContext(ctx context.Context) (Cred, bool) {
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return Cred{}, false
	}
	c, ok := p.AuthInfo.(Cred)
	return c, ok
}
