package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"registry.npmjs.org:443 GET,HEAD", "*.github.com", "[::1]:8080", "10.0.0.5:5432", "::1",
		"*", "*.", "a:0", "[::ffff:1.2.3.4]:1", "EXAMPLE.com.:65535 post", "a b c", "[fe80::1%25x]:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s, "fuzz")
		if err != nil {
			return
		}
		if r.Host == "" || r.Host == "*" || strings.ContainsAny(r.Host, " \t\r\n") || r.Port < 0 || r.Port > 65535 {
			t.Fatalf("ParseRule(%q) accepted %+v", s, r)
		}
		back, err := ParseRule(r.String(), "fuzz")
		if err != nil {
			t.Fatalf("ParseRule(%q).String() = %q does not parse: %v", s, r.String(), err)
		}
		if back.Host != r.Host || back.Port != r.Port || !slices.Equal(back.Methods, r.Methods) {
			t.Fatalf("round trip of %q: %+v then %+v", s, r, back)
		}
	})
}

func FuzzSOCKS5Greeting(f *testing.F) {
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50"))
	f.Add([]byte("\x05\x02\x02\x00\x05\x01\x00\x03\x0bexample.com\x01\xbb"))
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x1f\x90"))
	f.Add([]byte("\x05\x01\x02"))
	f.Add([]byte("\x05\x00"))
	f.Add([]byte("\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50"))
	f.Add([]byte("\x05\x01\x00\x05\x01\x00\x03\x00\x00\x50"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		ok, err := readSOCKSGreeting(r)
		if err != nil || !ok {
			return
		}
		if data[0] != 5 || data[1] == 0 || bytes.IndexByte(data[2:2+int(data[1])], 0) < 0 {
			t.Fatalf("greeting %q accepted", data)
		}
		rest := data[2+int(data[1]):]
		req, err := readSOCKSRequest(r)
		if err != nil {
			return
		}
		if rest[0] != 5 || rest[1] != socksCmdConnect || rest[2] != 0 {
			t.Fatalf("request %q accepted", rest)
		}
		if req.port < 1 || req.port > 65535 {
			t.Fatalf("port %d accepted", req.port)
		}
		if h, err := checkHost(req.host); err != nil || h != req.host {
			t.Fatalf("host %q accepted (%v)", req.host, err)
		}
		if rest[3] == socksAtypDomain && strings.ToLower(strings.TrimSuffix(string(rest[5:5+int(rest[4])]), ".")) != req.host {
			if _, err := net.ResolveIPAddr("ip", req.host); err != nil { // an IP literal in a domain field is canonicalized
				t.Fatalf("name %q became %q", rest[5:5+int(rest[4])], req.host)
			}
		}
	})
}

func FuzzConnectTarget(f *testing.F) {
	for _, s := range []string{
		"example.com:443", "[::1]:8080", "127.0.0.1:80", "example.com", "[example.com]:443", ":443",
		"a:0", "a:65536", "::1:80", "[fe80::1%eth0]:443", "Example.COM.:443", "a b:1", "[::ffff:10.0.0.1]:22",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := parseConnectTarget(s)
		if err != nil {
			return
		}
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			t.Fatalf("%q accepted but SplitHostPort fails: %v", s, err)
		}
		if normalizeHost(h) != host || strconv.Itoa(port) != strings.TrimLeft(p, "0") {
			t.Fatalf("%q: got %q %d, SplitHostPort %q %q", s, host, port, h, p)
		}
		if port < 1 || port > 65535 || host == "" || strings.ContainsAny(host, " /@%[]") {
			t.Fatalf("%q: accepted %q %d", s, host, port)
		}
		h2, p2, err := parseConnectTarget(net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil || h2 != host || p2 != port {
			t.Fatalf("%q: re-parse of normalized target: %q %d %v", s, h2, p2, err)
		}
	})
}

func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://api.example.com:8080/x?y=z HTTP/1.1\r\nHost: other\r\n\r\n",
		"POST http://127.0.0.1:8080/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"GET http://127.0.0.1:8080/ HTTP/1.1\r\nAuthorization: Bearer [REDACTED:contextd-config-credential:3]\r\n\r\n",
		"GET http://[::1]:80/ HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET https://example.com/ HTTP/1.1\r\n\r\n",
		"GET http://EXAMPLE.com.:80/%5BREDACTED:contextd-config-credential:3%5D HTTP/1.1\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
		"GET http://user:pass@example.com/ HTTP/1.1\r\nAuthorization: Basic dTpbUkVEQUNURUQ6Y29udGV4dGQtY29uZmlnLWNyZWRlbnRpYWw6M10=\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	s := NewServer(Options{
		Policy: Policy{Rules: []Rule{
			{Host: "example.com"}, {Host: "*.example.com", Port: 8080}, {Host: "127.0.0.1", Port: 8080, Methods: []string{"GET"}}, {Host: "::1"},
		}},
		Credentials: []Credential{{Placeholder: placeholder, Secret: secret, Host: "example.com"}},
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if req.Method == http.MethodConnect {
			parseConnectTarget(req.RequestURI)
			return
		}
		ss := newSession(context.Background(), s, "http", nil, nil)
		var ev Event
		host, port, _, ref, _ := ss.admit(req, &ev)
		if ref != nil {
			return
		}
		u, err := url.Parse(req.RequestURI)
		if err != nil {
			t.Fatalf("accepted %q that net/url does not parse: %v", req.RequestURI, err)
		}
		wantPort := 80
		if u.Port() != "" {
			wantPort, _ = strconv.Atoi(u.Port())
		}
		if host != normalizeHost(u.Hostname()) || port != wantPort {
			t.Fatalf("decided %q:%d for %q; net/url says %q:%d", host, port, req.RequestURI, u.Hostname(), wantPort)
		}
		if _, ok := s.o.Policy.Allow(host, port, req.Method); !ok {
			t.Fatalf("admitted %s %s:%d that the policy refuses", req.Method, host, port)
		}
		// The rewrite's result: a request to example.com:80 in clear gets
		// no secret (the credential is https-only, port 443), and one to
		// any other host gets the secret nowhere; a placeholder of
		// example.com's credential sent elsewhere is refused.
		n, _, leak, err := s.rewrite(req, host, port, false)
		if err != nil {
			return
		}
		var out bytes.Buffer
		req.Write(&out) //nolint:errcheck // a bytes.Buffer
		if n != 0 || bytes.Contains(out.Bytes(), []byte(secret)) && !bytes.Contains(data, []byte(secret)) {
			t.Fatalf("secret put into a cleartext request to %s:%d (%d substitutions): %q", host, port, n, out.Bytes())
		}
		if leak == "" && bytes.Contains(out.Bytes(), []byte(placeholder)) && host != "example.com" {
			t.Fatalf("placeholder of example.com's credential passed to %s: %q", host, out.Bytes())
		}
		// Over TLS to example.com:443, the secret goes into Authorization
		// only, and only where the placeholder was.
		req2, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil || host != "example.com" {
			return
		}
		auth := slices.Clone(req2.Header.Values("Authorization"))
		n, _, leak, err = s.rewrite(req2, "example.com", 443, true)
		if err != nil || leak != "" {
			return
		}
		want := 0
		for _, v := range auth {
			want += strings.Count(v, placeholder)
			if dec, ok := decodeBasic(v); ok {
				want += strings.Count(dec, placeholder)
			}
		}
		if n != want {
			t.Fatalf("%d substitutions, want %d (placeholders in Authorization) in %q", n, want, data)
		}
		req2.Header.Del("Authorization")
		out.Reset()
		req2.Write(&out) //nolint:errcheck // a bytes.Buffer
		if bytes.Contains(out.Bytes(), []byte(secret)) && !bytes.Contains(data, []byte(secret)) {
			t.Fatalf("secret outside Authorization: %q", out.Bytes())
		}
	})
}

// FuzzScrubber feeds a stream holding several secrets (one a prefix of
// another, sharing starts, split anywhere) through the scrubber in pieces
// the fuzzer chooses: no secret may come out, the result must not depend
// on the pieces, and text without secrets must come out unchanged.
func FuzzScrubber(f *testing.F) {
	f.Add([]byte("a tok tokXYZ tok%2B tokXtok"), []byte{1, 2, 3, 250}, "tok", "tokXYZ")
	f.Add([]byte("xxtoXYZWtoXY"), []byte{5, 1}, "toXYZW", "XY")
	f.Add([]byte("\r\n3\r\nsec\r\n3\r\nret\r\n"), []byte{2}, "secret", "s")
	f.Add([]byte("npm_s3cr3t+/=token npm_s3cr3t%2B%2F%3Dtoken"), []byte{7, 9}, "npm_s3cr3t+/=token", "npm_s3cr3t")
	f.Fuzz(func(t *testing.T, data, cuts []byte, s1, s2 string) {
		var creds []*Credential
		for i, s := range []string{s1, s2} {
			if s == "" || len(s) > 64 || strings.ContainsAny(s, "[]") || strings.Contains("[P0][P1]%5BP0%5D%5BP1%5D", s) {
				continue
			}
			creds = append(creds, &Credential{Secret: s, Placeholder: fmt.Sprintf("[P%d]", i)})
		}
		var whole bytes.Buffer
		sc := newScrubber(creds, &whole)
		if sc == nil {
			return
		}
		sc.Write(data) //nolint:errcheck // a bytes.Buffer
		sc.Close()     //nolint:errcheck // a bytes.Buffer
		var pieces bytes.Buffer
		sc2 := newScrubber(creds, &pieces)
		rest := data
		for _, c := range cuts {
			k := min(int(c), len(rest))
			sc2.Write(rest[:k]) //nolint:errcheck // a bytes.Buffer
			rest = rest[k:]
		}
		sc2.Write(rest) //nolint:errcheck // a bytes.Buffer
		sc2.Close()     //nolint:errcheck // a bytes.Buffer
		if !bytes.Equal(whole.Bytes(), pieces.Bytes()) {
			t.Fatalf("pieces %v change the result: %q vs %q", cuts, whole.Bytes(), pieces.Bytes())
		}
		for _, c := range creds {
			for _, f := range secretForms(c) {
				if bytes.Contains(whole.Bytes(), f.from) {
					t.Fatalf("%q survived in %q", f.from, whole.Bytes())
				}
			}
		}
		hasAny := false
		for _, s := range sc.swaps {
			hasAny = hasAny || bytes.Contains(data, s.from)
		}
		if !hasAny && !bytes.Equal(whole.Bytes(), data) {
			t.Fatalf("changed text without secrets: %q -> %q", data, whole.Bytes())
		}
		if got := sc.scrubString(string(data)); got != whole.String() {
			t.Fatalf("scrubString %q, stream %q", got, whole.Bytes())
		}
	})
}

// FuzzScrubbedResponse relays a response read off the wire through the
// scrubber, as the proxy does, and reads back what the client would get:
// it must parse, hold no secret anywhere, and carry the body with the
// secret replaced.
func FuzzScrubbedResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 401 bad sekret\r\nLocation: /x?t=sekret\r\nContent-Length: 10\r\n\r\nab sekret!"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3\r\nsek\r\n3\r\nret\r\n0\r\nX-T: sekret\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\nX-sekret: 1\r\n\r\nsekretsekret"))
	f.Add([]byte("HTTP/1.1 204 sekret\r\n\r\n"))
	cred := &Credential{Secret: "sekret", Placeholder: "[PH]"}
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), nil)
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		stripHopHeaders(resp.Header)
		chunkOK := resp.ProtoAtLeast(1, 1)
		resp.Close = resp.Close || !chunkOK
		var out bytes.Buffer
		if err := writeScrubbed(&out, resp, newScrubber([]*Credential{cred}, nil), false, chunkOK); err != nil {
			return
		}
		if bytes.Contains(out.Bytes(), []byte("sekret")) {
			t.Fatalf("secret came through: %q", out.Bytes())
		}
		back, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out.Bytes())), nil)
		if err != nil {
			t.Fatalf("relayed response does not parse: %v: %q", err, out.Bytes())
		}
		got, err := io.ReadAll(back.Body)
		if err != nil {
			t.Fatalf("relayed body: %v: %q", err, out.Bytes())
		}
		if resp.Header.Get("Content-Encoding") == "" && string(got) != strings.ReplaceAll(string(body), "sekret", "[PH]") && back.StatusCode >= 200 {
			t.Fatalf("body %q became %q", body, got)
		}
	})
}

// FuzzClientHello checks the ClientHello reader against Go's own TLS
// server: when both read a hello, they must agree on the server name, and
// the reader never consumes the bytes it judged.
func FuzzClientHello(f *testing.F) {
	good := realHello(f, "registry.test")
	f.Add(good)
	f.Add(splitRecords(good, 100))
	f.Add(realHello(f, ""))
	f.Add(withExtension(f, good, extECH, []byte{1, 2}))
	f.Add(withExtension(f, good, extServerName, []byte{0, 5, 0, 0, 2, 'a', 'b'}))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16<<10)
		h, err := peekHello(br)
		if b, _ := br.Peek(min(len(data), br.Buffered())); !bytes.Equal(b, data[:len(b)]) {
			t.Fatal("bytes consumed or changed")
		}
		if err != nil {
			return
		}
		var goName string
		var goSaw bool
		srv := tls.Server(&replayConn{r: bytes.NewReader(data)}, &tls.Config{
			GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
				goName, goSaw = chi.ServerName, true
				return nil, errors.New("seen")
			},
		})
		srv.Handshake() //nolint:errcheck // stops at GetConfigForClient
		if goSaw && !h.ech && normalizeHost(goName) != normalizeHost(h.sni) {
			t.Fatalf("server name %q, Go's TLS says %q", h.sni, goName)
		}
	})
}

// replayConn serves a fixed byte stream to a TLS server and drops what it
// writes.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *replayConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *replayConn) Close() error                     { return nil }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

func FuzzCredentialTarget(f *testing.F) {
	for _, s := range []string{"api.github.com", "http://localhost:4873", "https://api.example.com:8443/ header=X-Api-Key url body",
		"*.example.com", "ftp://x", "a header=", "[::1]:80", "http://[::1] body", "h x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCredentialTarget(s)
		if err != nil {
			return
		}
		if c.Host == "" || strings.HasPrefix(c.Host, "*") || c.Port < 0 || c.Port > 65535 || strings.ContainsAny(c.Host, " /:") && !strings.Contains(c.Host, "::") && strings.Count(c.Host, ":") < 2 {
			t.Fatalf("%q accepted as %+v", s, c)
		}
		if c.Cleartext != strings.HasPrefix(strings.TrimSpace(s), "http://") {
			t.Fatalf("%q: cleartext %v", s, c.Cleartext)
		}
		if c.Header != "" && !validHeaderName(c.Header) {
			t.Fatalf("%q: header %q", s, c.Header)
		}
	})
}
