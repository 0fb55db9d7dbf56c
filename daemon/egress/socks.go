package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
)

// SOCKS5 (RFC 1928) constants the proxy uses.
const (
	socksVersion      = 0x05
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xFF
	socksCmdConnect   = 0x01
	socksAtypIPv4     = 0x01
	socksAtypDomain   = 0x03
	socksAtypIPv6     = 0x04

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksCmdNotSupported  = 0x07
	socksAtypNotSupported = 0x08
)

var (
	errSOCKSFormat  = errors.New("socks5: malformed message")
	errSOCKSCommand = errors.New("socks5: command not supported")
	errSOCKSAtyp    = errors.New("socks5: address type not supported")
)

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	cmd  byte
	host string // normalized: a DNS name or an IP literal
	port int
}

// readSOCKSGreeting reads the method-selection message and reports whether
// it offers "no authentication", the only method the proxy speaks (the
// sandbox is the only client, so there is nothing to authenticate).
func readSOCKSGreeting(r io.Reader) (bool, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return false, err
	}
	if hdr[0] != socksVersion || hdr[1] == 0 {
		return false, errSOCKSFormat
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readSOCKSRequest reads one request. A well-formed request with another
// command than CONNECT is returned with errSOCKSCommand, so the caller can
// answer 0x07; an unknown address type gives errSOCKSAtyp.
func readSOCKSRequest(r io.Reader) (socksRequest, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return socksRequest{}, err
	}
	if hdr[0] != socksVersion || hdr[2] != 0 {
		return socksRequest{}, errSOCKSFormat
	}
	req := socksRequest{cmd: hdr[1]}
	switch hdr[3] {
	case socksAtypIPv4, socksAtypIPv6:
		n := 4
		if hdr[3] == socksAtypIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return socksRequest{}, err
		}
		a, _ := netip.AddrFromSlice(b)
		req.host = a.Unmap().String()
	case socksAtypDomain:
		var l [1]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return socksRequest{}, err
		}
		name := make([]byte, l[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return socksRequest{}, err
		}
		h, err := checkHost(string(name))
		if err != nil {
			return socksRequest{}, errSOCKSFormat
		}
		req.host = h
	default:
		return socksRequest{}, errSOCKSAtyp
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return socksRequest{}, err
	}
	req.port = int(binary.BigEndian.Uint16(p[:]))
	if req.port == 0 {
		return socksRequest{}, errSOCKSFormat
	}
	if req.cmd != socksCmdConnect {
		return req, errSOCKSCommand
	}
	return req, nil
}

// socksReply writes a reply with an unspecified bound address: clients of a
// CONNECT do not need it, and it would tell the sandbox about the host.
func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func (s *Server) handleSOCKS(ctx context.Context, c net.Conn, br *bufio.Reader) {
	ok, err := readSOCKSGreeting(br)
	if err != nil {
		return
	}
	if !ok {
		c.Write([]byte{socksVersion, socksNoAcceptable}) //nolint:errcheck // closing anyway
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	req, err := readSOCKSRequest(br)
	switch {
	case errors.Is(err, errSOCKSCommand):
		socksReply(c, socksCmdNotSupported) //nolint:errcheck // closing anyway
		return
	case errors.Is(err, errSOCKSAtyp):
		socksReply(c, socksAtypNotSupported) //nolint:errcheck // closing anyway
		return
	case err != nil:
		socksReply(c, socksGeneralFailure) //nolint:errcheck // closing anyway
		return
	}
	s.handleTunnel(ctx, c, br, "socks5", req.host, req.port, func(ref *refusal) error {
		if ref == nil {
			return socksReply(c, socksSucceeded)
		}
		code := byte(socksGeneralFailure)
		switch ref.kind {
		case refusedPolicy:
			code = socksNotAllowed
		case refusedResolve:
			code = socksHostUnreachable
		case refusedDialRefused:
			code = socksConnRefused
		case refusedDial:
			code = socksHostUnreachable
		}
		return socksReply(c, code)
	})
}
