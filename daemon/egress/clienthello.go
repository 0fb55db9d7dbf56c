package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
)

// A tunnel to an allowed host is a byte copy, and a shared front end (a
// CDN) routes TLS by the server name in the ClientHello, not by the address
// the proxy dialled: SNI evil.example inside a tunnel to an allowed host
// would reach evil.example. So before a tunnel carries the client's first
// byte upstream, the proxy reads the ClientHello (when the client speaks
// TLS) and requires its server name to be the tunnel's host, no name for an
// IP literal, and no encrypted ClientHello, whose real name it cannot see.

// errBadHello is a ClientHello the proxy cannot read with certainty.
var errBadHello = errors.New("malformed TLS ClientHello")

// TLS constants the reader needs (RFC 8446, RFC 6066, ECH draft).
const (
	recordHandshake   = 22
	handshakeHello    = 1
	extServerName     = 0
	extECH            = 0xfe0d
	extESNI           = 0xffce // the draft that ECH replaced
	maxRecordFragment = 1 << 14
)

// clientHello is what the proxy needs of a ClientHello.
type clientHello struct {
	sni    string // host_name of the server_name extension, as sent
	hasSNI bool
	ech    bool // an encrypted ClientHello (or its predecessor) is offered
}

// peekHello reads the ClientHello at the start of br without consuming it.
// It may span several records; it must fit in br's buffer (maxHeadBytes,
// 64 KiB, for the proxy's connections; real ones are a few hundred bytes to
// 2 KiB).
func peekHello(br *bufio.Reader) (*clientHello, error) {
	var msg []byte
	off := 0
	for {
		hdr, err := br.Peek(off + 5)
		if err != nil {
			return nil, helloPeekErr(err, br)
		}
		hdr = hdr[off:]
		n := int(binary.BigEndian.Uint16(hdr[3:5]))
		if hdr[0] != recordHandshake || hdr[1] != 3 || n == 0 || n > maxRecordFragment {
			return nil, fmt.Errorf("%w: not a handshake record", errBadHello)
		}
		rec, err := br.Peek(off + 5 + n)
		if err != nil {
			return nil, helloPeekErr(err, br)
		}
		msg = append(msg, rec[off+5:]...)
		off += 5 + n
		if len(msg) >= 4 {
			if msg[0] != handshakeHello {
				return nil, fmt.Errorf("%w: first handshake message is not a ClientHello", errBadHello)
			}
			if need := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])); len(msg) >= need {
				if len(msg) > need {
					// Another handshake message after the hello, in the
					// same flight: no client does this.
					return nil, fmt.Errorf("%w: trailing handshake data", errBadHello)
				}
				return parseHello(msg[4:])
			}
		}
	}
}

func helloPeekErr(err error, br *bufio.Reader) error {
	if errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("%w: larger than %d bytes", errBadHello, br.Size())
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: truncated", errBadHello)
	}
	return err
}

// parseHello reads a ClientHello body (after the handshake header). Every
// length must add up exactly, and no extension may appear twice: two
// server names would let the proxy check one and the server use the other.
func parseHello(b []byte) (*clientHello, error) {
	bad := func(what string) (*clientHello, error) {
		return nil, fmt.Errorf("%w: %s", errBadHello, what)
	}
	s := cursor(b)
	if _, ok := s.take(2 + 32); !ok { // legacy_version, random
		return bad("short")
	}
	if sid, ok := s.vec(1); !ok || len(sid) > 32 {
		return bad("session id")
	}
	if cs, ok := s.vec(2); !ok || len(cs) == 0 || len(cs)%2 != 0 {
		return bad("cipher suites")
	}
	if cm, ok := s.vec(1); !ok || len(cm) == 0 {
		return bad("compression methods")
	}
	h := &clientHello{}
	if len(s) == 0 {
		return h, nil // no extensions at all: no server name
	}
	exts, ok := s.vec(2)
	if !ok || len(s) != 0 {
		return bad("extensions length")
	}
	seen := map[uint16]bool{}
	for len(exts) > 0 {
		typ, ok1 := exts.u16()
		data, ok2 := exts.vec(2)
		if !ok1 || !ok2 {
			return bad("extension")
		}
		if seen[typ] {
			return bad(fmt.Sprintf("extension %#x twice", typ))
		}
		seen[typ] = true
		switch typ {
		case extECH, extESNI:
			h.ech = true
		case extServerName:
			list, ok := data.vec(2)
			if !ok || len(data) != 0 {
				return bad("server_name")
			}
			for len(list) > 0 {
				kind, ok1 := list.take(1)
				name, ok2 := list.vec(2)
				if !ok1 || !ok2 || kind[0] != 0 || len(name) == 0 || h.hasSNI {
					return bad("server_name entry")
				}
				h.sni, h.hasSNI = string(name), true
			}
		}
	}
	return h, nil
}

// cursor reads TLS vectors off the front of a byte slice.
type cursor []byte

func (c *cursor) take(n int) ([]byte, bool) {
	if len(*c) < n {
		return nil, false
	}
	out := (*c)[:n]
	*c = (*c)[n:]
	return out, true
}

func (c *cursor) u16() (uint16, bool) {
	b, ok := c.take(2)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(b), true
}

// vec takes a vector with a lenBytes-long length prefix.
func (c *cursor) vec(lenBytes int) (cursor, bool) {
	lb, ok := c.take(lenBytes)
	if !ok {
		return nil, false
	}
	n := 0
	for _, x := range lb {
		n = n<<8 | int(x)
	}
	v, ok := c.take(n)
	return cursor(v), ok
}

// helloVerdict says why a ClientHello may not go to host, or "".
func helloVerdict(h *clientHello, host string) string {
	if h.ech {
		return "encrypted ClientHello (ECH) hides the server name"
	}
	if _, err := netip.ParseAddr(host); err == nil {
		if h.hasSNI {
			return fmt.Sprintf("TLS server name %q in a tunnel to the address %s", h.sni, host)
		}
		return ""
	}
	if !h.hasSNI {
		return "no TLS server name in a tunnel to " + host
	}
	if n, err := checkHost(h.sni); err != nil || n != host {
		return fmt.Sprintf("TLS server name %q in a tunnel to %s", h.sni, host)
	}
	return ""
}

// checkFirstFlight reads the client's ClientHello, if its first byte says
// TLS, and returns why it must not go to host ("" if it may) and the alert
// to tell the client. A client that does not speak TLS is not judged here
// (an SSH or database tunnel).
func checkFirstFlight(br *bufio.Reader, host string) (string, byte) {
	first, err := br.Peek(1)
	if err != nil || first[0] != recordHandshake {
		return "", 0
	}
	h, err := peekHello(br)
	if err != nil {
		return err.Error(), alertIllegalParameter
	}
	return helloVerdict(h, host), alertUnrecognizedName
}

// tlsAlert is a fatal alert record, told to a client whose hello is
// refused so that its TLS library reports it rather than a bare EOF.
func tlsAlert(w io.Writer, desc byte) {
	w.Write([]byte{21, 3, 3, 0, 2, 2, desc}) //nolint:errcheck // the connection closes next
}

const (
	alertIllegalParameter = 47
	alertUnrecognizedName = 112
)

// guardedTunnel is tunnel with the ClientHello check: the server's bytes
// flow to the client at once (a protocol where the server speaks first
// must not wait), the client's only once its first flight was judged. It
// returns the counts and, when the hello was refused, why.
func guardedTunnel(client net.Conn, br *bufio.Reader, up net.Conn, host string) (out, in int64, reason string) {
	done := make(chan int64, 1)
	go func() {
		n, err := io.Copy(client, up)
		finishDirection(client, up, err)
		done <- n
	}()
	var alert byte
	if reason, alert = checkFirstFlight(br, host); reason != "" {
		tlsAlert(client, alert)
		client.Close()
		up.Close()
		return 0, <-done, reason
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		w, err := up.Write(b)
		out += int64(w)
		if err != nil {
			client.Close()
			up.Close()
			return out, <-done, ""
		}
		br.Discard(n) //nolint:errcheck // n bytes are buffered
	}
	n, err := io.Copy(up, client)
	finishDirection(up, client, err)
	return out + n, <-done, ""
}
