package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scriptedUpstream serves plain HTTP/1.1 on loopback, answering by path with
// what net/http's server will not send: informational responses before the
// final one, a switch of protocols, a broken second head. It returns its
// port.
func scriptedUpstream(t *testing.T) int {
	t.Helper()
	return rawServer(t, serveScripted)
}

func serveScripted(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		switch req.URL.Path {
		case "/echo":
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		case "/early":
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"+
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		case "/broken":
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\n\r\nthis is no status line\r\n\r\n")
			return
		case "/upgrade":
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			io.Copy(c, br) //nolint:errcheck // ends with the connection
			return
		}
	}
}

// TestSessionResponses: a plain HTTP request's exchange with the client and
// the upstream beyond one request and one response: the proxy's own answer
// to Expect, informational responses passed on before the final one, a
// switch of protocols relayed both ways, and an upstream that breaks after
// part of its answer left.
func TestSessionResponses(t *testing.T) {
	port := scriptedUpstream(t)
	p := startProxy(t, Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d GET,POST", port))}}})
	target := fmt.Sprintf("http://127.0.0.1:%d", port)
	host := fmt.Sprintf("Host: 127.0.0.1:%d\r\n", port)

	type step struct {
		send   string // written to the proxy before the response is read
		status int    // of the response read next
		body   string // its body, read when there is one
	}
	tests := []struct {
		name       string
		steps      []step
		eof        bool   // the connection ends after the steps
		allowed    bool   // the event's verdict
		reasonPart string // in the event's reason
	}{
		{
			name: "expect continue answered by the proxy",
			steps: []step{
				{send: "POST " + target + "/echo HTTP/1.1\r\n" + host + "Expect: 100-continue\r\nContent-Length: 5\r\n\r\n", status: 100},
				{send: "hello", status: 200, body: "hello"},
			},
			allowed: true,
		},
		{
			name:       "unsupported expect refused",
			steps:      []step{{send: "POST " + target + "/echo HTTP/1.1\r\n" + host + "Expect: 200-ok\r\nContent-Length: 0\r\n\r\n", status: 400}},
			reasonPart: "unsupported Expect",
		},
		{
			name: "informational passed on before the final response",
			steps: []step{
				{send: "GET " + target + "/early HTTP/1.1\r\n" + host + "\r\n", status: 103},
				{status: 200, body: "ok"},
			},
			allowed: true,
		},
		{
			name:       "broken head after an informational one",
			steps:      []step{{send: "GET " + target + "/broken HTTP/1.1\r\n" + host + "\r\n", status: 103}},
			eof:        true,
			reasonPart: "upstream: read response: ",
		},
		{
			name: "switched protocol relayed both ways",
			steps: []step{
				{send: "GET " + target + "/upgrade HTTP/1.1\r\n" + host + "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n", status: 101},
			},
			allowed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck // a stuck test fails on the read
			br := bufio.NewReader(c)
			for i, s := range tt.steps {
				if _, err := io.WriteString(c, s.send); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if resp.StatusCode != s.status {
					t.Fatalf("step %d: status %d, want %d", i, resp.StatusCode, s.status)
				}
				if s.body != "" {
					b, _ := io.ReadAll(resp.Body)
					if string(b) != s.body {
						t.Fatalf("step %d: body %q, want %q", i, b, s.body)
					}
				}
			}
			if tt.steps[len(tt.steps)-1].status == http.StatusSwitchingProtocols {
				io.WriteString(c, "ping") //nolint:errcheck // seen at the read
				b := make([]byte, 4)
				if _, err := io.ReadFull(br, b); err != nil || string(b) != "ping" {
					t.Fatalf("after the switch: %q, %v", b, err)
				}
				c.Close()
			}
			if tt.eof {
				if b, err := br.ReadByte(); err == nil {
					t.Fatalf("byte %q after the broken response, want the end", b)
				}
			}
			ev := p.event(t)
			if ev.Allowed != tt.allowed || !strings.Contains(ev.Reason, tt.reasonPart) {
				t.Errorf("event %+v, want allowed %v and a reason with %q", ev, tt.allowed, tt.reasonPart)
			}
			if tt.allowed && (ev.BytesOut == 0 || ev.BytesIn == 0) {
				t.Errorf("event %+v counts no bytes", ev)
			}
		})
	}
}
