package peer

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"

	"google.golang.org/grpc/credentials"

	"github.com/contextd/contextd/peercred"
)

// Listener accepts only connections whose peer passes the check. Connections that
// fail are closed at once, before a byte is read, and logged with the peer's pid and
// uid; Accept then waits for the next one, so a refused peer never reaches gRPC.
type Listener struct {
	net.Listener
	// AllowedUIDs are other uids that may connect (the configuration's
	// allowed_uids); the daemon's own uid is always allowed.
	AllowedUIDs []uint32
	Log         *slog.Logger

	self uint32
}

// NewListener wraps ln; the daemon's own uid is always allowed.
func NewListener(ln net.Listener, allowed []uint32, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.Default()
	}
	return &Listener{Listener: ln, AllowedUIDs: allowed, Log: log, self: uint32(os.Getuid())}
}

func (l *Listener) allowed(uid uint32) bool {
	if uid == l.self {
		return true
	}
	for _, u := range l.AllowedUIDs {
		if u == uid {
			return true
		}
	}
	return false
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, err := peercred.Read(conn)
		if err != nil {
			l.Log.Warn("refused connection: cannot read peer credentials", "err", err)
			conn.Close()
			continue
		}
		if !l.allowed(c.UID) {
			l.Log.Warn("refused peer: uid not allowed", "peer_pid", c.PID, "peer_uid", c.UID, "peer_gid", c.GID, "daemon_uid", l.self)
			conn.Close()
			continue
		}
		return &credConn{Conn: conn, cred: c}, nil
	}
}

// credConn carries the credentials read at accept time to the handshake, and
// the bytes Peek read ahead.
type credConn struct {
	net.Conn
	cred Cred
	br   *bufio.Reader // set by Peek; reads go through it from then on
}

func (c *credConn) Read(p []byte) (int, error) {
	if c.br != nil {
		return c.br.Read(p)
	}
	return c.Conn.Read(p)
}

// Peek returns the first n bytes the peer sent on a connection from Listener,
// without consuming them: later reads see them again. The daemon uses it to tell
// its two protocols apart (gRPC begins with the HTTP/2 preface).
func Peek(conn net.Conn, n int) ([]byte, error) {
	cc, ok := conn.(*credConn)
	if !ok {
		return nil, errors.New("peer: connection was not accepted through the peer-checked listener")
	}
	if cc.br == nil {
		cc.br = bufio.NewReaderSize(cc.Conn, 4096)
	}
	return cc.br.Peek(n)
}

// CredOf returns the credentials read when conn was accepted through Listener.
func CredOf(conn net.Conn) (Cred, bool) {
	cc, ok := conn.(*credConn)
	if !ok {
		return Cred{}, false
	}
	return cc.cred, true
}

// ServerCredentials makes gRPC take each connection's AuthInfo from Listener. A
// connection that did not come through Listener fails the handshake: fail closed.
func ServerCredentials() credentials.TransportCredentials { return serverCreds{} }

type serverCreds struct{ insecureBase }

func (serverCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cc, ok := conn.(*credConn)
	if !ok {
		return nil, nil, errors.New("peer: connection was not accepted through the peer-checked listener")
	}
	return cc, cc.cred, nil
}

func (serverCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("peer: server credentials used on a client")
}

func (serverCreds) Clone() credentials.TransportCredentials { return serverCreds{} }

// insecureBase holds the parts common to both sides: no transport security beyond
// the socket's own permissions and the peer check.
type insecureBase struct{}

func (insecureBase) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "unix-peercred"}
}

func (insecureBase) OverrideServerName(string) error { return nil }
