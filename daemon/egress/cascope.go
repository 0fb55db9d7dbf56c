package egress

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// caScope is what the per-user CA may sign for, written into its
// certificate as name constraints (RFC 5280 4.2.1.10), which Go, OpenSSL
// (curl, Node, Python) and GnuTLS apply to a trust anchor: a certificate it
// signs for any other name is refused by the client whoever made it.
type caScope struct {
	dns []string     // "example.com" (it and its subdomains) or ".example.com" (subdomains only), sorted
	ips []netip.Addr // single addresses, sorted
}

// noDNSName is the one permitted DNS subtree of a CA that may sign for no
// name: under the reserved .invalid TLD (RFC 6761), which never resolves,
// since an empty permitted list would mean "any name".
const noDNSName = "contextd.invalid"

// parseScope turns hosts ("example.com", "*.example.com", IP literals) into
// a scope; duplicates and order do not matter.
func parseScope(hosts []string) (caScope, error) {
	var sc caScope
	for _, h := range hosts {
		n, err := normalizeRuleHost(h)
		if err != nil {
			return caScope{}, fmt.Errorf("egress CA: scope %q: %w", h, err)
		}
		if a, err := netip.ParseAddr(n); err == nil {
			sc.ips = append(sc.ips, a.Unmap())
			continue
		}
		if suffix, ok := strings.CutPrefix(n, "*."); ok {
			n = "." + suffix
		}
		sc.dns = append(sc.dns, n)
	}
	slices.Sort(sc.dns)
	sc.dns = slices.Compact(sc.dns)
	slices.SortFunc(sc.ips, netip.Addr.Compare)
	sc.ips = slices.Compact(sc.ips)
	return sc, nil
}

// constrain writes the scope into a CA template: the permitted DNS
// subtrees (at least the unusable one) and the permitted addresses, or,
// with none, every address excluded, both marked critical so that a client
// that cannot apply them refuses the CA rather than trusting it whole.
func (sc caScope) constrain(t *x509.Certificate) {
	t.PermittedDNSDomainsCritical = true
	t.PermittedDNSDomains = append([]string(nil), sc.dns...)
	if len(t.PermittedDNSDomains) == 0 {
		t.PermittedDNSDomains = []string{noDNSName}
	}
	for _, a := range sc.ips {
		t.PermittedIPRanges = append(t.PermittedIPRanges, &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())})
	}
	if len(sc.ips) == 0 {
		t.ExcludedIPRanges = []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		}
	}
}

// scopeOf reads the scope back from a CA certificate; a certificate
// without constraints (an older contextd's CA) gives a scope that equals
// none wanted, so it is replaced.
func scopeOf(c *x509.Certificate) caScope {
	if !c.PermittedDNSDomainsCritical || len(c.PermittedDNSDomains) == 0 {
		return caScope{dns: []string{"(unconstrained)"}}
	}
	var sc caScope
	if !slices.Equal(c.PermittedDNSDomains, []string{noDNSName}) {
		sc.dns = slices.Sorted(slices.Values(c.PermittedDNSDomains))
	}
	for _, n := range c.PermittedIPRanges {
		a, ok := netip.AddrFromSlice(n.IP)
		ones, bits := n.Mask.Size()
		if !ok || ones != bits {
			return caScope{dns: []string{"(not a contextd scope)"}}
		}
		sc.ips = append(sc.ips, a.Unmap())
	}
	if len(sc.ips) == 0 && len(c.ExcludedIPRanges) != 2 {
		return caScope{dns: []string{"(addresses not excluded)"}}
	}
	slices.SortFunc(sc.ips, netip.Addr.Compare)
	return sc
}

func (sc caScope) equal(o caScope) bool {
	return slices.Equal(sc.dns, o.dns) && slices.Equal(sc.ips, o.ips)
}

// permits reports whether host (normalized, as the proxy has it) is in the
// scope, by the rules clients apply to the constraints.
func (sc caScope) permits(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return slices.Contains(sc.ips, a.Unmap())
	}
	host = normalizeHost(host)
	for _, d := range sc.dns {
		if strings.HasPrefix(d, ".") {
			if len(host) > len(d) && strings.HasSuffix(host, d) {
				return true
			}
		} else if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// id is a short stable name of the scope, for file names.
func (sc caScope) id() string {
	h := sha256.New()
	for _, d := range sc.dns {
		fmt.Fprintf(h, "dns %s\n", d)
	}
	for _, a := range sc.ips {
		fmt.Fprintf(h, "ip %s\n", a)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// caFiles are the certificate and key files of one scope's CA.
type caFiles struct{ cert, key string }

func (sc caScope) files() caFiles {
	id := sc.id()
	return caFiles{cert: "ca-" + id + ".pem", key: "ca-" + id + "-key.pem"}
}
