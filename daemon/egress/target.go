package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// errBadTarget is returned for a CONNECT authority or SOCKS5 address the
// proxy will not act on.
var errBadTarget = errors.New("bad target")

// parseConnectTarget parses a CONNECT authority, "host:port" or
// "[v6]:port", into a normalized host (lower case, no trailing dot, no
// brackets) and a port 1-65535.
func parseConnectTarget(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %v", errBadTarget, s, err)
	}
	bracketed := strings.HasPrefix(s, "[")
	if bracketed {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", 0, fmt.Errorf("%w: %q: brackets hold no IPv6 address", errBadTarget, s)
		}
	}
	host, err := checkHost(h)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %v", errBadTarget, s, err)
	}
	if !bracketed && strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("%w: %q: IPv6 address without brackets", errBadTarget, s)
	}
	port, err := parsePort(p)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %v", errBadTarget, s, err)
	}
	return host, port, nil
}

// checkHost accepts a host the proxy may be asked for: an IP literal without
// zone, or a DNS name; it returns the normalized form.
func checkHost(h string) (string, error) {
	if h == "" {
		return "", ErrEmptyHost
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("%w: zone in %q", ErrBadHost, h)
		}
		return a.String(), nil
	}
	n := strings.TrimSuffix(strings.ToLower(h), ".")
	if !validDNSName(n) {
		return "", fmt.Errorf("%w: %q", ErrBadHost, h)
	}
	return n, nil
}
