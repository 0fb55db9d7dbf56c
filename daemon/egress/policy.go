package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Policy is the allowlist: a connection is allowed when one of its rules
// allows it; the order only decides which rule is reported.
type Policy struct{ Rules []Rule }

// Allow returns the first rule that allows host:port, and whether one does.
// method "" means unknown (a tunnel): rules' method lists are not checked
// then; a non-empty method must be in a rule's list (or the list empty).
func (p *Policy) Allow(host string, port int, method string) (Rule, bool) {
	host = normalizeHost(host)
	method = strings.ToUpper(method)
	for _, r := range p.Rules {
		if ruleMatches(r, host, port) && (method == "" || len(r.Methods) == 0 || slices.Contains(r.Methods, method)) {
			return r, true
		}
	}
	return Rule{}, false
}

// check is Allow with the reason for a refusal, phrased for the audit.
func (p *Policy) check(host string, port int, method string) (Rule, string, bool) {
	if r, ok := p.Allow(host, port, method); ok {
		return r, "", true
	}
	if method != "" {
		if r, ok := p.Allow(host, port, ""); ok {
			return Rule{}, fmt.Sprintf("method %s not allowed by rule %q", strings.ToUpper(method), r.String()), false
		}
	}
	return Rule{}, "no rule allows it", false
}

// ruleMatches reports whether r's host and port cover host:port; host is
// already normalized.
func ruleMatches(r Rule, host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	rh := normalizeHost(r.Host)
	if suffix, ok := strings.CutPrefix(rh, "*."); ok {
		if _, err := netip.ParseAddr(host); err == nil {
			return false
		}
		return len(host) > len(suffix)+1 && strings.HasSuffix(host, "."+suffix)
	}
	if ra, err := netip.ParseAddr(rh); err == nil {
		ha, err := netip.ParseAddr(host)
		return err == nil && ra.Unmap() == ha.Unmap()
	}
	return rh == host
}

// namesTarget reports whether r names the asked host itself rather than a
// family of hosts: only such a rule may open a loopback, private or
// link-local address, so that "*.example.com" cannot be turned into a path
// to 127.0.0.1 by whoever controls example.com's DNS.
func namesTarget(r Rule, host string, ip netip.Addr) bool {
	rh := normalizeHost(r.Host)
	if strings.HasPrefix(rh, "*.") {
		return false
	}
	if ra, err := netip.ParseAddr(rh); err == nil {
		return ra.Unmap() == ip.Unmap()
	}
	return rh == normalizeHost(host)
}

// normalizeHost gives the form hosts are compared in: lower case, no
// trailing dot, no IPv6 brackets, IP literals canonical.
func normalizeHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
