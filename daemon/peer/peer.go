// Package peer is the peer check: it reads SO_PEERCRED from every accepted Unix
// connection before any protocol byte is read, refuses callers of another uid, and
// hands the caller's pid/uid/gid to gRPC handlers as the connection's AuthInfo.
package peer

import (
	"context"

	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/contextd/contextd/peercred"
)

// Cred is who is at the other end of a Unix socket, as the kernel saw it at
// connect time. It is the gRPC AuthInfo of every connection the daemon accepts.
type Cred = peercred.Cred

var _ credentials.AuthInfo = Cred{}

// credKey is the context key of a caller's credentials on the light protocol.
type credKey struct{}

// NewContext returns ctx carrying the caller's credentials (the light protocol's
// counterpart of gRPC's AuthInfo).
func NewContext(ctx context.Context, c Cred) context.Context {
	return context.WithValue(ctx, credKey{}, c)
}

// FromContext returns the caller of a handler, from either protocol. It fails
// when the connection did not come through Listener, which a handler must treat
// as a refusal.
func FromContext(ctx context.Context) (Cred, bool) {
	if c, ok := ctx.Value(credKey{}).(Cred); ok {
		return c, true
	}
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return Cred{}, false
	}
	c, ok := p.AuthInfo.(Cred)
	return c, ok
}
