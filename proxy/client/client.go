// Package client connects to the daemon's socket and turns every way that can fail
// into a catalog error that says what to do.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"

	"google.golang.org/grpc"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/wire"
)

// SocketPath is where the proxy connects: $CONTEXTD_SOCKET when set, else the
// default per-user path.
func SocketPath() string {
	if p := os.Getenv("CONTEXTD_SOCKET"); p != "" {
		return p
	}
	return wire.DefaultSocketPath()
}

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
	first, err := net.Dial("unix", path)
	if err != nil {
		return nil, dialError(path, err)
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
	want, err := daemonUID()
	if err != nil {
		first.Close()
		return nil, err
	}
	// Check who serves the socket before sending anything: gRPC would flatten a
	// handshake failure into an opaque Unavailable. Later connections are checked
	// by ClientCredentials in the handshake.
	if cred, err := peer.Read(first); err != nil {
		first.Close()
		return nil, fmt.Errorf("%s: %v: %w", path, err, catalog.ErrInternal)
	} else if cred.UID != want {
		first.Close()
		return nil, fmt.Errorf("%s: %v: %w", path, &peer.ErrServerIdentity{Got: cred.UID, Want: want}, catalog.ErrDaemonIdentity)
	}
	cc, err := grpc.NewClient("passthrough:///contextd",
		grpc.WithContextDialer(dialer),
		grpc.WithTransportCredentials(peer.ClientCredentials(want)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	)
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("grpc client for %s: %v: %w", path, err, catalog.ErrInternal)
	}
	return &Conn{ToolsClient: wire.NewToolsClient(cc), Path: path, cc: cc}, nil
}

// daemonUID is the uid the daemon must run as: ours, unless CONTEXTD_DAEMON_UID
// names another (a daemon that lists us in its allowed_uids).
func daemonUID() (uint32, error) {
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

func dialError(path string, err error) error {
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
	if cerr, ok := catalog.FromStatus(err); ok {
		return cerr
	}
	if started {
		return fmt.Errorf("%s: %v: %w", c.Path, err, catalog.ErrConnectionLost)
	}
	if uid, ok := socketOwner(c.Path); ok && uid != uint32(os.Getuid()) {
		return fmt.Errorf("the daemon at %s (uid %d) closed the connection of uid %d: %w", c.Path, uid, os.Getuid(), catalog.ErrPeerRefused)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer in time: %w", c.Path, catalog.ErrDaemonUnavailable)
	}
	return fmt.Errorf("%s: the daemon closed the connection before answering (%v): %w", c.Path, err, catalog.ErrDaemonUnavailable)
}

func socketOwner(path string) (uint32, bool) {
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
