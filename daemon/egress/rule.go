package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Errors of ParseRule, for errors.Is: callers (configuration loading) tell
// the user which part of the rule is wrong.
var (
	ErrEmptyHost   = errors.New("empty host")
	ErrBadHost     = errors.New("bad host")
	ErrBadWildcard = errors.New("wildcard must be of the form *.example.com")
	ErrBadPort     = errors.New("bad port")
	ErrBadMethod   = errors.New("bad method")
)

// Rule allows connections to one host (or a family of hosts) on one port.
type Rule struct {
	// Host is "example.com" exact (case-insensitive, trailing dot ignored),
	// "*.example.com" any subdomain at any depth (not the apex), or an IP
	// literal (v4 or v6, without brackets).
	Host string
	// Port is 1-65535; 0 means any port.
	Port int
	// Methods are upper-case HTTP methods; empty means any. They hold on
	// every path: a tunnel to a host whose rules all name methods is
	// intercepted so that each request is checked, or refused when it
	// cannot be (methods.go).
	Methods []string
	// Source says where the rule comes from, for the audit.
	Source string
}

// ParseRule parses "HOST[:PORT] [METHOD[,METHOD...]]", for example
// "registry.npmjs.org:443 GET,HEAD", "*.github.com", "[::1]:8080" or
// "10.0.0.5:5432". Methods are accepted in any case and kept upper-case.
func ParseRule(s, source string) (Rule, error) {
	fields := strings.Fields(s)
	switch len(fields) {
	case 0:
		return Rule{}, fmt.Errorf("rule %q: %w", s, ErrEmptyHost)
	case 1, 2:
	default:
		return Rule{}, fmt.Errorf("rule %q: %w: spaces in host", s, ErrBadHost)
	}
	host, port, err := splitRuleHostPort(fields[0])
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	r := Rule{Host: host, Port: port, Source: source}
	if len(fields) == 2 {
		for m := range strings.SplitSeq(fields[1], ",") {
			m = strings.ToUpper(m)
			if !validMethod(m) {
				return Rule{}, fmt.Errorf("rule %q: %w %q", s, ErrBadMethod, m)
			}
			r.Methods = append(r.Methods, m)
		}
	}
	return r, nil
}

// splitRuleHostPort splits and validates the HOST[:PORT] part of a rule. An
// IPv6 literal needs brackets when a port follows; without a port it may be
// bare.
func splitRuleHostPort(hp string) (string, int, error) {
	var host, port string
	switch {
	case strings.HasPrefix(hp, "["):
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: missing ]", ErrBadHost)
		}
		host = hp[1:end]
		rest := hp[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return "", 0, fmt.Errorf("%w: text after ]", ErrBadHost)
			}
			port = rest[1:]
			if port == "" {
				return "", 0, fmt.Errorf("%w: empty", ErrBadPort)
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", 0, fmt.Errorf("%w: %q in brackets is not an IPv6 address", ErrBadHost, host)
		}
	case strings.Count(hp, ":") > 1:
		host = hp // bare IPv6 literal, no port
	case strings.Contains(hp, ":"):
		i := strings.LastIndexByte(hp, ':')
		host, port = hp[:i], hp[i+1:]
		if port == "" {
			return "", 0, fmt.Errorf("%w: empty", ErrBadPort)
		}
	default:
		host = hp
	}
	h, err := normalizeRuleHost(host)
	if err != nil {
		return "", 0, err
	}
	p := 0
	if port != "" {
		if p, err = parsePort(port); err != nil {
			return "", 0, err
		}
	}
	return h, p, nil
}

// normalizeRuleHost checks a rule's host and gives its canonical form.
func normalizeRuleHost(host string) (string, error) {
	if host == "" {
		return "", ErrEmptyHost
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("%w: zone in %q", ErrBadHost, host)
		}
		return a.String(), nil
	}
	if strings.Contains(host, ":") {
		return "", fmt.Errorf("%w: %q", ErrBadHost, host)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.Contains(host, "*") {
		suffix, ok := strings.CutPrefix(host, "*.")
		if !ok || strings.Contains(suffix, "*") || !validDNSName(suffix) {
			return "", fmt.Errorf("%w: %q", ErrBadWildcard, host)
		}
		return host, nil
	}
	if !validDNSName(host) {
		return "", fmt.Errorf("%w: %q", ErrBadHost, host)
	}
	return host, nil
}

// parsePort accepts decimal 1-65535 and nothing else (no sign, no spaces),
// so that "0" cannot silently mean "any port".
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, fmt.Errorf("%w: %q", ErrBadPort, s)
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q", ErrBadPort, s)
		}
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("%w: %q", ErrBadPort, s)
	}
	return p, nil
}

// validDNSName accepts lower-case host names: labels of letters, digits, '-'
// and '_' (used by some service names), 1-63 long, 253 in all.
func validDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

// validMethod accepts the upper-case letters that real HTTP methods are
// made of; anything else in a rule is a typo.
func validMethod(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for _, c := range []byte(m) {
		if c < 'A' || c > 'Z' {
			if c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

// String gives the rule back in ParseRule's syntax.
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(Hint(r.Host, r.Port))
	if len(r.Methods) > 0 {
		b.WriteByte(' ')
		b.WriteString(strings.Join(r.Methods, ","))
	}
	return b.String()
}

// Hint returns the rule string that would allow host:port, e.g.
// "example.com:443"; port 0 gives the host alone (any port).
func Hint(host string, port int) string {
	h := host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if port == 0 {
		return h
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
