package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/httpguard"
	"github.com/contextd/contextd/daemon/peer"
)

// The HTTP API's loopback TCP listener ([http] tcp): for a tunnel or an
// editor that cannot reach a Unix socket. TCP has no SO_PEERCRED, so the
// per-install bearer token is the credential and the guard checks it, with
// the Host and Origin, before the API sees a request.

// tcpSessionPrefix names the session of a TCP call that names none: a TCP
// peer has no process to derive one from, so each such call is a session
// of its own.
const tcpSessionPrefix = "http-"

// overTCPKey marks a request's context as come over the TCP listener.
type overTCPKey struct{}

// overTCP reports whether the request of ctx came over the TCP listener.
func overTCP(ctx context.Context) bool {
	v, _ := ctx.Value(overTCPKey{}).(bool)
	return v
}

// connContext puts a connection's caller in its requests' context: the
// Unix peer's credentials as the kernel gave them, or, over TCP, the
// daemon's own user (the token proved it) with no process.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if cred, ok := peer.CredOf(c); ok {
		return peer.NewContext(ctx, cred)
	}
	if _, ok := c.(*net.TCPConn); ok {
		self := peer.Cred{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
		return context.WithValue(peer.NewContext(ctx, self), overTCPKey{}, true)
	}
	return ctx
}

// httpTCP is the TCP listener and the guard in front of its server.
type httpTCP struct {
	ln   net.Listener
	wrap func(http.Handler) http.Handler
}

// openTCP binds addr, a loopback address only (checked again here, whatever
// the configuration check let through), and guards it with the token in
// httpguard.TokenPath, made on first use.
func openTCP(addr string, origins []string) (httpTCP, error) {
	if err := httpguard.CheckLoopback(addr); err != nil {
		return httpTCP{}, err
	}
	path, err := httpguard.TokenPath()
	if err != nil {
		return httpTCP{}, err
	}
	token, err := httpguard.LoadToken(path)
	if err != nil {
		return httpTCP{}, err
	}
	g, err := httpguard.TCP(token, origins)
	if err != nil {
		return httpTCP{}, err
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return httpTCP{}, fmt.Errorf("[http] tcp %s is in use by another program: choose another port: %w", addr, catalog.ErrConfig)
	}
	if err != nil {
		return httpTCP{}, fmt.Errorf("[http] tcp %s: %v: %w", addr, err, catalog.ErrConfig)
	}
	return httpTCP{ln: ln, wrap: g.Wrap}, nil
}
