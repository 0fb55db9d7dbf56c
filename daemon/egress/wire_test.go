package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests attack the wire: what the upstream server receives (its own
// record, on the host side) and the raw bytes the sandbox's side of the
// proxy gets back, never a scrubbed or parsed summary.

// upstreamLog is what a test upstream received: every request as it came
// off the wire, and how many bytes each connection carried.
type upstreamLog struct {
	mu    sync.Mutex
	reqs  []string // raw head and body of each request
	conns []int64  // bytes read per finished connection
	done  chan struct{}
}

func (l *upstreamLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// echoUpstream is a raw HTTP/1.1 server (TLS when cfg is set) that answers
// each request by echoing its Authorization header everywhere a server can:
// status text, Location, a CORS header, a header name, and a body framed as
// the path asks: /chunked (tiny chunks, the secret split across them),
// /length, /close (delimited by close), /gzip, /br (a coding the proxy
// cannot read), /big (megabytes with the echo at a chunk boundary).
func echoUpstream(t *testing.T, cfg *tls.Config) (*upstreamLog, int) {
	t.Helper()
	l := &upstreamLog{done: make(chan struct{}, 100)}
	return l, rawServer(t, func(c net.Conn) { l.serve(c, cfg) })
}

func (l *upstreamLog) serve(raw net.Conn, cfg *tls.Config) {
	cr := &countReader{r: raw}
	var c net.Conn = &readCounted{Conn: raw, r: cr}
	defer func() {
		raw.Close()
		l.mu.Lock()
		l.conns = append(l.conns, cr.n)
		l.mu.Unlock()
		l.done <- struct{}{}
	}()
	if cfg != nil {
		tc := tls.Server(c, cfg)
		if tc.Handshake() != nil {
			return
		}
		c = tc
	}
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		var head bytes.Buffer
		req.Write(&head) //nolint:errcheck // a bytes.Buffer
		l.mu.Lock()
		l.reqs = append(l.reqs, fmt.Sprintf("%s %s\n%s\n%s", req.Method, req.RequestURI, head.String(), body))
		l.mu.Unlock()
		echo := req.Header.Get("Authorization")
		if echo == "" {
			echo = req.Header.Get("X-Api-Key")
		}
		writeEcho(c, req.URL.Path, echo)
		if req.Close || req.URL.Path == "/close" {
			return
		}
	}
}

// echoBody is the body every echo carries: the value as is, percent-encoded
// (as a query would), and once more at the end.
func echoBody(echo string) string {
	return "error: bad token " + echo + "\nnext=" + url.QueryEscape(echo) + "\n" + strings.Repeat("-", 100) + echo
}

func writeEcho(w io.Writer, path, echo string) {
	head := fmt.Sprintf("HTTP/1.1 401 token %s refused\r\nLocation: /login?t=%s\r\nAccess-Control-Allow-Headers: authorization, x-%s\r\nX-Echo-%s: 1\r\n",
		echo, url.QueryEscape(echo), echo, strings.NewReplacer(" ", "-", "+", "-", "/", "-", "=", "-").Replace(echo))
	body := echoBody(echo)
	switch path {
	case "/chunked":
		fmt.Fprintf(w, "%sTransfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n", head)
		for i := 0; i < len(body); i += 3 {
			part := body[i:min(i+3, len(body))]
			fmt.Fprintf(w, "%x\r\n%s\r\n", len(part), part)
		}
		fmt.Fprintf(w, "0\r\nX-Trailer: %s\r\n\r\n", echo)
	case "/badtrailer":
		// A trailer line without a colon: the parser's error quotes it.
		fmt.Fprintf(w, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\nBearer %s\r\n\r\n", head, len(body), body, echo)
	case "/badheader":
		// A header line without a colon, likewise quoted by the parser.
		fmt.Fprintf(w, "HTTP/1.1 401 refused\r\nBearer %s\r\nContent-Length: 0\r\n\r\n", echo)
	case "/close":
		fmt.Fprintf(w, "%sConnection: close\r\n\r\n%s", head, body)
	case "/gzip", "/br":
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		io.WriteString(zw, body)
		zw.Close()
		fmt.Fprintf(w, "%sContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n%s", head, path[1:], z.Len(), z.Bytes())
	case "/big":
		big := strings.Repeat("x", 3<<20-len(echo)/2) + echo + strings.Repeat("y", 1<<20)
		fmt.Fprintf(w, "%sContent-Length: %d\r\n\r\n%s", head, len(big), big)
	case "/notgzip":
		fmt.Fprintf(w, "%sContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", head, len(body), body)
	case "/badsum", "/bigbadsum":
		// Good gzip but for its checksum, found wrong only at the end.
		if path == "/bigbadsum" {
			body = strings.Repeat("x", 4<<20) + body
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		io.WriteString(zw, body)
		zw.Close()
		gz := z.Bytes()
		gz[len(gz)-8] ^= 0xff
		fmt.Fprintf(w, "%sContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", head, len(gz), gz)
	default:
		fmt.Fprintf(w, "%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type readCounted struct {
	net.Conn
	r *countReader
}

func (c *readCounted) Read(p []byte) (int, error) { return c.r.Read(p) }

// leaks lists the spellings of secret found in b.
func leaks(b []byte, secret string) []string {
	var out []string
	for _, f := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), escapeAll(secret)} {
		if bytes.Contains(b, []byte(f)) {
			out = append(out, f)
		}
	}
	return out
}

// wireSetup is a proxy with one credential for registry.test on the echo
// upstream's port, plain HTTP or TLS.
type wireSetup struct {
	p     *testProxy
	log   *upstreamLog
	port  int
	ca    *CA
	creds []Credential
}

func setupWire(t *testing.T, useTLS bool, creds ...Credential) *wireSetup {
	t.Helper()
	ws := &wireSetup{ca: newCA(t)}
	var cfg *tls.Config
	var roots *x509.CertPool
	if useTLS {
		// The upstream's certificate, from a CA of the test's own.
		srv, pool := tlsUpstream(t, http.NotFoundHandler(), nil, "registry.test")
		cfg = srv.TLS
		roots = pool
	}
	ws.log, ws.port = echoUpstream(t, cfg)
	for i := range creds {
		if creds[i].Port == -1 {
			creds[i].Port = ws.port
		}
	}
	ws.creds = creds
	ws.p = startProxy(t, Options{
		Policy:      Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("registry.test:%d", ws.port))}},
		Credentials: creds,
		CA:          ws.ca,
		RootCAs:     roots,
		Resolver:    resolver(map[string]string{"registry.test": "127.0.0.1"}),
	})
	return ws
}

// exchange sends one request (head without Host, then body) to
// registry.test through the proxy, over an intercepted TLS tunnel when
// useTLS, as an absolute-form plain request otherwise, and returns the raw
// bytes that came back until the connection closed.
func (ws *wireSetup) exchange(t *testing.T, useTLS bool, method, target, headers, body string) []byte {
	t.Helper()
	authority := fmt.Sprintf("registry.test:%d", ws.port)
	c, err := net.Dial("tcp", ws.p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var conn io.ReadWriter = c
	if useTLS {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "registry.test", RootCAs: caPool(ws.ca)})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		conn = tc
	} else {
		target = "http://" + authority + target
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, target, authority, headers, len(body), body)
	got, _ := io.ReadAll(conn)
	return got
}

// An upstream that echoes the secret it was sent (status text, Location,
// CORS and other headers, header names, trailers, a body of any framing
// and size) never hands it back: what reaches the client's socket holds
// the placeholder instead, and the body is otherwise intact.
func TestEchoedSecretScrubbed(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			ws := setupWire(t, useTLS, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1, Cleartext: !useTLS})
			for _, path := range []string{"/length", "/chunked", "/close", "/gzip", "/big"} {
				got := ws.exchange(t, useTLS, "GET", path, "Authorization: Bearer "+placeholder+"\r\n", "")
				reqs := ws.log.requests()
				if last := reqs[len(reqs)-1]; !strings.Contains(last, "Authorization: Bearer "+secret+"\r\n") {
					t.Fatalf("%s: the upstream did not get the secret: %q", path, last)
				}
				if l := leaks(got, secret); l != nil {
					t.Errorf("%s: the client got the secret back as %q", path, l)
				}
				resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
				if err != nil {
					t.Fatalf("%s: %v in %q", path, err, got[:min(len(got), 300)])
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("%s: body: %v", path, err)
				}
				want := echoBody("Bearer " + placeholder)
				if path == "/big" {
					want = strings.Repeat("x", 3<<20-len("Bearer "+secret)/2) + "Bearer " + placeholder + strings.Repeat("y", 1<<20)
				}
				if string(b) != want {
					t.Errorf("%s: body %d bytes, want %d: %.200q", path, len(b), len(want), b)
				}
				if !strings.Contains(resp.Status, placeholder) || !strings.Contains(resp.Header.Get("Location"), url.QueryEscape("Bearer "+placeholder)) {
					t.Errorf("%s: status %q, Location %q", path, resp.Status, resp.Header.Get("Location"))
				}
				if path == "/chunked" && resp.Trailer.Get("X-Trailer") != "Bearer "+placeholder {
					t.Errorf("trailer %q in %q", resp.Trailer, got[max(0, len(got)-200):])
				}
			}
			// A coding the proxy cannot read is refused, not passed.
			got := ws.exchange(t, useTLS, "GET", "/br", "Authorization: Bearer "+placeholder+"\r\n", "")
			if l := leaks(got, secret); l != nil || !bytes.HasPrefix(got, []byte("HTTP/1.1 502 ")) || !bytes.Contains(got, []byte(`content coding "br"`)) {
				t.Errorf("/br: %q", got)
			}
		})
	}
}

// A response from a credential's host that cannot be checked for the
// secret (its gzip body does not decode) is answered 502 with the reason,
// and the event says it, as long as nothing of it reached the client yet;
// once part of the body did, the connection is cut and the body ends short.
func TestUncheckedResponseRefused(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			ws := setupWire(t, useTLS, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1, Cleartext: !useTLS})
			auth := "Authorization: Bearer " + placeholder + "\r\n"
			for _, tc := range []struct{ path, want string }{
				{"/notgzip", "gzip: invalid header"},
				{"/badsum", "gzip: invalid checksum"},
				{"/br", `content coding "br"`},
			} {
				got := ws.exchange(t, useTLS, "GET", tc.path, auth, "")
				want := fmt.Sprintf("contextd egress: the response of registry.test:%d could not be checked for echoed credentials: %s", ws.port, tc.want)
				if l := leaks(got, secret); l != nil || !bytes.HasPrefix(got, []byte("HTTP/1.1 502 ")) || !bytes.Contains(got, []byte(want)) {
					t.Errorf("%s: want a 502 saying %q, got %q", tc.path, want, got[:min(len(got), 400)])
				}
				if ev := ws.requestEvent(t); ev.Allowed || !strings.Contains(ev.Reason, "could not be checked for echoed credentials: "+tc.want) {
					t.Errorf("%s: event %+v", tc.path, ev)
				}
			}
			got := ws.exchange(t, useTLS, "GET", "/bigbadsum", auth, "")
			if l := leaks(got, secret); l != nil {
				t.Errorf("/bigbadsum: the client got the secret back as %q", l)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
			if err != nil || resp.StatusCode != 401 {
				t.Fatalf("/bigbadsum: %v %v in %q", resp, err, got[:min(len(got), 300)])
			}
			if b, err := io.ReadAll(resp.Body); err == nil {
				t.Errorf("/bigbadsum: a body of %d bytes that ended cleanly", len(b))
			}
			if ev := ws.requestEvent(t); !strings.Contains(ev.Reason, "gzip: invalid checksum") {
				t.Errorf("/bigbadsum: event %+v", ev)
			}
		})
	}
}

// A response that cannot be parsed, whose parser's error quotes the line
// that broke it, gives the client and the records that line scrubbed: an
// upstream echoing the secret into a malformed trailer or header line gets
// it back to neither the sandbox nor the audit log.
func TestMalformedEchoScrubbed(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			ws := setupWire(t, useTLS, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1, Cleartext: !useTLS})
			auth := "Authorization: Bearer " + placeholder + "\r\n"
			for _, path := range []string{"/badtrailer", "/badheader"} {
				got := ws.exchange(t, useTLS, "GET", path, auth, "")
				if l := leaks(got, secret); l != nil {
					t.Errorf("%s: the client got the secret back as %q in %q", path, l, got[:min(len(got), 400)])
				}
				if !bytes.HasPrefix(got, []byte("HTTP/1.1 502 ")) {
					t.Errorf("%s: want a 502, got %q", path, got[:min(len(got), 300)])
				}
				ev := ws.requestEvent(t)
				if l := leaks([]byte(ev.Reason), secret); l != nil || ev.Allowed {
					t.Errorf("%s: the event's reason holds the secret as %q: %+v", path, l, ev)
				}
			}
		})
	}
}

// requestEvent is the event of the request just made; a tunnel's own
// events are skipped. It waits for it (bounded): the connection's close and
// the event need not come in either order.
func (ws *wireSetup) requestEvent(t *testing.T) Event {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		select {
		case ev := <-ws.p.events:
			if ev.Method != "" {
				return ev
			}
		case <-limit:
			t.Fatal("no event for the request in 30 s")
			return Event{}
		}
	}
}

// The secret goes only where the credential is sent: its header. A
// placeholder in the target, another header or the body reaches the
// upstream as the placeholder, unless the credential opts in.
func TestSubstituteOnlyWhereItBelongs(t *testing.T) {
	const q = "?token=" + placeholder + "&x=1"
	heads := "Authorization: Bearer " + placeholder + "\r\nX-Api-Key: " + placeholder + "\r\nX-Other: " + placeholder + "\r\n"
	body := "token=" + placeholder
	for _, tc := range []struct {
		name             string
		cred             Credential
		inAuth, inAPIKey bool
		inTarget, inBody bool
	}{
		{"default", Credential{}, true, false, false, false},
		{"header", Credential{Header: "x-api-key"}, false, true, false, false},
		{"target+body", Credential{InTarget: true, InBody: true}, true, false, true, true},
	} {
		for _, useTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", tc.name, useTLS), func(t *testing.T) {
				cred := tc.cred
				cred.Placeholder, cred.Secret, cred.Host, cred.Port, cred.Cleartext = placeholder, secret, "registry.test", -1, !useTLS
				ws := setupWire(t, useTLS, cred)
				ws.exchange(t, useTLS, "POST", "/x"+q, heads, body)
				reqs := ws.log.requests()
				if len(reqs) != 1 {
					t.Fatalf("upstream got %d requests", len(reqs))
				}
				r := reqs[0]
				check := func(what string, want bool, secretForm, phForm string) {
					t.Helper()
					if want && !strings.Contains(r, secretForm) || !want && !strings.Contains(r, phForm) {
						t.Errorf("%s: want secret=%v; upstream got %q", what, want, r)
					}
				}
				check("Authorization", tc.inAuth, "Authorization: Bearer "+secret+"\r\n", "Authorization: Bearer "+placeholder+"\r\n")
				check("X-Api-Key", tc.inAPIKey, "X-Api-Key: "+secret+"\r\n", "X-Api-Key: "+placeholder+"\r\n")
				check("target", tc.inTarget, "?token="+escapeAll(secret)+"&x=1", "?token="+placeholder+"&x=1")
				check("body", tc.inBody, "\ntoken="+secret, "\ntoken="+placeholder)
				if !strings.Contains(r, "X-Other: "+placeholder+"\r\n") {
					t.Errorf("X-Other changed: %q", r)
				}
			})
		}
	}
}

// A credential without an http:// origin is never put on the wire in
// clear: not into plain HTTP inside a CONNECT to its TLS port, not into a
// plain proxy request; and without a port it belongs to 443 only.
func TestNoSecretInClear(t *testing.T) {
	auth := "Authorization: Bearer " + placeholder + "\r\n"
	t.Run("plain-inside-connect", func(t *testing.T) {
		ws := setupWire(t, false, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1})
		c, err := net.Dial("tcp", ws.p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		a := fmt.Sprintf("registry.test:%d", ws.port)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /length HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", a, a, a, auth)
		got, _ := io.ReadAll(c)
		for _, r := range ws.log.requests() {
			if strings.Contains(r, secret) {
				t.Fatalf("the secret went out in clear: %q", r)
			}
		}
		if !bytes.Contains(got, []byte("sent only over TLS")) {
			t.Errorf("client got %q", got)
		}
	})
	t.Run("portless-plain", func(t *testing.T) {
		ws := setupWire(t, false, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test"})
		got := ws.exchange(t, false, "GET", "/length", auth, "")
		for _, r := range ws.log.requests() {
			if strings.Contains(r, secret) {
				t.Fatalf("a port-less credential went to port %d in clear: %q", ws.port, r)
			}
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 403 ")) {
			t.Errorf("client got %q", got)
		}
	})
}

// Inside an intercepted tunnel every request must name the tunnel's host in
// its Host header (an absolute target is checked the same way).
func TestInterceptedHostMustMatch(t *testing.T) {
	ws := setupWire(t, true, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1})
	for _, h := range []string{"Host: evil.test\r\n", "Host: evil.test:443\r\n", "Host: registry.test.evil.test\r\n"} {
		c, err := net.Dial("tcp", ws.p.addr)
		if err != nil {
			t.Fatal(err)
		}
		a := fmt.Sprintf("registry.test:%d", ws.port)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", a, a)
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "registry.test", RootCAs: caPool(ws.ca)})
		fmt.Fprintf(tc, "GET /length HTTP/1.1\r\n%sAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", h, placeholder)
		got, _ := io.ReadAll(tc)
		c.Close()
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 400 ")) {
			t.Errorf("%q: got %q", h, got)
		}
	}
	if r := ws.log.requests(); len(r) != 0 {
		t.Errorf("the upstream got %q", r)
	}
}

// An echoed "Authorization: Basic" does not hand the secret back in base64:
// the value the proxy re-encoded with the secret comes back as the one the
// client sent, with the placeholder.
func TestEchoedBasicScrubbed(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			ws := setupWire(t, useTLS, Credential{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: -1, Cleartext: !useTLS})
			sent := base64.StdEncoding.EncodeToString([]byte("ci-user:" + placeholder))
			real := base64.StdEncoding.EncodeToString([]byte("ci-user:" + secret))
			got := ws.exchange(t, useTLS, "GET", "/length", "Authorization: Basic "+sent+"\r\n", "")
			reqs := ws.log.requests()
			if last := reqs[len(reqs)-1]; !strings.Contains(last, "Authorization: Basic "+real+"\r\n") {
				t.Fatalf("the upstream did not get the secret: %q", last)
			}
			if bytes.Contains(got, []byte(strings.TrimRight(real, "="))) {
				t.Errorf("the client got the secret back in base64: %q", got)
			}
			if !bytes.Contains(got, []byte(sent)) {
				t.Errorf("the echo does not carry what the client sent: %q", got)
			}
		})
	}
}
