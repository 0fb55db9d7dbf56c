package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
)

// intercept serves a confirmed tunnel to a host with credentials as visible
// requests. The first byte tells the client's protocol: a TLS handshake
// (0x16) is terminated with a leaf certificate from the CA once its
// ClientHello names the host, anything else is taken as plain HTTP (a
// forwarded plain-http registry port), into which only credentials of an
// http:// origin are put. It returns the
// byte counts of the requests relayed and why the tunnel ended early, if it
// did.
func (s *Server) intercept(ctx context.Context, c net.Conn, br *bufio.Reader, up net.Conn, via, host string, port int) (out, in int64, reason string) {
	first, err := br.Peek(1)
	if err != nil {
		return 0, 0, ""
	}
	ss := newSession(ctx, s, via, c, br)
	ss.fixed, ss.host, ss.port, ss.intercepted = true, host, port, true
	if first[0] == recordHandshake {
		leaf, err := s.o.CA.leaf(host)
		if err != nil {
			return 0, 0, "leaf certificate: " + err.Error()
		}
		tc := tls.Server(&bufConn{Conn: c, r: br}, &tls.Config{
			Certificates: []tls.Certificate{*leaf},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		})
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, 0, "tls handshake with sandbox: " + err.Error()
		}
		ss.client, ss.br = tc, newHeadReader(tc)
		ss.cbw.Reset(tc)
		ss.upTLS = true
	}
	ss.startFixed(up)
	defer ss.close()
	for {
		req, err := s.readRequest(ss.cbw, ss.client, ss.br, via, host, port)
		if err != nil {
			malformed(ss.cbw, err)
			break
		}
		if !ss.handle(req) {
			break
		}
	}
	return ss.out, ss.in, ""
}
