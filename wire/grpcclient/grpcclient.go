// Package grpcclient connects to the daemon with gRPC, the typed protocol for
// clients other than the proxy (which uses the light protocol),
// and turns every way that can fail into a catalog error.
package grpcclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/peercred"
	"github.com/contextd/contextd/wire"
)

// Conn is a connection to the daemon.
type Conn struct {
	wire.ToolsClient
	Path string
	cc   *grpc.ClientConn
}

// Close closes the connection.
func (c *Conn) Close() error { return c.cc.Close() }

// maxMsg bounds messages both ways; the daemon's own limit (max_request_bytes)
// decides what it accepts.
const maxMsg = 256 << 20

// Dial connects to the socket at path. The first connection is made here, so a
// missing daemon or a socket of another user is reported at once with its cause
// instead of surfacing later as a vague RPC failure. Under socket activation the
// connection succeeds as soon as systemd holds the socket; the daemon starts while
// the request waits in it.
func Dial(path string) (*Conn, error) {
	// The first connection is checked before anything is sent (gRPC would
	// flatten a handshake failure into an opaque Unavailable); later ones by
	// Credentials in the handshake.
	first, want, err := peercred.DialChecked(path)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var c net.Conn
		once.Do(func() { c, first = first, nil })
		if c != nil {
			return c, nil
		}
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	cc, err := grpc.NewClient("passthrough:///contextd",
		grpc.WithContextDialer(dialer),
		grpc.WithTransportCredentials(Credentials(want)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	)
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("grpc client for %s: %v: %w", path, err, catalog.ErrInternal)
	}
	return &Conn{ToolsClient: wire.NewToolsClient(cc), Path: path, cc: cc}, nil
}

// Classify turns an error from an RPC into a catalog error. Errors the daemon sent
// carry their code. (A daemon of the wrong uid is caught in Dial, before gRPC, which
// would flatten that handshake error into an opaque Unavailable.) Transport failures are told apart by whether any response had
// arrived (started): before it, the daemon closed the connection unasked, which the
// peer check does to callers it refuses (and a dying daemon does too: the socket's
// owner tells which); after it, the daemon went away mid-call.
func (c *Conn) Classify(err error, started bool) error {
	if err == nil {
		return nil
	}
	if cerr, ok := wire.FromStatus(err); ok {
		return cerr
	}
	if started {
		return fmt.Errorf("%s: %v: %w", c.Path, err, catalog.ErrConnectionLost)
	}
	if uid, ok := peercred.SocketOwner(c.Path); ok && uid != uint32(os.Getuid()) {
		return fmt.Errorf("the daemon at %s (uid %d) closed the connection of uid %d: %w", c.Path, uid, os.Getuid(), catalog.ErrPeerRefused)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer in time: %w", c.Path, catalog.ErrDaemonUnavailable)
	}
	return fmt.Errorf("%s: the daemon closed the connection before answering (%v): %w", c.Path, err, catalog.ErrDaemonUnavailable)
}
