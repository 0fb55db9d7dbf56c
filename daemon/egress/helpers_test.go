package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testProxy is a Server serving on a loopback listener, with its events.
type testProxy struct {
	addr   string
	events chan Event
	cancel context.CancelFunc
	done   chan error
}

// startProxy serves o on 127.0.0.1 until the test ends; Serve must return
// nil after the cancel.
func startProxy(t testing.TB, o Options) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &testProxy{addr: ln.Addr().String(), events: make(chan Event, 1000), done: make(chan error, 1)}
	if o.OnEvent == nil {
		o.OnEvent = func(ev Event) { p.events <- ev }
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	srv := NewServer(o)
	go func() { p.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-p.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p
}

// event waits for the next event.
func (p *testProxy) event(t testing.TB) Event {
	t.Helper()
	return <-p.events
}

// client is an http.Client that uses the proxy; roots verifies TLS.
func (p *testProxy) client(roots *x509.CertPool) (*http.Client, *http.Transport) {
	u := &url.URL{Scheme: "http", Host: p.addr}
	tr := &http.Transport{
		Proxy:              http.ProxyURL(u),
		TLSClientConfig:    &tls.Config{RootCAs: roots},
		DisableCompression: true,
	}
	return &http.Client{Transport: tr}, tr
}

// resolver maps test names to addresses, as DNS would.
func resolver(m map[string]string) func(context.Context, string) ([]net.IP, error) {
	return func(_ context.Context, host string) ([]net.IP, error) {
		a, ok := m[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var ips []net.IP
		for s := range strings.SplitSeq(a, ",") {
			ips = append(ips, net.ParseIP(s))
		}
		return ips, nil
	}
}

func mustRule(t testing.TB, s string) Rule {
	t.Helper()
	r, err := ParseRule(s, "test")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rawServer listens on the loopback until the test ends and runs serve on
// each connection it accepts, in a goroutine of its own; it returns the
// port.
func rawServer(t testing.TB, serve func(c net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "https://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func newCA(t testing.TB) *CA {
	t.Helper()
	// Every test host is under .test or on 127.0.0.1.
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "ca"), "*.test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func caPool(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Certificate())
	return p
}

// tlsUpstream starts an HTTPS server whose certificate, for names, is signed
// by a CA of its own; that CA is added to pool (a new one if nil), which is
// returned.
func tlsUpstream(t testing.TB, h http.Handler, pool *x509.CertPool, names ...string) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: names, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	if pool == nil {
		pool = x509.NewCertPool()
	}
	pool.AddCert(caCert)
	return ts, pool
}

// rawRequest sends head on a new connection to the proxy and reads the
// response; the connection is returned for what follows.
func rawRequest(t testing.TB, proxyAddr, head string) (*http.Response, string, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(head)[0]})
	if err != nil {
		t.Fatal(err)
	}
	body := ""
	if resp.StatusCode != http.StatusOK || resp.Request.Method != http.MethodConnect {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return resp, body, c, br
}
