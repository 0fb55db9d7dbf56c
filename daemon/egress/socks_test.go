package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// socksDial speaks the client side of SOCKS5 by hand: greeting with
// methods, then a request; it returns the reply code and the connection.
func socksDial(t *testing.T, proxy string, methods []byte, cmd byte, host string, port int) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write(append([]byte{5, byte(len(methods))}, methods...))
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil {
		t.Fatal(err)
	}
	if sel[1] != 0 {
		return sel[1], c
	}
	req := []byte{5, cmd, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatal(err)
	}
	return rep[1], c
}

func TestSOCKS5(t *testing.T) {
	up := httptest.NewServer(echoHandler(nil))
	defer up.Close()
	port := portOf(t, up.URL)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := portOf(t, closed.Addr().String())
	closed.Close()
	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{
			mustRule(t, fmt.Sprintf("svc.test:%d", port)),
			mustRule(t, fmt.Sprintf("127.0.0.1:%d", port)),
			mustRule(t, fmt.Sprintf("127.0.0.1:%d", closedPort)),
			mustRule(t, "*.test"),
		}},
		Resolver: resolver(map[string]string{"svc.test": "127.0.0.1", "wild.test": "127.0.0.1"}),
	})

	for _, host := range []string{"svc.test", "127.0.0.1"} {
		code, c := socksDial(t, p.addr, []byte{2, 0}, 1, host, port)
		if code != 0 {
			t.Fatalf("%s: reply %#x", host, code)
		}
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", host, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		c.Close()
		ev := p.event(t)
		if ev.Via != "socks5" || !ev.Allowed || ev.Host != host || ev.BytesIn == 0 || ev.BytesOut == 0 {
			t.Errorf("event %+v", ev)
		}
	}

	tests := []struct {
		name    string
		methods []byte
		cmd     byte
		host    string
		port    int
		code    byte
		event   string
	}{
		{"no acceptable method", []byte{2}, 1, "svc.test", port, 0xFF, ""},
		{"bind", []byte{0}, 2, "svc.test", port, 0x07, ""},
		{"udp associate", []byte{0}, 3, "svc.test", port, 0x07, ""},
		{"not allowed", []byte{0}, 1, "example.com", 443, 0x02, "no rule allows it"},
		{"loopback via wildcard", []byte{0}, 1, "wild.test", port, 0x02, "loopback address 127.0.0.1 is not named by a rule"},
		{"resolve failure", []byte{0}, 1, "nx.test", 80, 0x04, "resolve: no such host"},
		{"dial refused", []byte{0}, 1, "127.0.0.1", closedPort, 0x05, "dial: connection refused"},
	}
	for _, tt := range tests {
		code, _ := socksDial(t, p.addr, tt.methods, tt.cmd, tt.host, tt.port)
		if code != tt.code {
			t.Errorf("%s: reply %#x, want %#x", tt.name, code, tt.code)
		}
		if tt.event != "" {
			if ev := p.event(t); ev.Allowed || ev.Reason != tt.event || ev.Via != "socks5" {
				t.Errorf("%s: event %+v", tt.name, ev)
			}
		}
	}
}

func TestSOCKS5Parse(t *testing.T) {
	tests := []struct {
		in   string
		host string
		port int
		ok   bool
	}{
		{"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50", "127.0.0.1", 80, true},
		{"\x05\x01\x00\x03\x0bExample.COM\x01\xbb", "example.com", 443, true},
		{"\x05\x01\x00\x04" + strings.Repeat("\x00", 15) + "\x01\x1f\x90", "::1", 8080, true},
		{"\x05\x01\x00\x04" + strings.Repeat("\x00", 10) + "\xff\xff\x0a\x00\x00\x01\x00\x16", "10.0.0.1", 22, true},
		{"\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50", "", 0, false}, // version
		{"\x05\x01\x01\x01\x7f\x00\x00\x01\x00\x50", "", 0, false}, // reserved byte
		{"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x00", "", 0, false}, // port 0
		{"\x05\x01\x00\x03\x00\x00\x50", "", 0, false},             // empty name
		{"\x05\x01\x00\x03\x03a b\x00\x50", "", 0, false},          // space in name
		{"\x05\x01\x00\x03\x05a\x00b.c\x00\x50", "", 0, false},     // NUL in name
		{"\x05\x01\x00\x05\x7f\x00\x00\x01\x00\x50", "", 0, false}, // address type
		{"\x05\x01\x00\x01\x7f\x00", "", 0, false},                 // short
	}
	for _, tt := range tests {
		req, err := readSOCKSRequest(strings.NewReader(tt.in))
		if (err == nil) != tt.ok || req.host != tt.host || req.port != tt.port {
			t.Errorf("readSOCKSRequest(%q) = %+v, %v", tt.in, req, err)
		}
	}
}

// Cancelling Serve's context closes open tunnels and Serve returns: nothing
// the proxy started outlives it.
func TestServeCancelClosesConnections(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := held.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	port := portOf(t, held.Addr().String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Options{Policy: Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	target := held.Addr().String()
	resp, _, c, br := rawRequest(t, ln.Addr().String(), "CONNECT "+target+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	// A second, idle HTTP connection that has not sent anything yet.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	upstream := <-accepted
	defer upstream.Close()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if n, err := br.Read(make([]byte, 1)); err == nil {
		t.Errorf("tunnel still open after cancel (read %d bytes)", n)
	}
	if _, err := upstream.Read(make([]byte, 1)); err == nil {
		t.Error("upstream still open after cancel")
	}
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("idle connection still open after cancel")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("listener still accepting after cancel")
	}
	c.Close()
}
