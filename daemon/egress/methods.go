package egress

import (
	"fmt"
	"strings"
)

// A rule that names methods ("registry.npmjs.org:443 GET,HEAD") is a
// promise about every request to its host, so it must hold on every path
// there: the proxy sees plain-HTTP requests anyway, and a tunnel (CONNECT,
// SOCKS5, a host-loopback forward) to such a host is opened only with its
// requests in view: TLS terminated with the per-user CA, or plain HTTP read
// as it comes. A protocol that is neither is refused by the request parser.
// Without a CA there is no way to look inside, so the tunnel is refused
// rather than opened opaque.

// methodsOnly reports whether every rule that covers host:port limits
// methods, so that a tunnel there must be seen to be allowed. A rule
// without methods covering the same host leaves the tunnel opaque: it
// allows any request anyway.
func (p *Policy) methodsOnly(host string, port int) bool {
	host = normalizeHost(host)
	limited := false
	for _, r := range p.Rules {
		if !ruleMatches(r, host, port) {
			continue
		}
		if len(r.Methods) == 0 {
			return false
		}
		limited = true
	}
	return limited
}

// tunnelView decides how a tunnel to host:port is served: intercepted
// (see) or copied opaque; ref is set when it may not be opened at all.
func (s *Server) tunnelView(host string, port int) (see bool, ref *refusal) {
	if s.intercepts(host, port) {
		return true, nil
	}
	if !s.o.Policy.methodsOnly(host, port) {
		return false, nil
	}
	if s.o.CA == nil {
		r, _ := s.o.Policy.Allow(host, port, "")
		return false, &refusal{kind: refusedPolicy, reason: fmt.Sprintf(
			"rule %q limits methods to %s, and without the per-user CA the proxy cannot see the requests of a tunnel",
			r.String(), strings.Join(r.Methods, ","))}
	}
	return true, nil
}
