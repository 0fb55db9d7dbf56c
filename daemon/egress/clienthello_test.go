package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// captureConn records what a TLS client writes and fails its first read,
// which ends the handshake right after the ClientHello.
type captureConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *captureConn) Write(p []byte) (int, error)      { return c.buf.Write(p) }
func (c *captureConn) Read([]byte) (int, error)         { return 0, errors.New("capture only") }
func (c *captureConn) Close() error                     { return nil }
func (c *captureConn) SetDeadline(time.Time) error      { return nil }
func (c *captureConn) SetReadDeadline(time.Time) error  { return nil }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }

// realHello is the ClientHello Go's TLS client sends for serverName.
func realHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c := &captureConn{}
	tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake() //nolint:errcheck // fails by design
	if c.buf.Len() < 50 {
		t.Fatalf("no hello captured for %q", serverName)
	}
	return c.buf.Bytes()
}

// withExtension returns hello (one record) with an extension appended,
// all three lengths adjusted.
func withExtension(t testing.TB, hello []byte, typ uint16, data []byte) []byte {
	t.Helper()
	h := append([]byte(nil), hello...)
	p := 5 + 4 + 2 + 32
	p += 1 + int(h[p])
	p += 2 + int(binary.BigEndian.Uint16(h[p:]))
	p += 1 + int(h[p])
	ext := binary.BigEndian.AppendUint16(nil, typ)
	ext = binary.BigEndian.AppendUint16(ext, uint16(len(data)))
	ext = append(ext, data...)
	binary.BigEndian.PutUint16(h[p:], binary.BigEndian.Uint16(h[p:])+uint16(len(ext)))
	binary.BigEndian.PutUint16(h[3:], binary.BigEndian.Uint16(h[3:])+uint16(len(ext)))
	n := (int(h[6])<<16 | int(h[7])<<8 | int(h[8])) + len(ext)
	h[6], h[7], h[8] = byte(n>>16), byte(n>>8), byte(n)
	return append(h, ext...)
}

// splitRecords re-frames a one-record hello as records of at most n bytes.
func splitRecords(hello []byte, n int) []byte {
	var out []byte
	for body := hello[5:]; len(body) > 0; {
		k := min(n, len(body))
		out = append(out, 22, 3, 1, byte(k>>8), byte(k))
		out = append(out, body[:k]...)
		body = body[k:]
	}
	return out
}

func TestPeekHello(t *testing.T) {
	good := realHello(t, "registry.test")
	sniExt := func(names ...string) []byte {
		var list []byte
		for _, n := range names {
			list = append(list, 0, byte(len(n)>>8), byte(len(n)))
			list = append(list, n...)
		}
		return append([]byte{byte(len(list) >> 8), byte(len(list))}, list...)
	}
	for _, tc := range []struct {
		name, host string
		hello      []byte
		want       string // "" accepted, else part of the reason
	}{
		{"match", "registry.test", good, ""},
		{"match split in records", "registry.test", splitRecords(good, 7), ""},
		{"case and dot", "registry.test", realHello(t, "Registry.TEST"), ""},
		{"other name", "registry.test", realHello(t, "evil.test"), `TLS server name "evil.test" in a tunnel to registry.test`},
		{"no name", "registry.test", realHello(t, ""), "no TLS server name"},
		{"ip without name", "127.0.0.1", realHello(t, ""), ""},
		{"ip with name", "127.0.0.1", realHello(t, "evil.test"), "in a tunnel to the address 127.0.0.1"},
		{"ech", "registry.test", withExtension(t, good, extECH, []byte{0, 1, 2}), "ECH"},
		{"esni", "registry.test", withExtension(t, good, extESNI, []byte{0}), "ECH"},
		{"second sni extension", "registry.test", withExtension(t, good, extServerName, sniExt("evil.test")), "twice"},
		{"two names in one", "registry.test", withExtension(t, realHello(t, ""), extServerName, sniExt("registry.test", "evil.test")), "server_name entry"},
		{"truncated", "registry.test", good[:len(good)-1], "truncated"},
		{"not handshake", "registry.test", append([]byte{23}, good[1:]...), ""}, // not TLS: not judged
		{"too big", "registry.test", withExtension(t, good, 0x1234, make([]byte, 17000)), "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tc.hello), 16<<10)
			reason, _ := checkFirstFlight(br, tc.host)
			if tc.want == "" && reason != "" || tc.want != "" && !bytes.Contains([]byte(reason), []byte(tc.want)) {
				t.Errorf("reason %q, want %q", reason, tc.want)
			}
			if br.Buffered() > 0 {
				if b, _ := br.Peek(br.Buffered()); !bytes.Equal(b, tc.hello[:len(b)]) {
					t.Error("the hello was consumed or changed")
				}
			}
		})
	}
}

// A tunnel to an allowed host whose ClientHello names another host (the
// fronting attack), names one for an IP, or hides it (ECH) never reaches
// the upstream: its record shows the connection got no byte. The matching
// hello goes through.
func TestTunnelSNIChecked(t *testing.T) {
	got := make(chan []byte, 10)
	port := rawServer(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	})
	p := startProxy(t, Options{
		Policy:   Policy{Rules: []Rule{mustRule(t, fmt.Sprintf("front.test:%d", port)), mustRule(t, fmt.Sprintf("127.0.0.1:%d", port))}},
		Resolver: resolver(map[string]string{"front.test": "127.0.0.1"}),
	})
	for _, tc := range []struct {
		name, target string
		hello        []byte
		ok           bool
	}{
		{"fronted", "front.test", realHello(t, "evil.test"), false},
		{"ech", "front.test", withExtension(t, realHello(t, "front.test"), extECH, []byte{1}), false},
		{"name for ip", "127.0.0.1", realHello(t, "evil.test"), false},
		{"no name", "front.test", realHello(t, ""), false},
		{"matching", "front.test", realHello(t, "front.test"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fmt.Sprintf("%s:%d", tc.target, port)
			resp, _, c, br := rawRequest(t, p.addr, "CONNECT "+a+" HTTP/1.1\r\nHost: "+a+"\r\n\r\n")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT: %s", resp.Status)
			}
			c.Write(tc.hello)
			c.(*net.TCPConn).CloseWrite()
			back, _ := io.ReadAll(br)
			c.Close()
			ev := p.event(t)
			up := <-got // the upstream connection ended; what did it get?
			if tc.ok {
				if !bytes.Equal(up, tc.hello) || !ev.Allowed {
					t.Errorf("upstream got %d bytes of %d; event %+v", len(up), len(tc.hello), ev)
				}
				return
			}
			if len(up) != 0 {
				t.Errorf("upstream got %d bytes", len(up))
			}
			if ev.Allowed || ev.Reason == "" || ev.BytesOut != 0 {
				t.Errorf("event %+v", ev)
			}
			if len(back) != 7 || back[0] != 21 {
				t.Errorf("client got %q, want a TLS alert", back)
			}
		})
	}
}
