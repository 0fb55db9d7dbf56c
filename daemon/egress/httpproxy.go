package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// handleConn serves one client connection: SOCKS5 when the first byte says
// so, else HTTP/1.1 requests until the client closes, a CONNECT takes the
// connection over, or an error ends it.
func (s *Server) handleConn(ctx context.Context, c net.Conn) {
	br := newHeadReader(c)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		s.handleSOCKS(ctx, c, br)
		return
	}
	sess := newSession(ctx, s, "http", c, br)
	defer sess.close()
	for {
		req, err := s.readRequest(c, c, br, "http", "", 0)
		if err != nil {
			malformed(c, err)
			return
		}
		if req.Method == http.MethodConnect {
			sess.close()
			s.handleConnect(ctx, c, br, req)
			return
		}
		if !sess.handle(req) {
			return
		}
	}
}

// handleConnect answers a CONNECT request and serves the tunnel.
func (s *Server) handleConnect(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := parseConnectTarget(req.RequestURI)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "failed", "contextd egress: "+err.Error())
		return
	}
	s.handleTunnel(ctx, c, br, "connect", host, port, func(ref *refusal) error {
		if ref == nil {
			_, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			return err
		}
		writeRefusal(c, host, port, ref)
		return nil
	})
}

// handleTunnel opens host:port for a CONNECT, SOCKS5 or forwarded
// connection, tells the client the outcome through reply (nil for a
// forward, which has no way to say), and then either copies bytes or, for a
// host with credentials, intercepts. One event reports the tunnel.
func (s *Server) handleTunnel(ctx context.Context, c net.Conn, br *bufio.Reader, via, host string, port int, reply func(*refusal) error) {
	ev := Event{Time: time.Now(), Via: via, Host: host, Port: port}
	see, ref := s.tunnelView(host, port)
	var up net.Conn
	var rule Rule
	if ref == nil {
		up, rule, ref = s.open(ctx, host, port, "")
	}
	if ref != nil {
		if reply != nil {
			reply(ref) //nolint:errcheck // the connection ends either way
		}
		ev.Reason = ref.reason
		s.emit(ev)
		return
	}
	closeOnDone(ctx, up)
	defer up.Close()
	if reply != nil {
		if err := reply(nil); err != nil {
			ev.Reason = "reply: " + shortErr(err)
			s.emit(ev)
			return
		}
	}
	ev.Allowed = true
	ev.Rule = rule.String()
	if see {
		ev.Intercepted = true
		if reason, alert := checkFirstFlight(br, host); reason != "" {
			tlsAlert(c, alert)
			ev.Allowed, ev.Reason = false, reason
		} else {
			ev.BytesOut, ev.BytesIn, ev.Reason = s.intercept(ctx, c, br, up, via, host, port)
		}
	} else if ev.BytesOut, ev.BytesIn, ev.Reason = guardedTunnel(c, br, up, host); ev.Reason != "" {
		ev.Allowed = false // the ClientHello was refused
	}
	s.emit(ev)
}

// writeRefusal answers a request the proxy will not pass on: 403 for the
// policy, with the rule that would allow it; 502 for a name or connection
// that failed.
func writeRefusal(w io.Writer, host string, port int, ref *refusal) {
	hp := Hint(host, port)
	switch {
	case ref.kind != refusedPolicy:
		writeStatus(w, http.StatusBadGateway, "failed", fmt.Sprintf("contextd egress: cannot reach %s (%s)", hp, ref.reason))
	case ref.hint != "":
		writeStatus(w, http.StatusForbidden, "refused", fmt.Sprintf("contextd egress: refused %s (%s); allow it with rule %q", hp, ref.reason, ref.hint))
	default:
		writeStatus(w, http.StatusForbidden, "refused", fmt.Sprintf("contextd egress: refused %s (%s)", hp, ref.reason))
	}
}

// writeStatus writes a complete short text response that closes the
// connection: after a refusal the rest of what the client sent is not read.
func writeStatus(w io.Writer, code int, tag, text string) {
	text += "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nX-Contextd-Egress: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), tag, strconv.Itoa(len(text)), text)
	if f, ok := w.(interface{ Flush() error }); ok {
		f.Flush() //nolint:errcheck // the connection closes next
	}
}

// bufConn reads through a bufio.Reader that may already hold bytes of the
// connection (the sniffed first byte, a pipelined request), and writes to
// the connection directly.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// countWriter counts bytes written through it, for the event, and keeps
// the first write error (which tells a failure of the writer's side from
// one of the reader's).
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
