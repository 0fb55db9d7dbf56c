package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// methodLog is an upstream's record of every request method it received.
type methodLog struct {
	mu   sync.Mutex
	seen []string
}

func (m *methodLog) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		m.mu.Lock()
		m.seen = append(m.seen, r.Method+" "+r.URL.Path)
		m.mu.Unlock()
		io.WriteString(w, "registry says hello\n")
	})
}

// writes are the requests that would change the registry.
func (m *methodLog) writes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.seen {
		if !strings.HasPrefix(s, "GET ") && !strings.HasPrefix(s, "HEAD ") {
			out = append(out, s)
		}
	}
	return out
}

func (m *methodLog) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

// readOnlySetup is a read-only registry (rule "registry.test:PORT
// GET,HEAD", no credential) over TLS, reached through a proxy that has a CA.
type readOnlySetup struct {
	p     *testProxy
	log   *methodLog
	port  int
	ca    *CA
	roots *x509.CertPool
}

func setupReadOnly(t *testing.T, withCA bool) *readOnlySetup {
	rs := &readOnlySetup{log: &methodLog{}}
	up, upRoots := tlsUpstream(t, rs.log.handler(), nil, "registry.test")
	rs.port = portOf(t, up.URL)
	o := Options{
		Policy:   Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("registry.test:%d GET,HEAD", rs.port))}},
		RootCAs:  upRoots,
		Resolver: resolver(map[string]string{"registry.test": "127.0.0.1"}),
	}
	if withCA {
		rs.ca = newCA(t)
		o.CA = rs.ca
		rs.roots = caPool(rs.ca)
	}
	rs.p = startProxy(t, o)
	return rs
}

// putInTLS speaks TLS to registry.test over c (a tunnel), sends a PUT and
// returns the status and body of the answer.
func putInTLS(t *testing.T, c net.Conn, roots *x509.CertPool) string {
	t.Helper()
	tc := tls.Client(c, &tls.Config{ServerName: "registry.test", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS through the tunnel: %v", err)
	}
	br := bufio.NewReader(tc)
	io.WriteString(tc, "PUT /evil-pkg HTTP/1.1\r\nHost: registry.test\r\nAuthorization: Bearer attacker\r\nContent-Length: 5\r\n\r\nowned")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("response to PUT: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// TestMethodsEnforcedInConnect: a CONNECT to a host whose only rule names
// methods is intercepted: a PUT inside TLS is refused with 403 and the
// registry never sees it, while a GET goes through.
func TestMethodsEnforcedInConnect(t *testing.T) {
	rs := setupReadOnly(t, true)
	c, tr := rs.p.client(rs.roots)
	defer tr.CloseIdleConnections()
	url := fmt.Sprintf("https://registry.test:%d/evil-pkg", rs.port)
	for _, m := range []string{"PUT", "POST", "DELETE", "PATCH"} {
		resp, err := c.Do(newReq(t, m, url, `{"name":"evil-pkg"}`))
		if err != nil {
			t.Fatalf("%s through CONNECT: %v (want the proxy's 403)", m, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(body), "method "+m+" not allowed by rule") {
			t.Errorf("%s through CONNECT: %d %q", m, resp.StatusCode, body)
		}
	}
	resp, body := get(t, c, newReq(t, "GET", url, ""))
	if resp.StatusCode != 200 || !strings.Contains(body, "registry says hello") {
		t.Errorf("GET through CONNECT: %d %q", resp.StatusCode, body)
	}
	if w := rs.log.writes(); len(w) != 0 {
		t.Errorf("the read-only registry received %v", w)
	}
}

// TestMethodsEnforcedInSOCKS: the same over SOCKS5 (socks5h, the name
// given to the proxy).
func TestMethodsEnforcedInSOCKS(t *testing.T) {
	rs := setupReadOnly(t, true)
	code, c := socksDial(t, rs.p.addr, []byte{0}, 1, "registry.test", rs.port)
	if code != 0 {
		t.Fatalf("SOCKS5 connect: reply %d", code)
	}
	put := putInTLS(t, c, rs.roots)
	if !strings.HasPrefix(put, "403 ") || !strings.Contains(put, "method PUT not allowed") {
		t.Errorf("PUT through SOCKS5: %q", put)
	}
	if w := rs.log.writes(); len(w) != 0 {
		t.Errorf("the read-only registry received %v", w)
	}
}

// TestMethodsEnforcedInForward: a forwarded host-loopback port whose rule
// names methods sees every request, plain and TLS.
func TestMethodsEnforcedInForward(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			log := &methodLog{}
			var upURL string
			var roots *x509.CertPool
			if useTLS {
				up, r := tlsUpstream(t, log.handler(), nil, "registry.test")
				upURL, roots = "https://registry.test:"+fmt.Sprint(portOf(t, up.URL)), r
			} else {
				up := httptest.NewServer(log.handler())
				t.Cleanup(up.Close)
				upURL = up.URL
			}
			target := strings.TrimPrefix(strings.TrimPrefix(upURL, "http://"), "https://")
			ca := newCA(t)
			fwd := startForward(t, Options{
				Policy:   Policy{Rules: []Rule{mustRule(t, target+" GET,HEAD")}},
				CA:       ca,
				RootCAs:  roots,
				Resolver: resolver(map[string]string{"registry.test": "127.0.0.1"}),
			}, target)

			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool(ca), ServerName: "registry.test"}}
			defer tr.CloseIdleConnections()
			scheme := "http"
			if useTLS {
				scheme = "https"
			}
			c := &http.Client{Transport: tr}
			resp, err := c.Do(newReq(t, "PUT", scheme+"://"+fwd+"/evil-pkg", "owned"))
			if err != nil {
				t.Fatalf("PUT through the forward: %v (want the proxy's 403)", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 || !strings.Contains(string(body), "method PUT not allowed") {
				t.Errorf("PUT through the forward: %d %q", resp.StatusCode, body)
			}
			resp, b := get(t, c, newReq(t, "GET", scheme+"://"+fwd+"/pkg", ""))
			if resp.StatusCode != 200 || !strings.Contains(b, "registry says hello") {
				t.Errorf("GET through the forward: %d %q", resp.StatusCode, b)
			}
			if w := log.writes(); len(w) != 0 {
				t.Errorf("the read-only registry received %v", w)
			}
		})
	}
}

// TestMethodsWithoutCARefused: with no CA the proxy cannot see inside a
// tunnel, so a tunnel to a host whose rules all name methods is refused
// (never opened opaque), with the reason; nothing reaches the registry.
func TestMethodsWithoutCARefused(t *testing.T) {
	rs := setupReadOnly(t, false)
	target := fmt.Sprintf("registry.test:%d", rs.port)
	resp, body, conn, _ := rawRequest(t, rs.p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, "limits methods") {
		t.Errorf("CONNECT without a CA: %d %q", resp.StatusCode, body)
	}
	conn.Close() // an opened tunnel reports when it ends
	if ev := rs.p.event(t); ev.Allowed || !strings.Contains(ev.Reason, "limits methods") {
		t.Errorf("event %+v", ev)
	}
	code, _ := socksDial(t, rs.p.addr, []byte{0}, 1, "registry.test", rs.port)
	if code != socksNotAllowed {
		t.Errorf("SOCKS5 without a CA: reply %d, want %d", code, socksNotAllowed)
	}
	if n := rs.log.count(); n != 0 {
		t.Errorf("the registry received %d requests", n)
	}
}

// TestMethodsNotHTTPRefused: bytes that are neither TLS nor HTTP in a
// tunnel to a method-limited host never reach it.
func TestMethodsNotHTTPRefused(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	// The upstream reports its first read: bytes if the tunnel passed them
	// on, 0 when the proxy closes the connection without sending any.
	got := make(chan int, 1)
	go func() {
		c, err := up.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := c.Read(make([]byte, 4096))
		got <- n
	}()
	port := portOf(t, up.Addr().String())
	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d GET,HEAD", port))}},
		CA:     newCA(t),
	})
	target := fmt.Sprintf("127.0.0.1:%d", port)
	_, _, c, _ := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\nsome binary upload \x00\x01\x02\r\n\r\n")
	select {
	case n := <-got:
		if n > 0 {
			t.Errorf("the upstream received %d bytes of a non-HTTP protocol", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the upstream's connection never ended")
	}
	c.Close()
	p.event(t)
}

// TestUnlimitedRuleStaysOpaque: a host that a rule without methods also
// allows is tunnelled as before (nothing to enforce, nothing intercepted).
func TestUnlimitedRuleStaysOpaque(t *testing.T) {
	log := &methodLog{}
	up, roots := tlsUpstream(t, log.handler(), nil, "registry.test")
	port := portOf(t, up.URL)
	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{
			mustRule(t, fmt.Sprintf("registry.test:%d GET,HEAD", port)),
			mustRule(t, "registry.test"),
		}},
		CA:       newCA(t),
		Resolver: resolver(map[string]string{"registry.test": "127.0.0.1"}),
	})
	c, tr := p.client(roots) // trusts only the upstream's CA: an interception would fail
	resp, _ := get(t, c, newReq(t, "PUT", fmt.Sprintf("https://registry.test:%d/x", port), "ok"))
	tr.CloseIdleConnections()
	if resp.StatusCode != 200 {
		t.Errorf("PUT allowed by a rule without methods: %d", resp.StatusCode)
	}
	if ev := p.event(t); ev.Intercepted || !ev.Allowed {
		t.Errorf("event %+v", ev)
	}
}

// startForward serves o as a forward to target on a loopback listener
// until the test ends, and returns the listener's address.
func startForward(t *testing.T, o Options, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(o).ServeForward(ctx, ln, target) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
