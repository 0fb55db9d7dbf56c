//go:build e2e

package e2e

// Attacks on the egress proxy's credential handling (issue 25, items 4-6),
// as the unprivileged test user with the real user manager and the default
// configuration plus a registry token in ~/.npmrc. What is checked is what
// lands on the host: the files the sandboxed command wrote into the
// workspace, and what the host's upstream servers received, never the
// call's scrubbed output.

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoRegistry answers every request by echoing its Authorization header
// in a Location, a CORS header and a body whose chunks split the value in
// two, the way an error page or a redirect keeping the query would. It
// keeps what it received.
type echoRegistry struct {
	url  string
	port int
	mu   sync.Mutex
	got  []string
}

func (e *echoRegistry) auths() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func startEchoRegistry(t *testing.T, cert *tls.Certificate) *echoRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoRegistry{port: ln.Addr().(*net.TCPAddr).Port}
	scheme := "http"
	if cert != nil {
		scheme = "https"
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	e.url = fmt.Sprintf("%s://127.0.0.1:%d/", scheme, e.port)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		e.mu.Lock()
		e.got = append(e.got, a)
		e.mu.Unlock()
		w.Header().Set("Location", "/login?next="+url.QueryEscape(a))
		w.Header().Set("Access-Control-Allow-Headers", "authorization, x-"+a)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		half := len(a) / 2
		io.WriteString(w, "you sent: "+a[:half])
		w.(http.Flusher).Flush()
		io.WriteString(w, a[half:]+"\nencoded: "+url.QueryEscape(a)+"\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return e
}

// TestAttackEgressEcho: a registry on the host's loopback, named in
// ~/.npmrc with a token, echoes the Authorization it gets. It receives the
// real token (over HTTP and over HTTPS), and the headers and body the
// sandboxed curl wrote into the workspace hold the placeholder, never the
// token, as is or percent-encoded.
func TestAttackEgressEcho(t *testing.T) {
	caFile, cert := testCA(t)
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{{"http", nil}, {"https", cert}} {
		t.Run(tc.name, func(t *testing.T) {
			token := "npm_" + devTag(36)
			reg := startEchoRegistry(t, tc.cert)
			devPlant(t, filepath.Join(env.home, ".npmrc"),
				fmt.Sprintf("registry=%s\n//127.0.0.1:%d/:_authToken=%s\n", reg.url, reg.port, token), 0o600)
			withConfig(t, fmt.Sprintf("[egress]\nca_files = [%q]\n", caFile))
			ws := egressWorkspace(t)
			marker := "egress-echo-" + devTag(6)
			r := bashIn(t, ws, fmt.Sprintf(`ph=$(grep -o '\[REDACTED:[^]]*\]' ~/.npmrc | head -1); test -n "$ph" || { echo no-placeholder; exit 3; }; `+
				`curl -sS --noproxy '' -x http://127.0.0.1:3128 -D got.headers -o got.body -H "Authorization: Bearer $ph" %secho?t=1; echo curl=$? # %s`,
				reg.url, marker))
			if !strings.Contains(r.stdout, "curl=0") {
				t.Fatalf("curl through the proxy: %s\nregistry saw %d requests", r, len(reg.auths()))
			}
			seen := reg.auths()
			if len(seen) != 1 || seen[0] != "Bearer "+token {
				t.Fatalf("the registry should have received the real token once; got %d requests", len(seen))
			}
			var all []byte
			for _, f := range []string{"got.headers", "got.body"} {
				b, err := os.ReadFile(filepath.Join(ws, f))
				if err != nil {
					t.Fatalf("the sandboxed command wrote no %s: %v", f, err)
				}
				all = append(all, b...)
			}
			for _, form := range []string{token, url.QueryEscape(token)} {
				if strings.Contains(string(all), form) {
					t.Errorf("the token came back into the workspace (%d bytes written)", len(all))
				}
			}
			// The echo did come back, with the placeholder in its place (the
			// token has one spelling: its percent-encoding is itself).
			if !strings.Contains(string(all), "you sent: Bearer [REDACTED:") || !strings.Contains(string(all), "Location: /login?next=Bearer+[REDACTED:") {
				t.Errorf("the workspace files do not hold the echoed placeholder:\n%s", all)
			}
		})
	}
}

// TestAttackEgressSNIMismatch: through a tunnel to an allowed TLS server on
// the host's loopback, a ClientHello naming another host (domain fronting)
// is refused, and that server receives no byte of it; the same tunnel
// without a server name (as for an IP) reaches it and completes the
// handshake.
func TestAttackEgressSNIMismatch(t *testing.T) {
	_, cert := testCA(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Each connection's byte count, once it has ended.
	ended := make(chan int64, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				cc := &countingConn{Conn: c}
				tls.Server(cc, &tls.Config{Certificates: []tls.Certificate{*cert}}).Handshake() //nolint:errcheck // counted either way
				c.Close()
				ended <- cc.n.Load()
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	withConfig(t, fmt.Sprintf("[egress]\nallow = [\"127.0.0.1:%d\"]\n", port))
	ws := egressWorkspace(t)

	marker := "egress-sni-" + devTag(6)
	r := bashIn(t, ws, fmt.Sprintf("openssl s_client -proxy 127.0.0.1:3128 -connect 127.0.0.1:%d -servername evil.example </dev/null >sni.out 2>&1; echo rc=$? # %s", port, marker))
	if !strings.Contains(r.stdout, "rc=") {
		t.Fatalf("openssl did not run: %s", r)
	}
	refused := false
	for _, c := range auditEgress(t, marker) {
		if c.Port == port && !c.Allowed && strings.Contains(c.Reason, `TLS server name "evil.example"`) {
			refused = true
		}
	}
	if !refused {
		b, _ := os.ReadFile(filepath.Join(ws, "sni.out"))
		t.Fatalf("the audit record shows no refused ClientHello for evil.example; openssl said:\n%s", b)
	}
	// The proxy dialled before the hello came and closed that connection
	// on refusing it: wait for it to end, and see what it carried.
	if n := upstreamEnded(t, ended); n != 0 {
		t.Errorf("the upstream received %d bytes of a fronted hello", n)
	}

	// Control: without a server name the same tunnel carries the hello.
	r = bashIn(t, ws, fmt.Sprintf("openssl s_client -proxy 127.0.0.1:3128 -connect 127.0.0.1:%d -noservername </dev/null >ctl.out 2>&1; echo rc=$? # %s-ctl", port, marker))
	if n := upstreamEnded(t, ended); n == 0 {
		b, _ := os.ReadFile(filepath.Join(ws, "ctl.out"))
		t.Errorf("the control hello did not reach the upstream: %s\n%s", r, b)
	}
}

// upstreamEnded waits, bounded, for the test upstream's next connection to
// end, and gives the bytes it carried: a proxy that never dials fails the
// test instead of hanging the suite.
func upstreamEnded(t *testing.T, ended <-chan int64) int64 {
	t.Helper()
	select {
	case n := <-ended:
		return n
	case <-time.After(2 * time.Minute):
		t.Fatal("no connection reached the test upstream, or it never ended, in 2 minutes")
		return 0
	}
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}
