package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/wire/lite"
)

// handshakeTimeout bounds how long a new connection may take to send its first
// bytes (the protocol magic or the HTTP/2 preface) and, on the light protocol,
// its request. A connection that sends nothing must not hold a goroutine forever.
//
// Two minutes, as gRPC's own ConnectionTimeout: only the user's own processes
// get this far (the peer is checked at accept), and a burst of parallel calls
// on a small machine starves a proxy between its connect and its first write
// for seconds. At 10 s, 9 calls of a burst of 200 (2 cores, load 12) were
// closed unanswered ("the daemon closed the connection before answering").
const handshakeTimeout = 2 * time.Minute

// mux accepts peer-checked connections and sends each to the protocol it speaks:
// the light protocol (wire/lite) is served here, everything else goes to gRPC
// through grpcLn.
type mux struct {
	svc    *service
	maxMsg int
	grpcLn *chanListener

	// mu guards conns: the connections not yet handed to gRPC, each marked
	// whether it is serving a light-protocol call (false: its first bytes are
	// still awaited). wg counts them.
	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newMux(svc *service, pl net.Listener, maxMsg int) *mux {
	return &mux{svc: svc, maxMsg: maxMsg, grpcLn: newChanListener(pl), conns: map[net.Conn]bool{}}
}

// serve accepts until the listener is closed.
func (m *mux) serve(pl net.Listener) {
	for {
		conn, err := pl.Accept()
		if err != nil {
			m.grpcLn.fail(err)
			return
		}
		m.wg.Add(1)
		go m.route(conn)
	}
}

func (m *mux) route(conn net.Conn) {
	defer m.wg.Done()
	m.mu.Lock()
	m.conns[conn] = false
	m.mu.Unlock()
	conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	first, err := peer.Peek(conn, len(lite.Magic))
	if err != nil || string(first) != lite.Magic {
		m.mu.Lock()
		delete(m.conns, conn)
		m.mu.Unlock()
		// gRPC (or garbage, which gRPC rejects): it reads the bytes again.
		conn.SetReadDeadline(time.Time{})
		if !m.grpcLn.push(conn) {
			conn.Close()
		}
		return
	}
	m.mu.Lock()
	m.conns[conn] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.conns, conn)
		m.mu.Unlock()
		conn.Close()
	}()
	m.serveLite(conn)
}

// serveLite runs the one call of a light-protocol connection.
func (m *mux) serveLite(conn net.Conn) {
	cred, ok := peer.CredOf(conn)
	if !ok {
		return
	}
	var magic [len(lite.Magic)]byte
	if _, err := io.ReadFull(conn, magic[:]); err != nil {
		return
	}
	var req lite.Request
	if err := lite.Read(conn, &req, m.maxMsg); err != nil {
		// A client that went away or said nothing in time gets no answer;
		// one that sent something wrong is told what.
		var ne net.Error
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &ne):
		case errors.Is(err, lite.ErrTooLarge):
			lite.Write(conn, &lite.Event{Error: catalog.ToDetail(fmt.Errorf("request: %v (max_request_bytes): %w", err, catalog.ErrBadInput))})
		default:
			lite.Write(conn, &lite.Event{Error: catalog.ToDetail(fmt.Errorf("request: %v: %w", err, catalog.ErrBadInput))})
		}
		return
	}
	conn.SetReadDeadline(time.Time{})
	switch {
	case req.Status != nil:
		st := m.svc.status()
		lite.Write(conn, &lite.Event{Status: &lite.Status{Version: st.Version, PID: int32(st.PID), UptimeMS: st.Uptime.Milliseconds(),
			CallsInFlight: int32(st.CallsInFlight), SocketActivated: st.SocketActivated, Tools: st.Tools}})
		return
	case req.Wrap != nil:
		m.svc.serveWrap(conn, req.Wrap, cred)
		return
	case (req.Inspect != nil || req.Admin != nil) && cred.UID != uint32(os.Getuid()):
		// allowed_uids lets other users make tool calls in their own
		// sessions; watching, steering or approving the owner's wrapped
		// servers stays the owner's.
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(fmt.Errorf("uid %d: inspect and the mcp admin commands are for the daemon's own user only: %w", cred.UID, catalog.ErrPeerRefused))})
		return
	case req.Inspect != nil:
		m.svc.serveInspect(conn, req.Inspect, cred)
		return
	case req.Admin != nil:
		m.svc.serveAdmin(conn, req.Admin, cred)
		return
	case req.Call == nil:
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(fmt.Errorf("request names no call: %w", catalog.ErrBadInput))})
		return
	}
	// The caller leaving (EOF or an error on the connection) cancels the call,
	// as a canceled gRPC stream does. Nothing else is read after the request.
	ctx, cancel := context.WithCancel(peer.NewContext(context.Background(), cred))
	defer cancel()
	go func() {
		var b [1]byte
		conn.Read(b[:])
		cancel()
	}()
	lc := req.Call
	c := Call{Tool: lc.Tool, Input: lc.Input, Session: lc.Session, Cwd: lc.Cwd,
		Continue: lc.Continue, Env: lc.Env, MaxTokens: lc.MaxTokens}
	emit := func(b []byte) error { return lite.Write(conn, &lite.Event{Output: b}) }
	if req.RawOutput {
		emit = func(b []byte) error { return lite.WriteOutput(conn, b) }
	}
	res, err := m.svc.call(ctx, c, cred, emit)
	if err != nil {
		lite.Write(conn, &lite.Event{Error: catalog.ToDetail(err)})
		return
	}
	if err := lite.Write(conn, &lite.Event{Result: liteResult(res)}); err != nil {
		m.svc.opts.Logger.Info("result not delivered: caller gone", "err", err)
	}
}

func liteResult(r Result) *lite.Result {
	out := &lite.Result{ExitCode: r.ExitCode, Truncated: r.Truncated, HasMore: r.Truncated,
		TokensUsed: int64(r.TokensUsed), Continue: r.Continue, Session: r.Session,
		Workspace: r.Workspace, Warnings: r.Warnings, Error: r.Error}
	if l := r.Sandbox; sandboxed(l) {
		out.Sandbox = &l
	}
	return out
}

// wait returns once every light-protocol connection has ended. Connections
// that have not sent their first bytes are closed first: a silent client must
// not hold a stopping daemon for handshakeTimeout.
func (m *mux) wait() {
	m.close(false)
	m.wg.Wait()
}

// closeAll cuts every connection not handed to gRPC (hard stop).
func (m *mux) closeAll() { m.close(true) }

func (m *mux) close(serving bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c, s := range m.conns {
		if serving || !s {
			c.Close()
		}
	}
}

// chanListener is the net.Listener gRPC serves: connections the mux routed to
// it. Closing it closes the real listener too, so gRPC's GracefulStop stops the
// accepting for both protocols.
type chanListener struct {
	real   net.Listener
	ch     chan net.Conn
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	failed error
}

func newChanListener(real net.Listener) *chanListener {
	return &chanListener{real: real, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// fail ends Accept with the real listener's error.
func (l *chanListener) fail(err error) {
	l.mu.Lock()
	l.failed = err
	l.mu.Unlock()
	l.once.Do(func() { close(l.done) })
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.failed != nil {
			return nil, l.failed
		}
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	err := l.real.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

func (l *chanListener) Addr() net.Addr { return l.real.Addr() }
