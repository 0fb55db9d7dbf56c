package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTrailerLimit: the trailer of a chunked request body is held to the
// same limits as a head: 64 KiB of distinct fields (a map entry each) is
// refused with the limit named and costs the process little; a chunked
// body with a small trailer still goes through, and the connection serves
// the next request.
func TestTrailerLimit(t *testing.T) {
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	head := fmt.Sprintf("POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", port)

	var b strings.Builder
	b.WriteString(head)
	for i := 0; b.Len() < 60<<10; i++ {
		fmt.Fprintf(&b, "T%x:\r\n", i)
	}
	b.WriteString("\r\n")
	var resp *http.Response
	var body string
	n := allocated(func() { resp, body, _, _ = rawRequest(t, p.addr, b.String()) })
	if resp.StatusCode == 200 || !strings.Contains(body, "header fields in a trailer") {
		t.Errorf("a trailer of %d bytes of fields: %d %q", b.Len()-len(head), resp.StatusCode, body)
	}
	t.Logf("allocated %d KiB", n>>10)
	if n > 1<<20 {
		t.Errorf("the process allocated %d KiB for one trailer", n>>10)
	}
	p.event(t)

	// A small trailer, then a second request on the same connection.
	resp, body, c, br := rawRequest(t, p.addr, head+"X-Sum: 1\r\n\r\n")
	if resp.StatusCode != 200 || !strings.Contains(body, "body=hello") {
		t.Fatalf("chunked body with a small trailer: %d %q", resp.StatusCode, body)
	}
	fmt.Fprintf(c, "GET http://127.0.0.1:%d/second HTTP/1.1\r\nHost: x\r\n\r\n", port)
	resp2, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("second request on the connection: %v", err)
	}
	io.Copy(io.Discard, resp2.Body)
	if resp2.StatusCode != 200 {
		t.Errorf("second request: %s", resp2.Status)
	}
}

// rawUpstream is an HTTP/1.1 server that answers every request for path p
// with the bytes responses[p], as they are, on connections kept open; it
// counts the connections it accepted.
func rawUpstream(t *testing.T, responses map[string][]byte) (port int, accepted *atomic.Int64) {
	t.Helper()
	accepted = new(atomic.Int64)
	port = rawServer(t, func(c net.Conn) {
		accepted.Add(1)
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := c.Write(responses[req.URL.Path]); err != nil {
				return
			}
		}
	})
	return port, accepted
}

// TestResponseTrailerLimit: an upstream (reachable by the sandboxed
// program, so possibly its accomplice) answers with a chunked body whose
// trailer is 60 KiB of tiny distinct fields, or 700 KiB of them, or a few
// long ones over 64 KiB. Each field would be an entry in a map; the proxy
// holds the trailer to the limits of a head instead, so the client gets a
// 502 naming the limit, the event says why, and the process allocates
// little. A chunked response with a
// small trailer, or none, still comes through whole, on a connection that
// serves the next request.
func TestResponseTrailerLimit(t *testing.T) {
	const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
	fields := func(n, valueLen int) []byte {
		var b strings.Builder
		b.WriteString(chunked)
		for i := range n {
			fmt.Fprintf(&b, "T%x:%s\r\n", i, strings.Repeat("v", valueLen))
		}
		b.WriteString("\r\n")
		return []byte(b.String())
	}
	port, accepted := rawUpstream(t, map[string][]byte{
		"/many":  fields(7000, 0),   // ~55 KiB: within the size of a head
		"/flood": fields(100000, 0), // ~700 KiB
		"/long":  fields(100, 1000), // few fields, ~100 KiB
		"/small": []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n"),
		"/none":  []byte(chunked + "\r\n"),
	})
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	get := func(path, headers string) string {
		return fmt.Sprintf("GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: x\r\n%s\r\n", port, path, headers)
	}

	for _, tc := range []struct{ path, want string }{
		{"/many", "more than 256 header fields in a response trailer"},
		{"/flood", "more than 256 header fields in a response trailer"},
		{"/long", "response trailer over 65536 bytes"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			expectRefused(t, p, get(tc.path, "Connection: close\r\n"), "502", tc.want)
		})
	}

	// A small trailer (announced, as HTTP/1.1 asks), then no trailer, on
	// one client connection and one upstream connection.
	before := accepted.Load()
	resp, body, c, br := rawRequest(t, p.addr, get("/small", ""))
	if resp.StatusCode != 200 || body != "hello" || resp.Trailer.Get("X-Sum") != "1" {
		t.Fatalf("chunked response with a small trailer: %d %q, trailer %q", resp.StatusCode, body, resp.Trailer)
	}
	p.event(t)
	io.WriteString(c, get("/none", ""))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("second request on the connection: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(b) != "hello" || len(resp.Trailer) != 0 {
		t.Errorf("chunked response without a trailer: %d %q %v, trailer %q", resp.StatusCode, b, err, resp.Trailer)
	}
	if n := accepted.Load() - before; n != 1 {
		t.Errorf("the two responses took %d upstream connections, want 1", n)
	}
}

// TestTrailerNamesLimit: the Trailer header of a head announces trailer
// fields, and net/http makes each name an entry in a map when it parses
// the head: one field of 60 KiB of short names would cost megabytes as
// 256 real fields cannot. A request or a response announcing more names
// than a trailer may have fields is refused like a head with too many
// fields, with little allocated.
func TestTrailerNamesLimit(t *testing.T) {
	var names strings.Builder
	for i := 0; names.Len() < 60<<10; i++ {
		fmt.Fprintf(&names, "%x,", i)
	}
	// Folded onto a second line, a name list counts the same.
	announce := "Trailer: " + names.String() + "a\r\n\tb,c\r\n"
	chunked := "Transfer-Encoding: chunked\r\n" + announce + "\r\n5\r\nhello\r\n0\r\n\r\n"
	port, _ := rawUpstream(t, map[string][]byte{
		"/announce": []byte("HTTP/1.1 200 OK\r\n" + chunked),
		"/few":      []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-A,\r\n X-B\r\n\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n"),
	})
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	const want = "more than 256 trailer fields announced"
	for _, tc := range []struct{ name, send, status string }{
		{"request", fmt.Sprintf("POST http://127.0.0.1:%d/few HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s", port, chunked), "431"},
		{"response", fmt.Sprintf("GET http://127.0.0.1:%d/announce HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port), "502"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectRefused(t, p, tc.send, tc.status, want)
		})
	}
	// A few names, one of them folded, still announce a trailer that comes through.
	resp, body, _, _ := rawRequest(t, p.addr, fmt.Sprintf("GET http://127.0.0.1:%d/few HTTP/1.1\r\nHost: x\r\n\r\n", port))
	if resp.StatusCode != 200 || body != "" || resp.Trailer.Get("X-A") != "1" || resp.Trailer.Get("X-B") != "2" {
		t.Errorf("a trailer of two announced fields: %d %q, trailer %q", resp.StatusCode, body, resp.Trailer)
	}
}

// A trailer has no first line: it gets maxHeaderFields fields, as a head
// does beside its request or status line, and the one after is refused.
func TestTrailerFieldCount(t *testing.T) {
	trailer := func(n int) *bufio.Reader {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "X-F%d: v\r\n", i)
		}
		b.WriteString("\r\n")
		return newHeadReader(strings.NewReader(b.String()))
	}
	if err := scanHead(trailer(maxHeaderFields), "response trailer", false); err != nil {
		t.Errorf("%d fields: %v", maxHeaderFields, err)
	}
	var he *headError
	if err := scanHead(trailer(maxHeaderFields+1), "response trailer", false); !errors.As(err, &he) {
		t.Errorf("%d fields: %v, want a refusal", maxHeaderFields+1, err)
	}
}

// expectRefused sends send through p on a connection of its own and
// checks that it is refused with status, the answer and the event saying
// want, and that the whole process allocated under 1 MiB meanwhile (the
// proxy read nothing past its bounds).
func expectRefused(t *testing.T, p *testProxy, send, status, want string) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got string
	n := allocated(func() {
		io.WriteString(c, send)
		b, _ := io.ReadAll(c)
		got = string(b)
	})
	if !strings.HasPrefix(got, "HTTP/1.1 "+status+" ") || !strings.Contains(got, want) {
		t.Errorf("want a %s saying %q, the client got %q", status, want, got[:min(len(got), 300)])
	}
	if ev := p.event(t); ev.Allowed || !strings.Contains(ev.Reason, want) {
		t.Errorf("event %+v", ev)
	}
	t.Logf("allocated %d KiB", n>>10)
	if n > 1<<20 {
		t.Errorf("the process allocated %d KiB for one refused message", n>>10)
	}
}
