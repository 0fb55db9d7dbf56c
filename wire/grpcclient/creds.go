package grpcclient

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"

	"github.com/contextd/contextd/peercred"
)

// Credentials checks, on the client side of every gRPC connection, that the
// process serving the socket runs as the expected uid (normally the caller's
// own), so calls are never sent to a socket someone else put in the way. Root
// is not accepted either: contextd runs as its user. (The daemon's side of the
// check is daemon/peer.)
func Credentials(wantUID uint32) credentials.TransportCredentials {
	return clientCreds{want: wantUID}
}

type clientCreds struct{ want uint32 }

func (c clientCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	got, err := peercred.Read(conn)
	if err != nil {
		return nil, nil, err
	}
	if got.UID != c.want {
		return nil, nil, &peercred.ErrServerIdentity{Got: got.UID, Want: c.want}
	}
	return conn, got, nil
}

func (clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("grpcclient: client credentials used on a server")
}

func (c clientCreds) Clone() credentials.TransportCredentials { return c }

// Info and OverrideServerName: no transport security beyond the socket's own
// permissions and the peer check.
func (clientCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "unix-peercred"}
}

func (clientCreds) OverrideServerName(string) error { return nil }
