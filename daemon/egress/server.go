package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Credential is a secret that may be sent to one host only, and only where
// it belongs in a request (creds.go).
type Credential struct {
	Placeholder string // what the sandbox sees in place of Secret
	Secret      string
	Host        string // exact host it belongs to
	Port        int    // 0: the scheme's default, 443 (80 with Cleartext)
	Source      string // "~/.npmrc", "env GITHUB_TOKEN"
	// Cleartext: the credential names an http:// origin, so it may be put
	// into a request the proxy sends unencrypted. Otherwise only into
	// requests it sends over TLS.
	Cleartext bool
	// Header is the request header the credential is sent in; "":
	// Authorization (Bearer, token, or inside Basic).
	Header string
	// InTarget and InBody let the secret also be put into the request
	// target (query, path) and into a body; off, a placeholder there is
	// sent as it is.
	InTarget, InBody bool
}

// Event is one connection (tunnel) or one request (plain HTTP, intercepted
// TLS), reported when it ends. An intercepted tunnel gives one event for the
// tunnel (Method "") and one for each request in it.
type Event struct {
	Time        time.Time
	Via         string // "http", "connect", "socks5", "forward"
	Host        string
	Port        int
	Method      string // "" when tunnelled
	Allowed     bool
	Rule        string // String() of the rule that allowed it; "" when refused
	Reason      string // why refused or failed, one short phrase
	Leak        bool   // refused because a credential placeholder was sent to another host
	Intercepted bool   // TLS terminated by the proxy
	Injected    int    // credentials put back into the request
	BytesOut    int64  // sandbox -> upstream
	BytesIn     int64  // upstream -> sandbox
}

// Options configure a Server.
type Options struct {
	Policy      Policy
	Credentials []Credential
	// CA signs leaf certificates for intercepted hosts; nil: nothing is
	// intercepted (hosts with credentials are then tunnelled without
	// injection).
	CA *CA
	// RootCAs verifies upstream TLS of intercepted hosts; nil: system roots.
	RootCAs *x509.CertPool
	// Resolver resolves names; nil: net.DefaultResolver.
	Resolver func(ctx context.Context, host string) ([]net.IP, error)
	// Dial opens upstream connections; it is always given an IP address.
	// nil: net.Dialer with a 30s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnEvent is called once per connection/request when it ends; it may be
	// called from many goroutines.
	OnEvent func(Event)
	Log     *slog.Logger
	// Limits bound buffers and connections; zero fields take the defaults.
	Limits Limits
}

// Server is the egress proxy of one sandbox.
type Server struct {
	o     Options
	log   *slog.Logger
	conns connCount
}

// NewServer returns a server; o is not changed afterwards.
func NewServer(o Options) *Server {
	if o.Resolver == nil {
		o.Resolver = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		}
	}
	if o.Dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second}
		o.Dial = d.DialContext
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{o: o, log: log}
}

// Serve accepts on ln until ln is closed or ctx ends, and serves each
// connection as an HTTP/1.1 proxy (CONNECT and absolute-form requests, with
// keep-alive) or SOCKS5, told apart by the first byte (0x05). ln is closed
// when ctx ends. When Serve returns (nil, once ctx ended or ln closed), every
// connection it opened is closed and its goroutines have ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, func(ctx context.Context, c net.Conn) { s.handleConn(ctx, c) }, s.overLimit)
}

// ServeForward serves every connection of ln as if it had asked CONNECT
// target ("host:port"): for a service on the host's loopback that the
// sandbox reaches at the same address inside. A refused connection is
// closed; the event says why.
func (s *Server) ServeForward(ctx context.Context, ln net.Listener, target string) error {
	host, port, err := parseConnectTarget(target)
	if err != nil {
		return err
	}
	return s.serve(ctx, ln, func(ctx context.Context, c net.Conn) {
		// 64 KiB (maxHeadBytes): room for a ClientHello too.
		s.handleTunnel(ctx, c, newHeadReader(c), "forward", host, port, nil)
	}, s.overLimitForward(host, port))
}

// serve accepts on ln and runs handle for each connection, or over for one
// beyond the call's connection limit (a few at a time; the rest are closed
// at once).
func (s *Server) serve(ctx context.Context, ln net.Listener, handle, over func(context.Context, net.Conn)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: wait a little rather
			// than spin, as net/http does.
			s.log.Warn("egress: accept", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		run, refused := handle, false
		if !s.conns.admit(s.o.Limits.maxConns()) {
			if s.conns.refusing.Add(1) > maxRefusing {
				s.conns.refusing.Add(-1)
				if n := s.conns.dropped.Add(1); n == 1 || n%1000 == 0 {
					s.log.Warn("egress: connections over the limit closed unanswered", "count", n, "limit", s.o.Limits.maxConns())
				}
				c.Close()
				continue
			}
			run, refused = over, true
		}
		wg.Go(func() {
			defer func() {
				if refused {
					s.conns.refusing.Add(-1)
				} else {
					s.conns.open.Add(-1)
				}
			}()
			cctx, ccancel := context.WithCancel(ctx)
			defer ccancel()
			closeOnDone(cctx, c)
			defer c.Close()
			run(cctx, c)
		})
	}
}

// closeOnDone closes c when ctx ends, which unblocks any read or write on
// it; that is how cancellation reaches connections.
func closeOnDone(ctx context.Context, c io.Closer) {
	context.AfterFunc(ctx, func() { c.Close() })
}

func (s *Server) emit(ev Event) {
	if ev.Allowed {
		s.log.Debug("egress", "via", ev.Via, "host", ev.Host, "port", ev.Port, "method", ev.Method, "rule", ev.Rule, "out", ev.BytesOut, "in", ev.BytesIn)
	} else {
		s.log.Info("egress refused", "via", ev.Via, "host", ev.Host, "port", ev.Port, "method", ev.Method, "reason", ev.Reason, "leak", ev.Leak)
	}
	if s.o.OnEvent != nil {
		s.o.OnEvent(ev)
	}
}

// refusal says why a connection was not opened, and which kind of failure it
// is, for the status the client gets.
type refusal struct {
	kind   refusalKind
	reason string
	hint   string // rule that would allow it, for policy refusals
}

type refusalKind int

const (
	refusedPolicy refusalKind = iota
	refusedResolve
	refusedDialRefused
	refusedDial
)

// open applies the policy to host:port (method "" for tunnels), resolves
// host, checks every address and dials the first allowed one that answers.
// The address dialled is the address checked: nothing is resolved twice.
func (s *Server) open(ctx context.Context, host string, port int, method string) (net.Conn, Rule, *refusal) {
	rule, reason, ok := s.o.Policy.check(host, port, method)
	if !ok {
		hint := Hint(host, port)
		if method != "" && reason != "no rule allows it" {
			hint += " " + method
		}
		return nil, Rule{}, &refusal{kind: refusedPolicy, reason: reason, hint: hint}
	}
	addrs, err := s.resolve(ctx, host)
	if err != nil {
		return nil, rule, &refusal{kind: refusedResolve, reason: "resolve: " + shortErr(err)}
	}
	var firstRefusal string
	var dialErr error
	for _, a := range addrs {
		if why, ok := checkAddr(rule, host, a); !ok {
			if firstRefusal == "" {
				firstRefusal = why
			}
			continue
		}
		c, err := s.o.Dial(ctx, "tcp", net.JoinHostPort(a.String(), strconv.Itoa(port)))
		if err == nil {
			return c, rule, nil
		}
		if dialErr == nil {
			dialErr = err
		}
	}
	if dialErr != nil {
		kind := refusedDial
		if errors.Is(dialErr, syscall.ECONNREFUSED) {
			kind = refusedDialRefused
		}
		return nil, rule, &refusal{kind: kind, reason: "dial: " + shortErr(dialErr)}
	}
	if firstRefusal == "" {
		firstRefusal = "resolve: no addresses"
		return nil, rule, &refusal{kind: refusedResolve, reason: firstRefusal}
	}
	return nil, rule, &refusal{kind: refusedPolicy, reason: firstRefusal, hint: Hint(host, port)}
}

// resolve gives the addresses of host; an IP literal is its own address.
func (s *Server) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	ips, err := s.o.Resolver(ctx, host)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no addresses")
	}
	return out, nil
}

// shortErr keeps the part of a network error a user can act on ("no such
// host", "connection refused") and drops addresses and syscall names.
func shortErr(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host"
		}
		return dns.Err
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// finishDirection ends one copy direction: a clean end is passed on as a
// half-close of dst; a failure closes both connections so the other
// direction ends too.
func finishDirection(dst, src net.Conn, err error) {
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}
