package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
	"sync/atomic"
	"time"
)

// The daemon runs outside every sandbox's memory limit, so nothing a
// sandboxed program sends may make it hold more than a fixed amount: each
// buffer and each count below is bounded, and what goes over is refused
// with a status and a body that name the limit (and an event, which puts
// the same words in the call's result).

const (
	// maxHeadBytes bounds a request's line and headers, and a response's
	// status line and headers: 64 KiB, the size of the one buffer that
	// holds them. Registries and their clients send a few KiB at most (a
	// long JWT in Authorization is ~2 KiB); nginx refuses past 32 KiB by
	// default. net/http's 1 MiB would let 256 connections pin 256 MiB.
	maxHeadBytes = 64 << 10
	// maxHeaderFields bounds the fields of one head: each is a map entry
	// of ~200 bytes however short its text, so 64 KiB of "a:1" lines
	// would cost megabytes. Real requests carry 10 to 30.
	maxHeaderFields = 256
	// DefaultMaxConns is how many connections one call may hold open at
	// once, over all its listeners, when the configuration does not say:
	// npm opens up to 15 (maxsockets), Go's module fetches and pip fewer;
	// at ~250 KiB of buffers each (intercepted TLS both ways) 256 stay
	// under 64 MiB.
	DefaultMaxConns = 256
	// maxRefusing is how many connections over the limit are answered at
	// once (their answer says why); beyond it they are closed unanswered,
	// so a flood of idle connections costs a file descriptor each, briefly,
	// and no goroutine.
	maxRefusing = 16
	// refuseWait bounds how long a connection over the limit, or one
	// whose head was refused, is waited for (its first bytes, the rest of
	// what it sends before the close).
	refuseWait = 5 * time.Second
	// maxDrain is how much of what a refused client is still sending is
	// read and dropped before the close, so that the refusal reaches it
	// rather than being cut by a reset.
	maxDrain = 4 << 20
)

// limitPrefix starts the reason of every refusal that a limit (not the
// policy) made; IsLimitReason tells them apart, so that no rule is offered
// as the way out.
const limitPrefix = "proxy limit: "

// IsLimitReason reports whether an Event's Reason is a limit of the proxy
// (a head too large, too many connections) rather than the policy.
func IsLimitReason(reason string) bool { return strings.HasPrefix(reason, limitPrefix) }

// Limits bound what one call's proxy may hold; zero fields take the
// defaults.
type Limits struct {
	// MaxConns is how many connections the call may hold open at once,
	// over all its listeners ([egress] max_connections).
	MaxConns int
}

func (l Limits) maxConns() int {
	if l.MaxConns > 0 {
		return l.MaxConns
	}
	return DefaultMaxConns
}

// headError is a message head the proxy will not read to its end.
type headError struct{ reason string }

func (e *headError) Error() string { return e.reason }

// scanHead waits until br holds a whole message head (up to the empty line)
// and checks its size and field count without parsing it, so that the
// parser that follows only ever sees a bounded head. br must be able to
// hold maxHeadBytes. A head cut short by the end of the connection is
// left to the parser to report.
//
// The names a Trailer field lists count as fields too: net/http makes each
// one a map entry when it parses the head, however short.
func scanHead(br *bufio.Reader, what string, firstLine bool) error {
	scanned, lineStart, lines := 0, 0, 0
	inTrailer, announced := false, 0
	first := 0 // the request or status line, which is no field
	if firstLine {
		first = 1
	}
	for {
		n := br.Buffered()
		if n <= scanned {
			n = scanned + 1
		}
		if n > maxHeadBytes {
			return tooLarge(what, firstLine)
		}
		buf, err := br.Peek(n)
		for ; scanned < len(buf); scanned++ {
			if buf[scanned] != '\n' {
				continue
			}
			line := buf[lineStart:scanned]
			lineStart = scanned + 1
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			if len(line) == 0 {
				return nil // the end of the head (or a stray empty first line, which the parser refuses)
			}
			if lines++; lines > maxHeaderFields+first {
				return &headError{reason: fmt.Sprintf("%smore than %d header fields in a %s", limitPrefix, maxHeaderFields, what)}
			}
			if line[0] != ' ' && line[0] != '\t' { // else a folded line, which continues its field
				inTrailer = len(line) >= len("trailer:") && bytes.EqualFold(line[:len("trailer:")], []byte("trailer:"))
			}
			if inTrailer {
				// At most one name more than the commas.
				if announced += bytes.Count(line, []byte{','}) + 1; announced > maxHeaderFields {
					return &headError{reason: fmt.Sprintf("%smore than %d trailer fields announced in a %s", limitPrefix, maxHeaderFields, what)}
				}
			}
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return tooLarge(what, firstLine)
			}
			if len(buf) > 0 {
				return nil
			}
			return err
		}
	}
}

// tooLarge is the refusal of a head (or, without a first line, a trailer)
// over maxHeadBytes.
func tooLarge(what string, firstLine bool) error {
	part := what
	if firstLine {
		part += " line and headers"
	}
	return &headError{reason: fmt.Sprintf("%s%s over %d bytes", limitPrefix, part, maxHeadBytes)}
}

// newHeadReader is the reader requests or responses are parsed from: large
// enough for scanHead to hold a whole head.
func newHeadReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, maxHeadBytes) }

// malformed answers 400 to a request readRequest could not read, unless the
// client simply went away or readRequest answered it already (a head over
// the limits).
func malformed(w io.Writer, err error) {
	var he *headError
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.As(err, &he) {
		writeStatus(w, http.StatusBadRequest, "failed", "contextd egress: malformed request")
	}
}

// readRequest reads the next request of a client connection with its head
// bounded. A refused head is answered here (431, the limit named), the
// event emitted with host:port when known, and what the client still sends
// drained; the caller then closes the connection.
func (s *Server) readRequest(w io.Writer, raw net.Conn, br *bufio.Reader, via, host string, port int) (*http.Request, error) {
	if err := scanHead(br, "request", true); err != nil {
		var he *headError
		if errors.As(err, &he) {
			s.emit(Event{Time: time.Now(), Via: via, Host: host, Port: port, Reason: he.reason})
			writeStatus(w, http.StatusRequestHeaderFieldsTooLarge, "refused",
				"contextd egress: refused: "+he.reason+" (a limit of the proxy; send smaller headers)")
			drainRefused(raw, br)
		}
		return nil, err
	}
	req, err := http.ReadRequest(br)
	if err == nil {
		boundChunked(req, br)
	}
	return req, err
}

// drainRefused reads and drops what a refused client still sends, up to maxDrain
// bytes or refuseWait, after a half-close that tells it we are done: its
// answer then arrives before the close rather than being lost to a reset.
func drainRefused(c net.Conn, br *bufio.Reader) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // best effort; the close follows
	}
	c.SetReadDeadline(time.Now().Add(refuseWait)) //nolint:errcheck // a conn without deadlines just drains less politely
	io.CopyN(io.Discard, br, maxDrain)            //nolint:errcheck // whatever ends it, we close next
}

// connCount counts the connections of one Server (one call).
type connCount struct {
	open     atomic.Int64
	refusing atomic.Int64
	dropped  atomic.Int64
}

// admit takes a slot for a new connection, or reports that the call holds
// max already.
func (cc *connCount) admit(max int) bool {
	if cc.open.Add(1) > int64(max) {
		cc.open.Add(-1)
		return false
	}
	return true
}

// busyReason is the refusal of a connection over the limit.
func (s *Server) busyReason() string {
	return fmt.Sprintf("%stoo many connections: this call holds %d connections, its limit ([egress] max_connections); close some or raise it",
		limitPrefix, s.o.Limits.maxConns())
}

// overLimit answers a connection over the call's limit on the proxy's
// port in the client's own protocol: 503 with the limit named for HTTP, a
// general failure for SOCKS5, after reading just enough (bounded by size
// and refuseWait) to name the target in the event.
func (s *Server) overLimit(_ context.Context, c net.Conn) {
	c.SetDeadline(time.Now().Add(refuseWait)) //nolint:errcheck // without deadlines the read is bounded by the size alone
	br := bufio.NewReaderSize(c, 4<<10)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	ev := Event{Time: time.Now(), Via: "http", Reason: s.busyReason()}
	if first[0] == socksVersion {
		ev.Via = "socks5"
		ok, err := readSOCKSGreeting(br)
		if err != nil || !ok {
			return
		}
		if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
			return
		}
		req, err := readSOCKSRequest(br)
		if err != nil {
			return
		}
		ev.Host, ev.Port = req.host, req.port
		socksReply(c, socksGeneralFailure) //nolint:errcheck // closing anyway
		s.emit(ev)
		return
	}
	var req *http.Request
	if err := scanHead(br, "request", true); err == nil {
		req, _ = http.ReadRequest(br)
	}
	if req != nil {
		if req.Method == http.MethodConnect {
			ev.Via = "connect"
			ev.Host, ev.Port, _ = parseConnectTarget(req.RequestURI)
		} else {
			ev.Host, ev.Port, _ = requestTarget(req)
		}
	}
	writeStatus(c, http.StatusServiceUnavailable, "refused", "contextd egress: refused: "+ev.Reason)
	s.emit(ev)
	drainRefused(c, br)
}

// overLimitForward refuses a forwarded connection over the limit: a
// forward has no way to say why, so only the event does.
func (s *Server) overLimitForward(host string, port int) func(context.Context, net.Conn) {
	return func(context.Context, net.Conn) {
		s.emit(Event{Time: time.Now(), Via: "forward", Host: host, Port: port, Reason: s.busyReason()})
	}
}

// readResponse reads the upstream's next response with its head bounded:
// an allowed host (or whoever answers for it) may be hostile too. A
// chunked body gets the same bounded reader as a request's, which keeps
// the trailer (the relay passes it on) once it is checked.
func (ss *session) readResponse(req *http.Request) (*http.Response, error) {
	if err := scanHead(ss.upBr, "response", true); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(ss.upBr, req)
	if err == nil && isChunked(resp.TransferEncoding) && resp.Body != http.NoBody {
		resp.Body = newChunkedBody(ss.upBr, "response trailer", &resp.Trailer)
	}
	return resp, err
}

// boundChunked gives a chunked request a body that reads the chunks
// itself: net/http's own reader would parse the trailer into a map of up
// to a buffer's worth of fields, ~200 bytes each. The trailer is checked
// against the head limits and dropped (requests with trailers are rare and
// no registry needs one).
func boundChunked(req *http.Request, br *bufio.Reader) {
	if !isChunked(req.TransferEncoding) {
		return
	}
	req.Body = newChunkedBody(br, "trailer", nil)
	req.Trailer = nil
}

// chunkedBody is a chunked body (a request's or a response's) read straight
// from the reader of its connection, with its trailer held to the limits
// of a head.
type chunkedBody struct {
	chunks  io.Reader
	br      *bufio.Reader
	what    string       // names the trailer in a refusal
	trailer *http.Header // where the trailer's fields go; nil: dropped
	err     error
}

// newChunkedBody reads a chunked body from br, which must be able to hold
// maxHeadBytes. The trailer's fields are added to *trailer, as net/http
// would (the map it may already hold has the names the head announced),
// unless trailer is nil.
func newChunkedBody(br *bufio.Reader, what string, trailer *http.Header) *chunkedBody {
	return &chunkedBody{chunks: httputil.NewChunkedReader(br), br: br, what: what, trailer: trailer}
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.chunks.Read(p)
	if errors.Is(err, io.EOF) {
		err = b.readTrailer()
	}
	b.err = err
	return n, err
}

// readTrailer reads the trailer that follows the last chunk, after scanHead
// made sure it is within the limits and whole in the buffer, so that what
// it costs is bounded before anything of it is parsed.
func (b *chunkedBody) readTrailer() error {
	if err := scanHead(b.br, b.what, false); err != nil {
		return err
	}
	if b.trailer == nil {
		for {
			line, err := b.br.ReadSlice('\n')
			if err != nil {
				return err
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				return io.EOF
			}
		}
	}
	h, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	// Framing has no place in a trailer (RFC 9110 6.5.1): not passed on.
	for _, k := range []string{"Transfer-Encoding", "Trailer", "Content-Length"} {
		delete(h, k)
	}
	if *b.trailer == nil {
		*b.trailer = http.Header(h)
	} else {
		maps.Copy(*b.trailer, http.Header(h))
	}
	return io.EOF
}

// Close leaves the rest unread: a request whose body was not sent ends its
// connection, and a response not relayed to its end ends the upstream
// connection.
func (b *chunkedBody) Close() error { return nil }
