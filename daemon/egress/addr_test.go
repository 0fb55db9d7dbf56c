package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// TestAddrClassSpecialPurpose: every range of the IANA special-purpose
// registries (and multicast) is not public, checked at both ends of the
// range, and the first addresses just outside stay public.
func TestAddrClassSpecialPurpose(t *testing.T) {
	special := []string{
		// IPv4
		"0.0.0.0", "0.255.255.255", "10.0.0.0", "10.255.255.255", "100.64.0.0", "100.127.255.255",
		"127.0.0.1", "169.254.169.254", "172.16.0.0", "172.31.255.255",
		"192.0.0.0", "192.0.0.8", "192.0.0.170", "192.0.0.255", // IETF protocol assignments
		"192.0.2.1", "198.51.100.7", "203.0.113.255", // documentation
		"192.31.196.1", "192.52.193.1", "192.88.99.1", "192.175.48.1", // AS112, AMT, 6to4 relay
		"192.168.1.1", "198.18.0.0", "198.19.255.255", // benchmarking
		"224.0.0.1", "239.255.255.255", "240.0.0.1", "255.255.255.255",
		// IPv6
		"::", "::1", "::2", "::7f00:1", "::ffff:0:7f00:1", // unspecified, loopback, IPv4-compatible, IPv4-translated
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", // NAT64
		"100::1", "100:0:0:1::1", // discard-only, dummy
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:1ff:ffff::1", "2001:2::1", "2001:db8::1", // Teredo, IETF, benchmarking, documentation
		"2002:7f00:1::1", "2002:a9fe:a9fe::1", // 6to4
		"2620:4f:8000::1", "3fff::1", "5f00::1", // AS112, documentation, SRv6
		"fc00::1", "fdff::1", "fe80::1", "febf::1", "fec0::1", "feff::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", // mapped forms of special IPv4
	}
	for _, s := range special {
		if c := addrClass(netip.MustParseAddr(s)); c == "" {
			t.Errorf("%s is classified public", s)
		}
	}
	public := []string{
		"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "192.0.1.0", "192.0.3.0", "192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0", "223.255.255.255", "104.16.0.1",
		"2606:4700::1111", "2a00:1450:4001::1", "2001:200::1", "2001:4860:4860::8888", "2620:4f:7fff::1",
		"::ffff:1.1.1.1", "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "64:ff9b:0:0:0:1::",
	}
	for _, s := range public {
		if c := addrClass(netip.MustParseAddr(s)); c != "" {
			t.Errorf("%s is classified %q, want public", s, c)
		}
	}
}

// TestSpecialPurposeRefusedThroughProxy: a name under a wildcard rule that
// resolves to an address embedding the host's loopback or the metadata
// service (NAT64, 6to4, IPv4-compatible) is refused with the class named,
// and nothing is dialled.
func TestSpecialPurposeRefusedThroughProxy(t *testing.T) {
	var mu sync.Mutex
	var dialled []string
	p := startProxy(t, Options{
		Policy: Policy{Rules: []Rule{mustRule(t, "*.attacker.test")}},
		Resolver: resolver(map[string]string{
			"nat64.attacker.test":   "64:ff9b::7f00:1",
			"local64.attacker.test": "64:ff9b:1::a9fe:a9fe",
			"sixto4.attacker.test":  "2002:a9fe:a9fe::1",
			"compat.attacker.test":  "::7f00:1",
			"ietf.attacker.test":    "192.0.0.170",
			"bench.attacker.test":   "198.18.0.1",
			"site.attacker.test":    "fec0::1",
			"teredo.attacker.test":  "2001:0:4136:e378:8000:63bf:3fff:fdd2",
		}),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, addr)
			mu.Unlock()
			return nil, fmt.Errorf("test: no network")
		},
	})
	for _, name := range []string{"nat64", "local64", "sixto4", "compat", "ietf", "bench", "site", "teredo"} {
		target := name + ".attacker.test:443"
		resp, body, _, _ := rawRequest(t, p.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		if resp.StatusCode != 403 || !strings.Contains(body, "is not named by a rule") {
			t.Errorf("CONNECT %s: %d %q, want 403 naming the address class", target, resp.StatusCode, body)
		}
		p.event(t)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialled) != 0 {
		t.Errorf("the proxy dialled %v", dialled)
	}
}
