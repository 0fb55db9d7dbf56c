package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
