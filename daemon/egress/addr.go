package egress

import (
	"fmt"
	"net/netip"
)

// specialNets are the address ranges that are not the public Internet: the
// IANA IPv4 and IPv6 special-purpose address registries (RFC 6890 and its
// updates, as of 2025), multicast, and the deprecated forms that embed an
// IPv4 address or reach a local network. A sandbox may reach one only
// through a rule that names the target itself (checkAddr), never through a
// name whose DNS someone else controls. Ranges marked "globally reachable"
// by IANA (AS112, AMT, NAT64's well-known prefix, Teredo) are here too: no
// registry lives there, and several of them carry an IPv4 address inside
// that a translator on the host's network would turn into a loopback or
// private one. Checked on the unmapped address, so IPv4-mapped IPv6 forms
// of an IPv4 range are covered. The first entry that contains an address
// names its class, so narrower ranges come before the wider ones around
// them.
var specialNets = []struct {
	class  string
	prefix netip.Prefix
}{
	// IPv4 (iana-ipv4-special-registry).
	{"unspecified", netip.MustParsePrefix("0.0.0.0/8")},         // "this network", RFC 791
	{"private", netip.MustParsePrefix("10.0.0.0/8")},            // RFC 1918
	{"CGNAT", netip.MustParsePrefix("100.64.0.0/10")},           // shared address space, RFC 6598
	{"loopback", netip.MustParsePrefix("127.0.0.0/8")},          // RFC 1122
	{"link-local", netip.MustParsePrefix("169.254.0.0/16")},     // RFC 3927; cloud metadata lives here
	{"private", netip.MustParsePrefix("172.16.0.0/12")},         // RFC 1918
	{"IETF protocol", netip.MustParsePrefix("192.0.0.0/24")},    // RFC 6890: DS-Lite, NAT64 discovery, PCP/TURN anycast
	{"documentation", netip.MustParsePrefix("192.0.2.0/24")},    // TEST-NET-1, RFC 5737
	{"AS112", netip.MustParsePrefix("192.31.196.0/24")},         // AS112-v4 anycast DNS sink, RFC 7535
	{"AMT", netip.MustParsePrefix("192.52.193.0/24")},           // multicast tunnelling relays, RFC 7450
	{"6to4 relay", netip.MustParsePrefix("192.88.99.0/24")},     // deprecated 6to4 relay anycast, RFC 7526
	{"private", netip.MustParsePrefix("192.168.0.0/16")},        // RFC 1918
	{"AS112", netip.MustParsePrefix("192.175.48.0/24")},         // direct delegation AS112, RFC 7534
	{"benchmarking", netip.MustParsePrefix("198.18.0.0/15")},    // RFC 2544; used by some VPNs and proxies as local fake IPs
	{"documentation", netip.MustParsePrefix("198.51.100.0/24")}, // TEST-NET-2, RFC 5737
	{"documentation", netip.MustParsePrefix("203.0.113.0/24")},  // TEST-NET-3, RFC 5737
	{"multicast", netip.MustParsePrefix("224.0.0.0/4")},         // RFC 5771
	{"reserved", netip.MustParsePrefix("240.0.0.0/4")},          // RFC 1112; includes broadcast 255.255.255.255

	// IPv6 (iana-ipv6-special-registry).
	{"unspecified", netip.MustParsePrefix("::/128")},              // RFC 4291
	{"loopback", netip.MustParsePrefix("::1/128")},                // RFC 4291
	{"IPv4-compatible", netip.MustParsePrefix("::/96")},           // deprecated, RFC 4291: ::a.b.c.d
	{"IPv4-translated", netip.MustParsePrefix("::ffff:0:0:0/96")}, // SIIT, RFC 2765: ::ffff:0:a.b.c.d
	{"NAT64", netip.MustParsePrefix("64:ff9b::/96")},              // well-known NAT64 prefix, RFC 6052: embeds an IPv4 address
	{"NAT64", netip.MustParsePrefix("64:ff9b:1::/48")},            // local-use NAT64, RFC 8215
	{"discard-only", netip.MustParsePrefix("100::/64")},           // RFC 6666
	{"dummy", netip.MustParsePrefix("100:0:0:1::/64")},            // dummy prefix, RFC 9780
	{"Teredo", netip.MustParsePrefix("2001::/32")},                // RFC 4380: embeds an IPv4 server and client
	{"benchmarking", netip.MustParsePrefix("2001:2::/48")},        // RFC 5180
	{"IETF protocol", netip.MustParsePrefix("2001::/23")},         // RFC 2928: AMT, AS112, ORCHID, DET and the rest
	{"documentation", netip.MustParsePrefix("2001:db8::/32")},     // RFC 3849
	{"6to4", netip.MustParsePrefix("2002::/16")},                  // RFC 3056: embeds an IPv4 address
	{"AS112", netip.MustParsePrefix("2620:4f:8000::/48")},         // direct delegation AS112, RFC 7534
	{"documentation", netip.MustParsePrefix("3fff::/20")},         // RFC 9637
	{"SRv6", netip.MustParsePrefix("5f00::/16")},                  // segment routing SIDs, RFC 9602
	{"private", netip.MustParsePrefix("fc00::/7")},                // unique local, RFC 4193
	{"link-local", netip.MustParsePrefix("fe80::/10")},            // RFC 4291
	{"site-local", netip.MustParsePrefix("fec0::/10")},            // deprecated, RFC 3879; still routed locally by some stacks
	{"multicast", netip.MustParsePrefix("ff00::/8")},              // RFC 4291
}

// addrClass returns the class of a special address ("loopback",
// "link-local", "NAT64", ...), or "" for an ordinary public address.
func addrClass(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	for _, n := range specialNets {
		if n.prefix.Contains(ip) {
			return n.class
		}
	}
	return ""
}

// checkAddr refuses a special address unless rule names the asked host; the
// reason names the class and the address.
func checkAddr(r Rule, host string, ip netip.Addr) (string, bool) {
	class := addrClass(ip)
	if class == "" || namesTarget(r, host, ip) {
		return "", true
	}
	return fmt.Sprintf("%s address %s is not named by a rule", class, ip.Unmap()), false
}
