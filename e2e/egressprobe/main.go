// Command egressprobe is the attacker the e2e suite runs inside a sandbox
// against the egress proxy: it streams a request whose line or one header
// is huge through each way out, or holds many connections open, and prints
// what the proxy answered. Built static and copied into the test's
// workspace by e2e/attack_egress_limits_test.go.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

const proxy = "127.0.0.1:3128"

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: egressprobe MODE HOST:PORT SIZE|COUNT")
		os.Exit(64)
	}
	mode, target := os.Args[1], os.Args[2]
	n, err := strconv.ParseInt(os.Args[3], 10, 64)
	if err != nil {
		fail(err)
	}
	if mode == "conns" {
		conns(target, int(n))
		return
	}
	host, _, _ := net.SplitHostPort(target)
	big := hugeHead{n: n}
	var c io.ReadWriter
	switch mode {
	case "line": // a request line of n bytes to the proxy
		c = dial(proxy)
		big.prefix, big.suffix = "GET http://"+target+"/", " HTTP/1.1\r\nHost: "+target+"\r\n\r\n"
	case "header": // one header of n bytes in a plain proxy request
		c = dial(proxy)
		big.prefix, big.suffix = "GET http://"+target+"/ HTTP/1.1\r\nHost: "+target+"\r\nX-Big: ", "\r\n\r\n"
	case "connect-line": // a CONNECT line of n bytes
		c = dial(proxy)
		big.prefix, big.suffix = "CONNECT "+target, " HTTP/1.1\r\n\r\n"
	case "connect-tls": // a header of n bytes inside TLS after CONNECT
		pc := dial(proxy)
		fmt.Fprintf(pc, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(pc)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != 200 {
			fail(fmt.Errorf("CONNECT: %v %v", resp, err))
		}
		c = tlsOver(pc, host)
		big.prefix, big.suffix = "GET / HTTP/1.1\r\nHost: "+target+"\r\nX-Big: ", "\r\n\r\n"
	case "socks-tls": // a header of n bytes inside TLS after SOCKS5
		c = tlsOver(socks(target), host)
		big.prefix, big.suffix = "GET / HTTP/1.1\r\nHost: "+target+"\r\nX-Big: ", "\r\n\r\n"
	case "socks-plain": // a request line of n bytes inside SOCKS5
		c = socks(target)
		big.prefix, big.suffix = "GET /", " HTTP/1.1\r\nHost: "+target+"\r\n\r\n"
	case "forward": // a header of n bytes straight to the forwarded port
		c = dial(target)
		big.prefix, big.suffix = "GET / HTTP/1.1\r\nHost: "+target+"\r\nCookie: ", "\r\n\r\n"
	case "forward-tls":
		c = tlsOver(dial(target), host)
		big.prefix, big.suffix = "GET / HTTP/1.1\r\nHost: "+target+"\r\nCookie: ", "\r\n\r\n"
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	go big.writeTo(c)
	answer(c)
}

// hugeHead streams prefix, n bytes of 'a', suffix, holding 32 KiB.
type hugeHead struct {
	prefix, suffix string
	n              int64
}

func (h hugeHead) writeTo(w io.Writer) {
	io.WriteString(w, h.prefix)
	chunk := []byte(strings.Repeat("a", 32<<10))
	for left := h.n; left > 0; left -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
			return
		}
	}
	io.WriteString(w, h.suffix)
}

// answer prints the status line and the body of the response on r.
func answer(r io.Reader) {
	resp, err := http.ReadResponse(bufio.NewReader(r), nil)
	if err != nil {
		fmt.Println("probe: no answer:", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("probe: %s\n%s", resp.Status, b)
}

func dial(addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fail(err)
	}
	return c
}

// tlsOver speaks TLS to host over c, trusting SSL_CERT_FILE (the sandbox's
// bundle, which holds contextd's CA).
func tlsOver(c net.Conn, host string) net.Conn {
	tc := tls.Client(c, &tls.Config{ServerName: host})
	if err := tc.Handshake(); err != nil {
		fail(fmt.Errorf("TLS: %v", err))
	}
	return tc
}

// socks opens target through the proxy's SOCKS5 (the name or address given
// to the proxy).
func socks(target string) net.Conn {
	host, port, _ := net.SplitHostPort(target)
	p, _ := strconv.Atoi(port)
	c := dial(proxy)
	c.Write([]byte{5, 1, 0})
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil || sel[1] != 0 {
		fail(fmt.Errorf("SOCKS5 greeting: %v %v", sel, err))
	}
	req := []byte{5, 1, 0}
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		req = append(append(req, 1), ip.To4()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(p))
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil || rep[1] != 0 {
		fail(fmt.Errorf("SOCKS5 connect: reply %d %v", rep[1], err))
	}
	return c
}

// conns opens n CONNECT tunnels to target one after another, holding each
// one that was opened, and prints how many were opened and the first
// refusal.
func conns(target string, n int) {
	var held []net.Conn
	refused, first := 0, ""
	for range n {
		c := dial(proxy)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err == nil && resp.StatusCode == 200 {
			held = append(held, c)
			continue
		}
		refused++
		if first == "" {
			if err != nil {
				first = "error: " + err.Error()
			} else {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				first = resp.Status + " " + string(b)
			}
		}
		c.Close()
	}
	fmt.Printf("probe: opened=%d refused=%d\nfirst refusal: %s\n", len(held), refused, first)
	for _, c := range held {
		c.Close()
	}
}

func fail(err error) {
	fmt.Println("probe:", err)
	os.Exit(1)
}
