package egress

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
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
		s.rewrite(req, host, port, false) //nolint:errcheck // must not panic, result irrelevant here
	})
}
