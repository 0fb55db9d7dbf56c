package egress

import (
	"fmt"
	"net/netip"
)

// specialNets are the address ranges a sandbox must not reach through a
// name it does not control: the host's own services, the local network and
// cloud metadata endpoints. Checked on the unmapped address, so IPv4-mapped
// IPv6 forms are covered too.
var specialNets = []struct {
	class  string
	prefix netip.Prefix
}{
	{"loopback", netip.MustParsePrefix("127.0.0.0/8")},
	{"loopback", netip.MustParsePrefix("::1/128")},
	{"unspecified", netip.MustParsePrefix("0.0.0.0/8")},
	{"unspecified", netip.MustParsePrefix("::/128")},
	{"link-local", netip.MustParsePrefix("169.254.0.0/16")},
	{"link-local", netip.MustParsePrefix("fe80::/10")},
	{"private", netip.MustParsePrefix("10.0.0.0/8")},
	{"private", netip.MustParsePrefix("172.16.0.0/12")},
	{"private", netip.MustParsePrefix("192.168.0.0/16")},
	{"private", netip.MustParsePrefix("fc00::/7")},
	{"CGNAT", netip.MustParsePrefix("100.64.0.0/10")},
	{"multicast", netip.MustParsePrefix("224.0.0.0/4")},
	{"multicast", netip.MustParsePrefix("ff00::/8")},
	{"reserved", netip.MustParsePrefix("240.0.0.0/4")}, // includes broadcast 255.255.255.255
}

// addrClass returns the class of a special address ("loopback",
// "link-local", ...), or "" for an ordinary public address.
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
