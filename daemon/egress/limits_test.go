package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hugeHead is what an attacker streams: a request whose line or one header
// is n bytes long, produced piece by piece so that the client itself holds
// almost nothing.
type hugeHead struct {
	prefix, suffix string
	n              int64
}

func (h hugeHead) writeTo(w io.Writer) {
	io.WriteString(w, h.prefix)
	chunk := []byte(strings.Repeat("a", 32<<10))
	for left := h.n; left > 0; left -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
			return // the proxy gave up on us, as it should
		}
	}
	io.WriteString(w, h.suffix)
}

// sendHuge streams head on c while reading the answer, and returns the
// status and body the proxy sent (or the read error).
func sendHuge(t *testing.T, c io.ReadWriter, head hugeHead) (int, string) {
	t.Helper()
	go head.writeTo(c)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "read: " + err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// allocated runs f and returns how many bytes the whole process allocated
// meanwhile: the proxy, its upstream and the client all run here, so an
// unbounded buffer anywhere shows.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const hugeSize = 64 << 20 // far over any limit; the e2e suite sends 300 MB

// TestHeadLimit: a request line or a header of 64 MiB, through every way
// in (plain HTTP, a CONNECT line, inside intercepted TLS after CONNECT and
// after SOCKS5, a forward), is refused with 431 and a body naming the
// limit, and the process allocates a small fraction of it.
func TestHeadLimit(t *testing.T) {
	rs := setupReadOnly(t, true)
	target := fmt.Sprintf("registry.test:%d", rs.port)
	tlsIn := func(c net.Conn) io.ReadWriter {
		tc := tls.Client(c, &tls.Config{ServerName: "registry.test", RootCAs: rs.roots})
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS through the tunnel: %v", err)
		}
		return tc
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", rs.p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	cases := []struct {
		name string
		conn func() io.ReadWriter
		head hugeHead
	}{
		{"request line", func() io.ReadWriter { return dial() },
			hugeHead{"GET http://" + target + "/", " HTTP/1.1\r\nHost: x\r\n\r\n", hugeSize}},
		{"header", func() io.ReadWriter { return dial() },
			hugeHead{"GET http://" + target + "/ HTTP/1.1\r\nHost: x\r\nX-Big: ", "\r\n\r\n", hugeSize}},
		{"CONNECT line", func() io.ReadWriter { return dial() },
			hugeHead{"CONNECT " + target, " HTTP/1.1\r\n\r\n", hugeSize}},
		{"inside CONNECT+TLS", func() io.ReadWriter {
			_, _, c, _ := rawRequest(t, rs.p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
			return tlsIn(c)
		}, hugeHead{"GET / HTTP/1.1\r\nHost: registry.test\r\nX-Big: ", "\r\n\r\n", hugeSize}},
		{"inside SOCKS5+TLS", func() io.ReadWriter {
			code, c := socksDial(t, rs.p.addr, []byte{0}, 1, "registry.test", rs.port)
			if code != 0 {
				t.Fatalf("SOCKS5: reply %d", code)
			}
			return tlsIn(c)
		}, hugeHead{"GET /", " HTTP/1.1\r\nHost: registry.test\r\n\r\n", hugeSize}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.conn()
			var code int
			var body string
			n := allocated(func() { code, body = sendHuge(t, c, tc.head) })
			if code != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, "65536 bytes") {
				t.Errorf("want 431 naming the limit, got %d %q", code, body)
			}
			if n > 16<<20 {
				t.Errorf("the process allocated %d MiB for a %d MiB head", n>>20, hugeSize>>20)
			}
			t.Logf("allocated %d KiB for a %d MiB head", n>>10, hugeSize>>20)
		})
	}
	if w := rs.log.count(); w != 0 {
		t.Errorf("the registry received %d requests", w)
	}
}

// TestHeadLimitForward: the same through a host-loopback forward (plain
// HTTP to a method-limited registry).
func TestHeadLimitForward(t *testing.T) {
	log := &methodLog{}
	up := httptest.NewServer(log.handler())
	defer up.Close()
	target := strings.TrimPrefix(up.URL, "http://")
	fwd := startForward(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, target+" GET,HEAD")}}, CA: newCA(t)}, target)
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var code int
	var body string
	n := allocated(func() {
		code, body = sendHuge(t, c, hugeHead{"GET / HTTP/1.1\r\nHost: x\r\nCookie: ", "\r\n\r\n", hugeSize})
	})
	if code != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, "65536 bytes") {
		t.Errorf("want 431 naming the limit, got %d %q", code, body)
	}
	if n > 16<<20 {
		t.Errorf("the process allocated %d MiB for a %d MiB head", n>>20, hugeSize>>20)
	}
	if log.count() != 0 {
		t.Errorf("the registry received a request")
	}
}

// TestHeaderCountLimit: many small header fields, each cheap in bytes but
// each an entry in a map, are refused by count.
func TestHeaderCountLimit(t *testing.T) {
	rs := setupReadOnly(t, true)
	var b strings.Builder
	fmt.Fprintf(&b, "GET http://registry.test:%d/ HTTP/1.1\r\nHost: x\r\n", rs.port)
	for i := range 2000 {
		fmt.Fprintf(&b, "X-%d: 1\r\n", i)
	}
	b.WriteString("\r\n")
	resp, body, _, _ := rawRequest(t, rs.p.addr, b.String())
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, "header fields") {
		t.Errorf("want 431 naming the field limit, got %d %q", resp.StatusCode, body)
	}
	if ev := rs.p.event(t); ev.Allowed || !strings.Contains(ev.Reason, "header fields") {
		t.Errorf("event %+v", ev)
	}
}

// TestResponseHeadLimit: an allowed upstream that answers with a huge
// header cannot grow the daemon either; the client gets a 502 naming the
// limit.
func TestResponseHeadLimit(t *testing.T) {
	port := rawServer(t, func(c net.Conn) {
		defer c.Close()
		http.ReadRequest(bufio.NewReader(c))
		hugeHead{"HTTP/1.1 200 OK\r\nX-Big: ", "\r\nContent-Length: 0\r\n\r\n", hugeSize}.writeTo(c)
	})
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	var resp *http.Response
	var body string
	n := allocated(func() {
		resp, body, _, _ = rawRequest(t, p.addr, fmt.Sprintf("GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", port))
	})
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "65536 bytes") {
		t.Errorf("want 502 naming the limit, got %d %q", resp.StatusCode, body)
	}
	if n > 16<<20 {
		t.Errorf("the process allocated %d MiB for a %d MiB response head", n>>20, hugeSize>>20)
	}
}

// TestConnLimit: a call holds at most MaxConns connections; the next one
// is answered 503 (HTTP) or "general failure" (SOCKS5) with the limit
// named in the event, and once one closes a new one is served.
func TestConnLimit(t *testing.T) {
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	target := fmt.Sprintf("127.0.0.1:%d", port)
	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{mustRule(t, target)}},
		Limits: Limits{MaxConns: 3},
	})
	var held []net.Conn
	for range 3 {
		resp, _, c, _ := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT under the limit: %s", resp.Status)
		}
		held = append(held, c)
	}
	resp, body, c4, _ := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	c4.Close() // were it opened, its event would come only at its end
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "3 connections") || !strings.Contains(body, "max_connections") {
		t.Errorf("CONNECT over the limit: %d %q", resp.StatusCode, body)
	}
	if ev := p.event(t); ev.Allowed || ev.Host != "127.0.0.1" || ev.Port != port || !strings.Contains(ev.Reason, "3 connections") {
		t.Errorf("event %+v", ev)
	}
	code, _ := socksDial(t, p.addr, []byte{0}, 1, "127.0.0.1", port)
	if code != socksGeneralFailure {
		t.Errorf("SOCKS5 over the limit: reply %d", code)
	}
	if ev := p.event(t); ev.Allowed || ev.Via != "socks5" || !strings.Contains(ev.Reason, "3 connections") {
		t.Errorf("SOCKS5 event %+v", ev)
	}
	held[0].Close()
	p.event(t) // the tunnel's end
	// The slot is given back when the connection's handler returns, just
	// after its event: try until a new connection is served.
	for i := 0; ; i++ {
		resp, _, c, _ := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		c.Close()
		p.event(t)
		if resp.StatusCode == 200 {
			break
		}
		if i == 100 {
			t.Fatalf("no connection served after one of the limit closed: %s", resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
