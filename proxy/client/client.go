// Package client connects the proxy to the daemon's socket over the light
// protocol (wire/lite) and turns every way that can fail into a catalog error
// that says what to do.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/peercred"
	"github.com/contextd/contextd/wire/lite"
)

// SocketPath is where the proxy connects: $CONTEXTD_SOCKET when set, else the
// default per-user path.
func SocketPath() string {
	if p := os.Getenv("CONTEXTD_SOCKET"); p != "" {
		return p
	}
	return lite.DefaultSocketPath()
}

// maxEvent bounds one message from the daemon; it sends output in pieces of
// 256 KiB.
const maxEvent = 64 << 20

// Conn is one connection to the daemon; it carries one request.
type Conn struct {
	Path string
	c    net.Conn
	r    *bufio.Reader
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Dial connects to the socket at path and checks who serves it before sending
// anything: calls are never sent to a socket someone else put in the way. Under
// socket activation the connection succeeds as soon as systemd holds the socket;
// the daemon starts while the request waits in it.
func Dial(path string) (*Conn, error) {
	conn, _, err := peercred.DialChecked(path)
	if err != nil {
		return nil, err
	}
	return &Conn{Path: path, c: conn, r: bufio.NewReaderSize(conn, 64<<10)}, nil
}

// send writes the magic and the request.
func (c *Conn) send(req *lite.Request) error {
	if _, err := io.WriteString(c.c, lite.Magic); err != nil {
		return c.classify(err, false)
	}
	if err := lite.Write(c.c, req); err != nil {
		return c.classify(err, false)
	}
	return nil
}

// watch closes the connection when ctx ends, which makes the daemon cancel the
// call (and kill its command). The returned stop ends the watch.
func (c *Conn) watch(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.c.Close() })
}

// Call runs one call; output is handed to onOutput as it streams. The error is
// contextd's own failure (a catalog error); the tool's own failure is in the
// Result.
func (c *Conn) Call(ctx context.Context, call *lite.Call, onOutput func([]byte)) (*lite.Result, error) {
	defer c.watch(ctx)()
	if err := c.send(&lite.Request{Call: call, RawOutput: true}); err != nil {
		return nil, c.interrupted(ctx, call.Tool, err)
	}
	started := false
	for {
		var ev lite.Event
		if err := lite.ReadEvent(c.r, &ev, maxEvent); err != nil {
			return nil, c.interrupted(ctx, call.Tool, c.classify(err, started))
		}
		started = true
		switch {
		case ev.Error != nil:
			return nil, catalog.FromDetail(ev.Error)
		case ev.Result != nil:
			return ev.Result, nil
		case len(ev.Output) > 0:
			onOutput(ev.Output)
		}
	}
}

// ask sends one request and reads its one answer; an error answer is
// returned as the error.
func (c *Conn) ask(ctx context.Context, req *lite.Request) (*lite.Event, error) {
	defer c.watch(ctx)()
	if err := c.send(req); err != nil {
		return nil, err
	}
	var ev lite.Event
	if err := lite.Read(c.r, &ev, maxEvent); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: no answer in time: %w", c.Path, catalog.ErrDaemonUnavailable)
		}
		return nil, c.classify(err, false)
	}
	if ev.Error != nil {
		return nil, catalog.FromDetail(ev.Error)
	}
	return &ev, nil
}

// Status asks the daemon how it is.
func (c *Conn) Status(ctx context.Context) (*lite.Status, error) {
	ev, err := c.ask(ctx, &lite.Request{Status: &struct{}{}})
	if err != nil {
		return nil, err
	}
	if ev.Status == nil {
		return nil, fmt.Errorf("%s: the daemon answered a status request with something else: %w", c.Path, catalog.ErrInternal)
	}
	return ev.Status, nil
}

// Admin sends one request of contextd's own command line and decodes the
// answer into out (nil: the answer is not read beyond success).
func (c *Conn) Admin(ctx context.Context, op string, args, out any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%s: encode: %v: %w", op, err, catalog.ErrInternal)
	}
	ev, err := c.ask(ctx, &lite.Request{Admin: &lite.Admin{Op: op, Args: raw}})
	if err != nil {
		return err
	}
	if ev.Admin == nil {
		return fmt.Errorf("%s: the daemon answered %s with something else: %w", c.Path, op, catalog.ErrInternal)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(ev.Admin, out); err != nil {
		return fmt.Errorf("%s: decode the answer: %v: %w", op, err, catalog.ErrInternal)
	}
	return nil
}

// Request connects to the daemon at path (checking who serves it), sends
// req and returns the connection unread and unbuffered: for a request whose
// answer opens a conversation of its own on the connection (a wrap, an
// inspect), which the caller reads itself.
func Request(path string, req *lite.Request) (*Conn, error) {
	conn, _, err := peercred.DialChecked(path)
	if err != nil {
		return nil, err
	}
	c := &Conn{Path: path, c: conn}
	if err := c.send(req); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// Net returns the connection itself.
func (c *Conn) Net() net.Conn { return c.c }

// Refused returns the error to report when the daemon closed the connection
// before its first answer because it does not serve this uid, and nil when
// that is not why.
func (c *Conn) Refused(err error) error {
	if e := c.classify(err, false); errors.Is(e, catalog.ErrPeerRefused) {
		return e
	}
	return nil
}

// OpenWrap asks the daemon at path to stand between this process and the MCP
// server w names. On success the returned connection carries the MCP
// conversation itself (newline-delimited JSON-RPC both ways).
func OpenWrap(path string, w *lite.Wrap) (net.Conn, *lite.WrapReady, error) {
	return OpenWrapWithin(path, w, 0)
}

// OpenWrapWithin is OpenWrap waiting at most d (0: no bound) for the server
// to be ready: a remote endpoint that accepts and never answers, or a
// server that never starts, is then an error rather than a wait for ever.
func OpenWrapWithin(path string, w *lite.Wrap, d time.Duration) (net.Conn, *lite.WrapReady, error) {
	c, err := Request(path, &lite.Request{Wrap: w})
	if err != nil {
		return nil, nil, err
	}
	if d > 0 {
		c.c.SetReadDeadline(time.Now().Add(d))
		defer c.c.SetReadDeadline(time.Time{})
	}
	fail := func(err error) (net.Conn, *lite.WrapReady, error) {
		c.Close()
		return nil, nil, err
	}
	var ev lite.Event
	if err := lite.Read(c.c, &ev, maxEvent); err != nil {
		if refused := c.Refused(err); refused != nil {
			return fail(refused)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fail(fmt.Errorf("mcp wrap: the server %s was not ready within %s (a remote endpoint that does not answer, or a server slow to start): %w", w.Name, d, catalog.ErrServerStart))
		}
		return fail(fmt.Errorf("mcp wrap: the daemon closed the connection before the server was ready (%v); see its log (journalctl --user -u contextd): %w", err, catalog.ErrConnectionLost))
	}
	if ev.Error != nil {
		return fail(catalog.FromDetail(ev.Error))
	}
	if ev.Wrap == nil {
		return fail(fmt.Errorf("mcp wrap: unexpected answer from the daemon: %w", catalog.ErrInternal))
	}
	return c.c, ev.Wrap, nil
}

// interrupted reports a call the caller itself ended (SIGINT, SIGTERM) as such,
// whatever the connection said when it was closed under it.
func (c *Conn) interrupted(ctx context.Context, tool string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", tool, catalog.ErrInterrupted)
	}
	return err
}

// classify turns a transport failure into a catalog error. Failures are told
// apart by whether any response had arrived (started): before it, the daemon
// closed the connection unasked, which the peer check does to callers it
// refuses (and a dying daemon does too: the socket's owner tells which); after
// it, the daemon went away mid-call.
func (c *Conn) classify(err error, started bool) error {
	if started {
		return fmt.Errorf("%s: %v: %w", c.Path, err, catalog.ErrConnectionLost)
	}
	if uid, ok := peercred.SocketOwner(c.Path); ok && uid != uint32(os.Getuid()) {
		return fmt.Errorf("the daemon at %s (uid %d) closed the connection of uid %d: %w", c.Path, uid, os.Getuid(), catalog.ErrPeerRefused)
	}
	return fmt.Errorf("%s: the daemon closed the connection before answering (%v): %w", c.Path, err, catalog.ErrDaemonUnavailable)
}
