package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// session relays the requests of one client connection that the proxy can
// see: plain HTTP proxy requests (each naming its own host), or the requests
// inside an intercepted tunnel (all to the tunnel's host).
type session struct {
	ctx         context.Context
	s           *Server
	via         string
	intercepted bool

	client net.Conn      // where responses go (a *tls.Conn when intercepted)
	br     *bufio.Reader // where requests come from
	cbw    *bufio.Writer

	// A tunnel's session has a fixed target and an upstream dialled before
	// the tunnel was confirmed; upTLS says whether to speak TLS on it.
	fixed      bool
	host       string
	port       int
	rule       Rule
	upTLS      bool
	upFailed   string // why the fixed upstream cannot be used
	out, in    int64  // totals, for the tunnel's event
	upKey      string // host:port and rule of up, for reuse
	up         net.Conn
	upBr       *bufio.Reader
	upBw       *bufio.Writer
	upAfterOff func() bool
}

func newSession(ctx context.Context, s *Server, via string, client net.Conn, br *bufio.Reader) *session {
	return &session{ctx: ctx, s: s, via: via, client: client, br: br, cbw: bufio.NewWriterSize(client, 32<<10)}
}

// close closes the upstream connection, if any.
func (ss *session) close() {
	if ss.up != nil {
		ss.upAfterOff()
		ss.up.Close()
		ss.up = nil
	}
}

func (ss *session) setUp(c net.Conn, key string) {
	ss.up, ss.upKey = c, key
	ss.upBr = newHeadReader(c)
	ss.upBw = bufio.NewWriterSize(c, 32<<10)
	ss.upAfterOff = context.AfterFunc(ss.ctx, func() { c.Close() })
}

// target decides where req goes.
func (ss *session) target(req *http.Request) (string, int, error) {
	if ss.fixed {
		if req.URL.IsAbs() && !ss.sameAuthority(req.URL.Host) {
			return "", 0, fmt.Errorf("request for %q inside a tunnel to %s", req.URL.Host, Hint(ss.host, ss.port))
		}
		// A front end routes by Host, so inside a tunnel it must name the
		// tunnel's host too (domain fronting otherwise).
		if !ss.sameAuthority(req.Host) {
			return "", 0, fmt.Errorf("Host %q inside a tunnel to %s", req.Host, Hint(ss.host, ss.port))
		}
		return ss.host, ss.port, nil
	}
	return requestTarget(req)
}

// requestTarget gives the host and port of an absolute-form request; the
// proxy only speaks plain HTTP this way (https goes through CONNECT).
func requestTarget(req *http.Request) (string, int, error) {
	if !req.URL.IsAbs() || req.URL.Host == "" {
		return "", 0, errors.New("not a proxy request (origin-form target)")
	}
	if req.URL.Scheme != "http" {
		return "", 0, fmt.Errorf("scheme %q not proxied (use CONNECT)", req.URL.Scheme)
	}
	host, err := checkHost(req.URL.Hostname())
	if err != nil {
		return "", 0, err
	}
	port := 80
	if p := req.URL.Port(); p != "" {
		if port, err = parsePort(p); err != nil {
			return "", 0, err
		}
	}
	return host, port, nil
}

// admit is the decision about one visible request, without any network:
// where it goes, which rule allows it, and the credential substitution or
// leak refusal. ref is set when the request must not be sent.
func (ss *session) admit(req *http.Request, ev *Event) (host string, port int, rule Rule, ref *refusal, code int) {
	host, port, err := ss.target(req)
	if err != nil {
		return "", 0, Rule{}, &refusal{kind: refusedPolicy, reason: err.Error()}, http.StatusBadRequest
	}
	ev.Host, ev.Port = host, port
	rule, reason, ok := ss.s.o.Policy.check(host, port, req.Method)
	if !ok {
		hint := Hint(host, port)
		if reason != "no rule allows it" {
			hint += " " + strings.ToUpper(req.Method)
		}
		return host, port, Rule{}, &refusal{kind: refusedPolicy, reason: reason, hint: hint}, http.StatusForbidden
	}
	return host, port, rule, nil, 0
}

// exchange is one request's passage through a session: what was decided
// about it, and the event that records it.
type exchange struct {
	req  *http.Request
	ev   Event
	host string
	port int
	rule Rule
	// sc scrubs the response of the credentials its host holds and of those
	// the request carried (nil: there are none).
	sc          *scrubber
	clientClose bool // the client asked for the connection to close after it
}

// handle relays one request and its response; it reports whether the
// client connection may carry another request.
func (ss *session) handle(req *http.Request) bool {
	x := &exchange{req: req, ev: Event{Time: time.Now(), Via: ss.via, Method: req.Method, Intercepted: ss.intercepted}}
	defer func() { ss.out += x.ev.BytesOut; ss.in += x.ev.BytesIn }()
	echoes, ok := ss.allow(x)
	if !ok {
		return false
	}
	resp, ok := ss.send(x, echoes)
	if !ok {
		return false
	}
	return ss.relay(x, resp)
}

// refuse answers x's request with a refusal instead of a response and
// records it; the connection cannot carry another request.
func (ss *session) refuse(x *exchange, code int, ref *refusal) bool {
	x.ev.Reason = ref.reason
	switch code {
	case http.StatusBadRequest:
		writeStatus(ss.cbw, code, "failed", "contextd egress: bad request: "+ref.reason)
	default:
		writeRefusal(ss.cbw, x.host, x.port, ref)
	}
	ss.s.emit(x.ev)
	return false
}

// allow decides about x's request before anything is sent upstream: the
// policy, an Expect the proxy answers, the credential substitution and leak
// refusal. It returns the credentials substituted into the request (their
// echoes are scrubbed from the response); !ok means the request goes no
// further, its client answered.
func (ss *session) allow(x *exchange) (echoes []swap, ok bool) {
	req := x.req
	var ref *refusal
	var code int
	x.host, x.port, x.rule, ref, code = ss.admit(req, &x.ev)
	if ref != nil {
		return nil, ss.refuse(x, code, ref)
	}
	if req.Header.Get("Expect") != "" {
		// The proxy answers 100-continue itself, now that the request is
		// allowed, so the client sends the body the rewrite may need to read.
		if !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			return nil, ss.refuse(x, http.StatusBadRequest, &refusal{reason: "unsupported Expect"})
		}
		req.Header.Del("Expect")
		io.WriteString(ss.cbw, "HTTP/1.1 100 Continue\r\n\r\n") //nolint:errcheck // seen at the flush
		if err := ss.cbw.Flush(); err != nil {
			return nil, false
		}
	}
	injected, echoes, leak, err := ss.s.rewrite(req, x.host, x.port, ss.upTLS)
	if err != nil {
		return nil, ss.refuse(x, http.StatusBadRequest, &refusal{reason: err.Error()})
	}
	if leak != "" {
		x.ev.Leak = true
		return nil, ss.refuse(x, http.StatusForbidden, &refusal{kind: refusedPolicy, reason: leak})
	}
	x.ev.Injected = injected
	return echoes, true
}

// send writes x's request upstream and reads the head of its response; !ok
// means it could not, its client answered.
func (ss *session) send(x *exchange, echoes []swap) (resp *http.Response, ok bool) {
	req := x.req
	// A kept-alive upstream connection may have been closed by the server
	// while idle; that is found only by using it. A request without a body
	// can be sent again on a new connection, once, as net/http's own
	// transport does, before anything of a response was read.
	bodyless := req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 && len(req.TransferEncoding) == 0
	retry := !ss.fixed && bodyless && ss.up != nil && ss.upKey == Hint(x.host, x.port)+" "+x.rule.String()
	if ref := ss.upstream(x.host, x.port, x.rule); ref != nil {
		code := http.StatusBadGateway
		if ref.kind == refusedPolicy {
			code = http.StatusForbidden
		}
		return nil, ss.refuse(x, code, ref)
	}
	x.ev.Allowed, x.ev.Rule = true, x.rule.String()

	x.clientClose = req.Close
	prepareRequest(req)
	x.sc = newScrubber(ss.s.ownCreds(x.host, x.port), nil, echoes...)
	if x.sc != nil {
		// A response from a host that holds a secret is scrubbed of it; it
		// must come in a coding the scrubber reads, and the connection
		// must stay HTTP.
		req.Header.Set("Accept-Encoding", "identity")
		req.Header.Del("Upgrade")
	}
	for {
		resp, err := ss.roundTrip(x)
		if err == nil {
			return resp, true
		}
		ss.close()
		if retry {
			retry = false
			if ref := ss.upstream(x.host, x.port, x.rule); ref == nil {
				continue
			}
		}
		x.ev.Allowed, x.ev.Reason = false, "upstream: "+upstreamErr(err, x.sc)
		return nil, ss.refuse(x, http.StatusBadGateway, &refusal{kind: refusedDial, reason: x.ev.Reason})
	}
}

// roundTrip writes x's request on the upstream connection and reads the
// head of the first response.
func (ss *session) roundTrip(x *exchange) (*http.Response, error) {
	out := &countWriter{w: ss.upBw}
	err := x.req.Write(out)
	if err == nil {
		err = ss.upBw.Flush()
	}
	x.ev.BytesOut = out.n
	if err != nil {
		return nil, err
	}
	return ss.readResponse(x.req)
}

// relay passes the responses to x's request on to the client, starting
// with resp: any informational ones, then the final one or a switch of
// protocols. It records the exchange, and reports whether the client
// connection may carry another request.
func (ss *session) relay(x *exchange, resp *http.Response) bool {
	in := &countWriter{w: ss.cbw}
	defer func() { x.ev.BytesIn = in.n; ss.s.emit(x.ev) }()
	var err error
	for {
		if resp == nil {
			resp, err = ss.readResponse(x.req)
		}
		if err != nil {
			ss.close()
			x.ev.Allowed, x.ev.Reason = false, "upstream: read response: "+upstreamErr(err, x.sc)
			if in.n == 0 {
				writeRefusal(ss.cbw, x.host, x.port, &refusal{kind: refusedDial, reason: x.ev.Reason})
			}
			return false
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if x.sc != nil {
				resp.Body.Close()
				ss.close()
				x.ev.Allowed, x.ev.Reason = false, "upstream switched protocols on a host with credentials"
				writeRefusal(ss.cbw, x.host, x.port, &refusal{kind: refusedDial, reason: x.ev.Reason})
				return false
			}
			return ss.upgrade(resp, in, &x.ev)
		}
		informational := resp.StatusCode >= 100 && resp.StatusCode < 200
		upClose := resp.Close
		closeAfter, ok := ss.respond(x, resp, in, informational)
		if !ok {
			return false
		}
		if informational {
			resp = nil
			continue
		}
		if upClose {
			ss.close()
		}
		return !closeAfter && !(ss.fixed && upClose)
	}
}

// respond writes one response to the client through in and flushes it. It
// reports whether the connection must close after it; !ok means the relay
// failed, the exchange ends.
func (ss *session) respond(x *exchange, resp *http.Response, in *countWriter, informational bool) (closeAfter, ok bool) {
	req, sc := x.req, x.sc
	upClose := resp.Close
	stripHopHeaders(resp.Header)
	// A body without length or chunking is delimited by the close of
	// the connection, and Response.Write announces that.
	closeAfter = x.clientClose || upClose || (!informational && resp.ContentLength < 0 && !isChunked(resp.TransferEncoding))
	resp.Close = closeAfter && !informational
	chunkOK := req.ProtoAtLeast(1, 1) && resp.ProtoAtLeast(1, 1)
	if sc != nil && !informational && !chunkOK {
		// No chunked framing for the scrubbed body: the close ends it.
		resp.Close, closeAfter = true, true
	}
	// Whether this response is still all in the buffer, for a failure
	// to be answered rather than cut; nothing else waits there, as
	// every earlier response was flushed.
	start, fresh := in.n, ss.cbw.Buffered() == 0
	var err error
	if sc != nil {
		err = writeScrubbed(in, resp, sc, req.Method == http.MethodHead, chunkOK)
		resp.Body.Close()
	} else if ss.spliceable(req, resp) {
		// The body is consumed behind net/http's back, so resp.Body
		// must not be closed: Close would try to drain it. Its head
		// is flushed first, and its writes bypass in.
		fresh = false
		err = ss.writeSpliced(resp, in)
	} else {
		err = resp.Write(in)
		resp.Body.Close()
	}
	if err != nil && in.err == nil && fresh && int64(ss.cbw.Buffered()) == in.n-start {
		ss.takeBack(x, in, start, err)
		return false, false
	}
	if err == nil {
		err = ss.cbw.Flush()
	}
	if err != nil {
		ss.close()
		x.ev.Reason = "relay: " + upstreamErr(err, sc)
		return false, false
	}
	return closeAfter, true
}

// takeBack answers a response that failed on the upstream's side (its
// body, a limit, a body that cannot be scrubbed) before any byte of it left:
// what of it sits in the client's buffer, from start, is dropped, and the
// client gets a 502 that says why instead of a cut.
func (ss *session) takeBack(x *exchange, in *countWriter, start int64, err error) {
	ss.close()
	ss.cbw.Reset(ss.client)
	in.n = start
	x.ev.Allowed = false
	if x.sc != nil {
		why := "could not be checked for echoed credentials: " + upstreamErr(err, x.sc)
		x.ev.Reason = "upstream: the response " + why
		writeStatus(ss.cbw, http.StatusBadGateway, "failed", "contextd egress: the response of "+Hint(x.host, x.port)+" "+why)
	} else {
		x.ev.Reason = "upstream: read response: " + upstreamErr(err, x.sc)
		writeRefusal(ss.cbw, x.host, x.port, &refusal{kind: refusedDial, reason: x.ev.Reason})
	}
}

// upstream makes ss.up a connection to host:port opened under rule,
// reusing the current one when it fits.
func (ss *session) upstream(host string, port int, rule Rule) *refusal {
	if ss.fixed {
		if ss.upFailed != "" {
			return &refusal{kind: refusedDial, reason: ss.upFailed}
		}
		return nil
	}
	key := Hint(host, port) + " " + rule.String()
	if ss.up != nil && ss.upKey == key {
		return nil
	}
	ss.close()
	c, _, ref := ss.s.open(ss.ctx, host, port, "")
	if ref != nil {
		return ref
	}
	ss.setUp(c, key)
	return nil
}

// startFixed sets up the upstream of an intercepted tunnel; a TLS upstream
// is verified here, and a failure is kept to answer every request with.
func (ss *session) startFixed(up net.Conn) {
	if !ss.upTLS {
		ss.setUp(up, "")
		return
	}
	tc := tls.Client(up, &tls.Config{
		ServerName: ss.host,
		RootCAs:    ss.s.o.RootCAs,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err := tc.HandshakeContext(ss.ctx); err != nil {
		ss.upFailed = "upstream tls: " + err.Error()
		return
	}
	ss.setUp(tc, "")
}

// upgrade relays a 101 response and then the bytes of the switched
// protocol (WebSocket) both ways until one side ends.
func (ss *session) upgrade(resp *http.Response, in *countWriter, ev *Event) bool {
	if err := resp.Write(in); err != nil || ss.cbw.Flush() != nil {
		return false
	}
	up := ss.up
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(up, ss.br)
		up.Close()
		ss.client.Close()
		done <- n
	}()
	n, _ := io.Copy(ss.client, ss.upBr)
	in.n += n
	up.Close()
	ss.client.Close()
	ev.BytesOut += <-done
	return false
}

// hopHeaders are meaningful for one connection only and never passed on.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// stripHopHeaders removes hop-by-hop headers and those the Connection
// header names, keeping an Upgrade request (WebSocket) intact.
func stripHopHeaders(h http.Header) {
	upgrade := ""
	for _, v := range h.Values("Connection") {
		for tok := range strings.SplitSeq(v, ",") {
			tok = textproto.TrimString(tok)
			if strings.EqualFold(tok, "upgrade") {
				upgrade = h.Get("Upgrade")
				continue
			}
			if tok != "" {
				h.Del(tok)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if upgrade != "" {
		h.Set("Connection", "Upgrade")
		h.Set("Upgrade", upgrade)
	}
}

// prepareRequest makes a request read from the client fit to be written
// upstream by Request.Write: origin-form, no hop-by-hop headers, and no
// User-Agent added that the client did not send.
func prepareRequest(req *http.Request) {
	stripHopHeaders(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""}
	}
	req.Close = false
	req.RequestURI = ""
}

func isChunked(te []string) bool {
	return len(te) > 0 && te[0] == "chunked"
}

// spliceMin is the body size from which a plain response is relayed by
// splicing the upstream socket into the client's instead of through
// net/http's body reader: a large download then costs the proxy no copies.
const spliceMin = 64 << 10

// spliceable reports whether resp's body can be relayed socket to socket:
// plain TCP on both sides and a body of known length.
func (ss *session) spliceable(req *http.Request, resp *http.Response) bool {
	if ss.upTLS || req.Method == http.MethodHead || resp.ContentLength < spliceMin || len(resp.TransferEncoding) > 0 {
		return false
	}
	_, upTCP := ss.up.(*net.TCPConn)
	_, clientTCP := ss.client.(*net.TCPConn)
	return upTCP && clientTCP
}

// writeSpliced writes resp's head as Response.Write would and then copies
// exactly ContentLength body bytes: what the upstream reader already holds,
// then the rest straight from the socket. The upstream reader is left
// positioned after the body, so the connection can be reused.
func (ss *session) writeSpliced(resp *http.Response, in *countWriter) error {
	text := strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" ")
	fmt.Fprintf(in, "HTTP/%d.%d %03d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.StatusCode, text)
	h := resp.Header.Clone()
	h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	if resp.Close {
		h.Set("Connection", "close")
	}
	if err := h.Write(in); err != nil {
		return err
	}
	io.WriteString(in, "\r\n") //nolint:errcheck // seen at the flush
	if err := ss.cbw.Flush(); err != nil {
		return err
	}
	remaining := resp.ContentLength
	if n := int64(ss.upBr.Buffered()); n > 0 {
		n = min(n, remaining)
		b, _ := ss.upBr.Peek(int(n))
		w, err := ss.client.Write(b)
		in.n += int64(w)
		if err != nil {
			return err
		}
		ss.upBr.Discard(int(n)) //nolint:errcheck // n bytes are buffered
		remaining -= n
	}
	n, err := io.CopyN(ss.client, ss.up, remaining)
	in.n += n
	return err
}

// sameAuthority reports whether a request's Host (or absolute target's
// authority) names the tunnel's host. Front ends route by the name; the
// port is left alone, since a forwarded service may be reached inside at
// another port than it has outside.
func (ss *session) sameAuthority(hp string) bool {
	h := hp
	if host, _, err := net.SplitHostPort(hp); err == nil {
		h = host
	} else if strings.HasPrefix(hp, "[") && strings.HasSuffix(hp, "]") {
		h = hp[1 : len(hp)-1]
	}
	n, err := checkHost(h)
	if err != nil {
		return false
	}
	// A host-loopback forward is reached inside the sandbox at a loopback
	// address, so its clients name that; where it goes is fixed by the
	// configuration, not by what the request names.
	if ss.via == "forward" && isLoopbackName(n) {
		return true
	}
	return n == ss.host
}

// isLoopbackName says whether a checked host names the loopback.
func isLoopbackName(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// upstreamErr is an upstream's failure as the client and the records get it.
// Parsers quote the line that broke them (net/http's "malformed MIME header
// line"), and that line is the upstream's to choose: for a host that holds a
// credential (sc) it may echo the secret, so it is scrubbed like the body.
func upstreamErr(err error, sc *scrubber) string {
	if sc == nil {
		return shortErr(err)
	}
	return sc.scrubString(shortErr(err))
}
