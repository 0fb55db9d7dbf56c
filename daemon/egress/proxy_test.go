package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	placeholder = "[REDACTED:contextd-config-credential:3]"
	secret      = "npm_s3cr3t+/=token"
	// otherPlaceholder belongs to other.test on a port nothing listens on,
	// so other.test's own tunnels stay opaque.
	otherPlaceholder = "[REDACTED:contextd-config-credential:4]"
)

// echoLog is what an upstream received, kept on the host side: a test
// asserts on it, not on the response the proxy scrubbed.
type echoLog struct {
	n    atomic.Int32
	mu   sync.Mutex
	seen []string
}

func (l *echoLog) hits() int32 { return l.n.Load() }

// last is the echo text of the last request received.
func (l *echoLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) == 0 {
		return ""
	}
	return l.seen[len(l.seen)-1]
}

// echoHandler answers with what the proxy let through: the Authorization
// header, the decoded Basic password, the token query parameter and the
// body; log, if set, keeps the same text.
func echoHandler(log *echoLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", fmt.Sprint(len(bigBody())))
			w.Write(bigBody())
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, pass, _ := r.BasicAuth()
		echo := fmt.Sprintf("auth=%s\npass=%s\ntoken=%s\nlen=%d\nbody=%s\nua=%q\nproxyconn=%q",
			r.Header.Get("Authorization"), pass, r.URL.Query().Get("token"), r.ContentLength, body,
			r.Header.Get("User-Agent"), r.Header.Get("Proxy-Connection"))
		if log != nil {
			log.mu.Lock()
			log.seen = append(log.seen, echo)
			log.mu.Unlock()
			log.n.Add(1)
		}
		io.WriteString(w, echo)
	})
}

func get(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func newReq(t *testing.T, method, url string, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestPlainHTTP(t *testing.T) {
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d GET,POST,HEAD", port))}}})
	c, tr := p.client(nil)
	defer tr.CloseIdleConnections()

	for i := range 3 { // keep-alive: the same client connection carries all three
		resp, body := get(t, c, newReq(t, "POST", up.URL+"/x", "hello"))
		if resp.StatusCode != 200 || !strings.Contains(body, "body=hello") || !strings.Contains(body, `proxyconn=""`) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		ev := p.event(t)
		if !ev.Allowed || ev.Via != "http" || ev.Method != "POST" || ev.Host != "127.0.0.1" || ev.Port != port ||
			ev.Rule != fmt.Sprintf("127.0.0.1:%d GET,POST,HEAD", port) || ev.BytesOut == 0 || ev.BytesIn == 0 || ev.Intercepted {
			t.Errorf("event %+v", ev)
		}
	}
	// Large bodies are spliced socket to socket; the kept-alive upstream
	// must stay usable after one (the second request reuses it).
	big := bigBody()
	for i := range 2 {
		resp, body := get(t, c, newReq(t, "GET", up.URL+"/big", ""))
		if resp.StatusCode != 200 || body != string(big) {
			t.Fatalf("big body %d: %d, %d bytes", i, resp.StatusCode, len(body))
		}
		if ev := p.event(t); ev.BytesIn < int64(len(big)) {
			t.Errorf("big body event %+v", ev)
		}
	}
	resp, body := get(t, c, newReq(t, "HEAD", up.URL+"/big", ""))
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(len(big)) {
		t.Errorf("HEAD: %d %d %q", resp.StatusCode, resp.ContentLength, body)
	}
	p.event(t)

	resp, body = get(t, c, newReq(t, "DELETE", up.URL+"/x", ""))
	if resp.StatusCode != 403 || !strings.Contains(body, `method DELETE not allowed by rule`) ||
		!strings.Contains(body, fmt.Sprintf(`allow it with rule "127.0.0.1:%d DELETE"`, port)) {
		t.Errorf("DELETE: %d %q", resp.StatusCode, body)
	}
	if ev := p.event(t); ev.Allowed || !strings.HasPrefix(ev.Reason, "method DELETE not allowed") {
		t.Errorf("DELETE event %+v", ev)
	}
}

func TestConnectTunnel(t *testing.T) {
	up := httptest.NewTLSServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	c, tr := p.client(up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	req := newReq(t, "GET", up.URL+"/?token="+placeholder, "")
	req.Header.Set("Authorization", "Bearer "+placeholder)
	resp, body := get(t, c, req)
	// No credential for this host: nothing is intercepted or replaced.
	if resp.StatusCode != 200 || !strings.Contains(body, "auth=Bearer "+placeholder) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	tr.CloseIdleConnections()
	ev := p.event(t)
	if !ev.Allowed || ev.Via != "connect" || ev.Method != "" || ev.Intercepted || ev.BytesOut < 100 || ev.BytesIn < int64(len(body)) {
		t.Errorf("event %+v", ev)
	}
}

// Byte counts of a tunnel are exact: what the client sent, what it got.
func TestConnectByteCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	payload := bytes.Repeat([]byte("x"), 1<<20+17)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		io.ReadFull(c, buf)
		c.Write(payload)
	}()
	port := portOf(t, ln.Addr().String())
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	target := ln.Addr().String()
	resp, _, c, br := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\nhel")
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	io.WriteString(c, "lo")
	got, err := io.ReadAll(br)
	if err != nil || len(got) != len(payload) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	c.Close()
	ev := p.event(t)
	if ev.BytesOut != 5 || ev.BytesIn != int64(len(payload)) {
		t.Errorf("counts out=%d in=%d, want 5 and %d", ev.BytesOut, ev.BytesIn, len(payload))
	}
}

func TestRefusals(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := portOf(t, closed.Addr().String())
	closed.Close() // nothing listens there now: a dial is refused
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	upPort := portOf(t, up.URL)

	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{
			mustRule(t, "*.test"),
			mustRule(t, fmt.Sprintf("127.0.0.1:%d", closedPort)),
		}},
		Resolver: resolver(map[string]string{
			"meta.test":   "169.254.169.254",
			"lan.test":    "10.0.0.1",
			"self.test":   "127.0.0.1",
			"mapped.test": "::ffff:127.0.0.1",
			"cgnat.test":  "100.64.1.1",
			"v6ll.test":   "fe80::1",
		}),
	})
	tests := []struct {
		target string
		code   int
		body   string
	}{
		{"example.com:443", 403, `contextd egress: refused example.com:443 (no rule allows it); allow it with rule "example.com:443"` + "\n"},
		{"meta.test:80", 403, "link-local address 169.254.169.254 is not named by a rule"},
		{"lan.test:5432", 403, "private address 10.0.0.1 is not named by a rule"},
		{fmt.Sprintf("self.test:%d", upPort), 403, "loopback address 127.0.0.1 is not named by a rule"},
		{fmt.Sprintf("mapped.test:%d", upPort), 403, "loopback address 127.0.0.1 is not named by a rule"},
		{"cgnat.test:80", 403, "CGNAT address 100.64.1.1"},
		{"v6ll.test:80", 403, "link-local address fe80::1"},
		{fmt.Sprintf("127.0.0.1:%d", upPort), 403, "no rule allows it"},
		{"nx.test:443", 502, "(resolve: no such host)"},
		{fmt.Sprintf("127.0.0.1:%d", closedPort), 502, "(dial: connection refused)"},
	}
	for _, tt := range tests {
		resp, body, _, _ := rawRequest(t, p.addr, "CONNECT "+tt.target+" HTTP/1.1\r\nHost: "+tt.target+"\r\n\r\n")
		if resp.StatusCode != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("CONNECT %s: %d %q; want %d %q", tt.target, resp.StatusCode, body, tt.code, tt.body)
		}
		if tt.code == 403 && resp.Header.Get("X-Contextd-Egress") != "refused" {
			t.Errorf("CONNECT %s: no X-Contextd-Egress header", tt.target)
		}
		ev := p.event(t)
		if ev.Allowed || ev.Rule != "" || ev.Reason == "" || !strings.Contains(body, ev.Reason) {
			t.Errorf("CONNECT %s: event %+v", tt.target, ev)
		}
	}

	// The same through a plain-HTTP request.
	c, tr := p.client(nil)
	defer tr.CloseIdleConnections()
	resp, body := get(t, c, newReq(t, "GET", "http://meta.test/latest/meta-data/", ""))
	if resp.StatusCode != 403 || !strings.Contains(body, "link-local address 169.254.169.254") {
		t.Errorf("plain GET to metadata: %d %q", resp.StatusCode, body)
	}
	p.event(t)

	// Origin-form requests are not proxy requests.
	resp, _, _, _ = rawRequest(t, p.addr, "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if resp.StatusCode != 400 {
		t.Errorf("origin-form: %s", resp.Status)
	}
	p.event(t)
	resp, _, _, _ = rawRequest(t, p.addr, "CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if resp.StatusCode != 400 {
		t.Errorf("CONNECT without port: %s", resp.Status)
	}
}

// A rule that names the host exactly may reach a loopback address; a
// wildcard may not (tested above).
func TestLoopbackNamed(t *testing.T) {
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	p := startProxy(t, Options{
		Policy:   Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("registry.test:%d", port))}},
		Resolver: resolver(map[string]string{"registry.test": "127.0.0.1"}),
	})
	c, tr := p.client(nil)
	defer tr.CloseIdleConnections()
	resp, _ := get(t, c, newReq(t, "GET", fmt.Sprintf("http://registry.test:%d/", port), ""))
	if resp.StatusCode != 200 {
		t.Errorf("status %s", resp.Status)
	}
}

// credSetup is a registry that owns a credential (registry.test) and
// another allowed host (other.test), both on loopback upstreams.
type credSetup struct {
	p          *testProxy
	regURL     string
	otherURL   string
	reg, other *echoLog // what each upstream received
	regPort    int
	otherPort  int
	ca         *CA
	upstreamCA *x509.CertPool
}

func setupCreds(t *testing.T, tlsUpstreams bool, roots func(*x509.CertPool) *x509.CertPool) *credSetup {
	cs := &credSetup{reg: &echoLog{}, other: &echoLog{}, ca: newCA(t)}
	var reg, other *httptest.Server
	if tlsUpstreams {
		reg, cs.upstreamCA = tlsUpstream(t, echoHandler(cs.reg), nil, "registry.test")
		other, _ = tlsUpstream(t, echoHandler(cs.other), cs.upstreamCA, "other.test")
	} else {
		reg = httptest.NewServer(echoHandler(cs.reg))
		other = httptest.NewServer(echoHandler(cs.other))
		t.Cleanup(reg.Close)
		t.Cleanup(other.Close)
	}
	cs.regPort, cs.otherPort = portOf(t, reg.URL), portOf(t, other.URL)
	scheme := "http"
	if tlsUpstreams {
		scheme = "https"
	}
	cs.regURL = fmt.Sprintf("%s://registry.test:%d", scheme, cs.regPort)
	cs.otherURL = fmt.Sprintf("%s://other.test:%d", scheme, cs.otherPort)
	rootCAs := cs.upstreamCA
	if roots != nil {
		rootCAs = roots(cs.upstreamCA)
	}
	cs.p = startProxy(t, Options{
		Policy: Policy{Rules: []Rule{
			mustRule(t, fmt.Sprintf("registry.test:%d", cs.regPort)),
			mustRule(t, fmt.Sprintf("other.test:%d", cs.otherPort)),
		}},
		Credentials: []Credential{
			{Placeholder: placeholder, Secret: secret, Host: "registry.test", Port: cs.regPort, Cleartext: !tlsUpstreams,
				InTarget: true, InBody: true, Source: "~/.npmrc"},
			{Placeholder: otherPlaceholder, Secret: "other-secret", Host: "other.test", Port: 1, Source: "env OTHER_TOKEN"},
		},
		CA:       cs.ca,
		RootCAs:  rootCAs,
		Resolver: resolver(map[string]string{"registry.test": "127.0.0.1", "other.test": "127.0.0.1"}),
	})
	return cs
}

func TestInjectPlainHTTP(t *testing.T) {
	cs := setupCreds(t, false, nil)
	c, tr := cs.p.client(nil)
	defer tr.CloseIdleConnections()

	req := newReq(t, "GET", cs.regURL+"/pkg?token="+placeholder, "")
	req.Header.Set("Authorization", "Bearer "+placeholder)
	resp, body := get(t, c, req)
	delivered(t, cs, resp, body, "auth=Bearer "+secret+"\n", "token="+secret+"\n", `ua="Go-http-client/1.1"`)
	ev := cs.p.event(t)
	if !ev.Allowed || ev.Injected != 2 || ev.Leak || ev.Method != "GET" {
		t.Errorf("event %+v", ev)
	}
	if strings.Contains(fmt.Sprintf("%+v", ev), secret) {
		t.Error("event holds the secret")
	}
}

func TestInjectBasicAuthAndBody(t *testing.T) {
	cs := setupCreds(t, false, nil)
	c, tr := cs.p.client(nil)
	defer tr.CloseIdleConnections()

	req := newReq(t, "PUT", cs.regURL+"/pkg", `{"token":"`+placeholder+`"}`)
	req.SetBasicAuth("me", placeholder)
	resp, body := get(t, c, req)
	want := `{"token":"` + secret + `"}`
	delivered(t, cs, resp, body, "pass="+secret+"\n", "body="+want, fmt.Sprintf("len=%d\n", len(want)))
	if ev := cs.p.event(t); ev.Injected != 2 {
		t.Errorf("event %+v", ev)
	}

	// A form-encoded body carries the placeholder percent-encoded.
	req = newReq(t, "POST", cs.regURL+"/login", "password=%5BREDACTED%3Acontextd-config-credential%3A3%5D&x=1")
	resp, body = get(t, c, req)
	delivered(t, cs, resp, body, "body=password=npm_s3cr3t%2B%2F%3Dtoken&x=1")
	cs.p.event(t)
}

// delivered checks, on the host side, that the registry received every
// part of want (where the secret was put), and that the client got none of
// the secret back although the registry echoed it: the placeholder stands
// in its place.
func delivered(t *testing.T, cs *credSetup, resp *http.Response, body string, want ...string) {
	t.Helper()
	up := cs.reg.last()
	for _, w := range want {
		if !strings.Contains(up, w) {
			t.Errorf("the registry did not receive %q: %q", w, up)
		}
	}
	if resp.StatusCode != 200 {
		t.Errorf("status %s", resp.Status)
	}
	if l := leaks([]byte(body), secret); l != nil {
		t.Errorf("the client got the secret back as %q: %q", l, body)
	}
	for _, f := range secretForms(&Credential{Secret: secret, Placeholder: placeholder}) {
		if strings.Contains(up, string(f.from)) && !strings.Contains(body, string(f.to)) {
			t.Errorf("the echo of %q did not come back as %q: %q", f.from, f.to, body)
		}
	}
}

func TestLeakRefused(t *testing.T) {
	for _, tlsUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsUp), func(t *testing.T) {
			cs := setupCreds(t, tlsUp, nil)
			c, tr := cs.p.client(cs.upstreamCA)
			defer tr.CloseIdleConnections()
			for _, mk := range []func() *http.Request{
				func() *http.Request {
					r := newReq(t, "GET", cs.otherURL+"/", "")
					r.Header.Set("Authorization", "Bearer "+placeholder)
					return r
				},
				func() *http.Request {
					return newReq(t, "GET", cs.otherURL+"/?t=%5BREDACTED%3Acontextd-config-credential%3A3%5D", "")
				},
				func() *http.Request {
					r := newReq(t, "GET", cs.otherURL+"/", "")
					r.SetBasicAuth("u", placeholder)
					return r
				},
				func() *http.Request { return newReq(t, "POST", cs.otherURL+"/", "a="+placeholder) },
			} {
				req := mk()
				if tlsUp {
					// other.test has no credential, so its tunnel is opaque:
					// nothing to see, nothing refused, and nothing but
					// the placeholder reaches other.test.
					before := cs.other.hits()
					resp, _ := get(t, c, req)
					up := cs.other.last()
					if resp.StatusCode != 200 || cs.other.hits() != before+1 || leaks([]byte(up), secret) != nil {
						t.Errorf("tunnel to other.test: %s; other.test received %q", resp.Status, up)
					}
					continue
				}
				resp, body := get(t, c, req)
				if resp.StatusCode != 403 || !strings.Contains(body, "credential placeholder for registry.test sent to other.test") {
					t.Errorf("%s: %d %q", req.URL, resp.StatusCode, body)
				}
				ev := cs.p.event(t)
				if !ev.Leak || ev.Allowed || ev.Reason != "credential placeholder for registry.test sent to other.test" {
					t.Errorf("event %+v", ev)
				}
			}
			if !tlsUp && cs.other.hits() != 0 {
				t.Errorf("other.test got %d requests", cs.other.hits())
			}
		})
	}
}

func TestInjectInterceptedTLS(t *testing.T) {
	cs := setupCreds(t, true, nil)
	c, tr := cs.p.client(caPool(cs.ca)) // the sandbox trusts only the proxy's CA
	for range 2 {
		req := newReq(t, "POST", cs.regURL+"/pkg?token="+placeholder, "x="+placeholder)
		req.Header.Set("Authorization", "Bearer "+placeholder)
		resp, body := get(t, c, req)
		delivered(t, cs, resp, body, "auth=Bearer "+secret+"\n", "token="+secret+"\n", "body=x="+secret)
		if resp.TLS == nil || resp.TLS.PeerCertificates[0].Issuer.CommonName != "contextd egress CA" {
			t.Errorf("not served with the proxy's leaf")
		}
		ev := cs.p.event(t)
		if !ev.Allowed || !ev.Intercepted || ev.Injected != 3 || ev.Method != "POST" || ev.Via != "connect" || ev.BytesIn == 0 {
			t.Errorf("request event %+v", ev)
		}
	}
	// Another host's placeholder inside the intercepted tunnel is a leak.
	req := newReq(t, "GET", cs.regURL+"/", "")
	req.Header.Set("X-Token", otherPlaceholder)
	resp, body := get(t, c, req)
	if resp.StatusCode != 403 || !strings.Contains(body, "credential placeholder for other.test sent to registry.test") {
		t.Errorf("leak inside tunnel: %d %q", resp.StatusCode, body)
	}
	if ev := cs.p.event(t); !ev.Leak || !ev.Intercepted {
		t.Errorf("leak event %+v", ev)
	}
	tr.CloseIdleConnections()
	// The refusal closed the tunnel (all three requests went through it).
	ev := cs.p.event(t)
	if !ev.Allowed || !ev.Intercepted || ev.Method != "" || ev.BytesIn == 0 || ev.BytesOut == 0 {
		t.Errorf("tunnel event %+v", ev)
	}
}

func TestInterceptUpstreamUnverified(t *testing.T) {
	// RootCAs does not hold the upstream's CA.
	cs := setupCreds(t, true, func(*x509.CertPool) *x509.CertPool { return x509.NewCertPool() })
	c, tr := cs.p.client(caPool(cs.ca))
	defer tr.CloseIdleConnections()
	resp, body := get(t, c, newReq(t, "GET", cs.regURL+"/", ""))
	if resp.StatusCode != 502 || !strings.Contains(body, "certificate signed by unknown authority") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	ev := cs.p.event(t)
	if ev.Allowed || !strings.HasPrefix(ev.Reason, "upstream tls:") || !strings.Contains(ev.Reason, "unknown authority") {
		t.Errorf("event %+v", ev)
	}
}

func TestServeForwardInjects(t *testing.T) {
	seen := &echoLog{}
	up := httptest.NewServer(echoHandler(seen))
	defer up.Close()
	target := strings.TrimPrefix(up.URL, "http://")
	port := portOf(t, target)
	events := make(chan Event, 10)
	srv := NewServer(Options{
		Policy:      Policy{Rules: []Rule{mustRule(t, target)}},
		Credentials: []Credential{{Placeholder: placeholder, Secret: secret, Host: "127.0.0.1", Port: port, Cleartext: true}},
		CA:          newCA(t),
		OnEvent:     func(ev Event) { events <- ev },
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeForward(ctx, ln, target) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	tr := &http.Transport{}
	req := newReq(t, "GET", "http://"+ln.Addr().String()+"/-/whoami", "")
	req.Header.Set("Authorization", "Bearer "+placeholder)
	resp, body := get(t, &http.Client{Transport: tr}, req)
	if resp.StatusCode != 200 || !strings.Contains(seen.last(), "auth=Bearer "+secret+"\n") || !strings.Contains(body, "auth=Bearer "+placeholder+"\n") {
		t.Fatalf("%d %q; upstream received %q", resp.StatusCode, body, seen.last())
	}
	ev := <-events
	if ev.Via != "forward" || !ev.Intercepted || ev.Injected != 1 || ev.Method != "GET" {
		t.Errorf("request event %+v", ev)
	}
	tr.CloseIdleConnections()
	if ev := <-events; ev.Via != "forward" || ev.Method != "" || !ev.Allowed {
		t.Errorf("tunnel event %+v", ev)
	}
}

// Without a CA a host with credentials is tunnelled untouched.
func TestNoCANoInterception(t *testing.T) {
	up, pool := tlsUpstream(t, echoHandler(nil), nil, "registry.test")
	port := portOf(t, up.URL)
	p := startProxy(t, Options{
		Policy:      Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("registry.test:%d", port))}},
		Credentials: []Credential{{Placeholder: placeholder, Secret: secret, Host: "registry.test"}},
		Resolver:    resolver(map[string]string{"registry.test": "127.0.0.1"}),
	})
	c, tr := p.client(pool)
	req := newReq(t, "GET", fmt.Sprintf("https://registry.test:%d/", port), "")
	req.Header.Set("Authorization", "Bearer "+placeholder)
	resp, body := get(t, c, req)
	if resp.StatusCode != 200 || !strings.Contains(body, "auth=Bearer "+placeholder) {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	tr.CloseIdleConnections()
	if ev := p.event(t); ev.Intercepted || !ev.Allowed {
		t.Errorf("event %+v", ev)
	}
}

// bigBody is larger than spliceMin and not uniform, so a misplaced byte
// shows.
func bigBody() []byte {
	b := make([]byte, 3*spliceMin+12345)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// An upstream that closes a kept-alive connection after each answer (as a
// server does when its idle timeout passes): the next request without a
// body goes out again on a new connection, and the client never sees the
// stale one.
func TestStaleUpstreamRetried(t *testing.T) {
	port := rawServer(t, func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		// Keep-alive announced, then the connection goes away.
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(req.URL.Path), req.URL.Path)
	})
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	c, tr := p.client(nil)
	defer tr.CloseIdleConnections()
	for i := range 3 {
		url := fmt.Sprintf("http://127.0.0.1:%d/r%d", port, i)
		resp, body := get(t, c, newReq(t, "GET", url, ""))
		if resp.StatusCode != 200 || body != fmt.Sprintf("/r%d", i) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if ev := p.event(t); !ev.Allowed {
			t.Fatalf("request %d: event %+v", i, ev)
		}
	}
}
