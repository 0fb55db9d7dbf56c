package egress

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		host    string
		port    int
		methods []string
		str     string
	}{
		{"registry.npmjs.org:443 GET,HEAD", "registry.npmjs.org", 443, []string{"GET", "HEAD"}, "registry.npmjs.org:443 GET,HEAD"},
		{"*.github.com", "*.github.com", 0, nil, "*.github.com"},
		{"[::1]:8080", "::1", 8080, nil, "[::1]:8080"},
		{"[::1]", "::1", 0, nil, "[::1]"},
		{"::1", "::1", 0, nil, "[::1]"},
		{"10.0.0.5:5432", "10.0.0.5", 5432, nil, "10.0.0.5:5432"},
		{"Example.COM.:80 get", "example.com", 80, []string{"GET"}, "example.com:80 GET"},
		{"  proxy.golang.org:443   ", "proxy.golang.org", 443, nil, "proxy.golang.org:443"},
		{"*.a.b.example.com:8443 POST", "*.a.b.example.com", 8443, []string{"POST"}, "*.a.b.example.com:8443 POST"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in, "test")
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if r.Host != tt.host || r.Port != tt.port || !slices.Equal(r.Methods, tt.methods) || r.Source != "test" {
			t.Errorf("ParseRule(%q) = %+v", tt.in, r)
		}
		if r.String() != tt.str {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tt.in, r.String(), tt.str)
		}
		back, err := ParseRule(r.String(), "test")
		if err != nil || back.String() != r.String() {
			t.Errorf("round trip of %q: %q, %v", r.String(), back.String(), err)
		}
	}
}

func TestParseRuleRefuses(t *testing.T) {
	tests := []struct {
		in  string
		err error
	}{
		{"", ErrEmptyHost},
		{"   ", ErrEmptyHost},
		{":443", ErrEmptyHost},
		{"example.com:", ErrBadPort},
		{"example.com:0", ErrBadPort},
		{"example.com:65536", ErrBadPort},
		{"example.com:-1", ErrBadPort},
		{"example.com:+80", ErrBadPort},
		{"example.com:http", ErrBadPort},
		{"example.com:443 GET,,HEAD", ErrBadMethod},
		{"example.com:443 G3T", ErrBadMethod},
		{"exa mple.com", ErrBadMethod},
		{"exa mple.com:443 GET", ErrBadHost},
		{"*", ErrBadWildcard},
		{"*:443", ErrBadWildcard},
		{"*example.com", ErrBadWildcard},
		{"foo.*.com", ErrBadWildcard},
		{"*.*.com", ErrBadWildcard},
		{"*.", ErrBadWildcard},
		{"exa/mple.com", ErrBadHost},
		{"user@example.com", ErrBadHost},
		{"[example.com]:443", ErrBadHost},
		{"[::1]x", ErrBadHost},
		{"[::1", ErrBadHost},
		{"fe80::1%eth0", ErrBadHost},
		{"a..b", ErrBadHost},
	}
	for _, tt := range tests {
		_, err := ParseRule(tt.in, "")
		if !errors.Is(err, tt.err) {
			t.Errorf("ParseRule(%q) error = %v, want %v", tt.in, err, tt.err)
		}
	}
}

func TestPolicyAllow(t *testing.T) {
	must := func(s string) Rule {
		r, err := ParseRule(s, "test")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p := Policy{Rules: []Rule{
		must("registry.npmjs.org:443 GET,HEAD"),
		must("*.github.com:443"),
		must("example.com"),
		must("10.0.0.5:5432"),
		must("[::1]:8080"),
	}}
	tests := []struct {
		host   string
		port   int
		method string
		rule   string // "" when refused
	}{
		{"registry.npmjs.org", 443, "", "registry.npmjs.org:443 GET,HEAD"},
		{"registry.npmjs.org", 443, "GET", "registry.npmjs.org:443 GET,HEAD"},
		{"Registry.NPMJS.org.", 443, "head", "registry.npmjs.org:443 GET,HEAD"},
		{"registry.npmjs.org", 443, "PUT", ""},
		{"registry.npmjs.org", 80, "GET", ""},
		{"api.github.com", 443, "POST", "*.github.com:443"},
		{"a.b.c.github.com", 443, "", "*.github.com:443"},
		{"github.com", 443, "", ""},
		{"evilgithub.com", 443, "", ""},
		{"api.github.com", 22, "", ""},
		{"example.com", 1, "DELETE", "example.com"},
		{"www.example.com", 80, "", ""},
		{"10.0.0.5", 5432, "", "10.0.0.5:5432"},
		{"::ffff:10.0.0.5", 5432, "", "10.0.0.5:5432"},
		{"10.0.0.6", 5432, "", ""},
		{"::1", 8080, "", "[::1]:8080"},
		{"[0:0::1]", 8080, "", "[::1]:8080"},
		{"127.0.0.1", 8080, "", ""},
	}
	for _, tt := range tests {
		r, ok := p.Allow(tt.host, tt.port, tt.method)
		if ok != (tt.rule != "") || (ok && r.String() != tt.rule) {
			t.Errorf("Allow(%q, %d, %q) = %q, %v; want %q", tt.host, tt.port, tt.method, r.String(), ok, tt.rule)
		}
	}
	if _, reason, _ := p.check("registry.npmjs.org", 443, "POST"); reason != `method POST not allowed by rule "registry.npmjs.org:443 GET,HEAD"` {
		t.Errorf("method reason = %q", reason)
	}
}

func TestHint(t *testing.T) {
	for _, tt := range []struct {
		host string
		port int
		want string
	}{{"example.com", 443, "example.com:443"}, {"::1", 80, "[::1]:80"}, {"::1", 0, "[::1]"}, {"a.b", 0, "a.b"}} {
		if got := Hint(tt.host, tt.port); got != tt.want {
			t.Errorf("Hint(%q, %d) = %q, want %q", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestAddrClass(t *testing.T) {
	for _, tt := range []struct{ ip, class string }{
		{"127.0.0.1", "loopback"}, {"127.255.0.9", "loopback"}, {"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, {"0.0.0.0", "unspecified"}, {"::", "unspecified"},
		{"169.254.169.254", "link-local"}, {"::ffff:169.254.169.254", "link-local"}, {"fe80::1", "link-local"},
		{"10.1.2.3", "private"}, {"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"192.168.1.1", "private"},
		{"fd00::1", "private"}, {"100.64.0.1", "CGNAT"}, {"224.0.0.1", "multicast"}, {"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"8.8.8.8", ""}, {"172.32.0.1", ""}, {"2606:4700::1111", ""}, {"100.128.0.1", ""},
	} {
		if got := addrClass(netip.MustParseAddr(tt.ip)); got != tt.class {
			t.Errorf("addrClass(%s) = %q, want %q", tt.ip, got, tt.class)
		}
	}
}
