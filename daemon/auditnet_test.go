package daemon

import (
	"testing"

	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/sandboxinfo"
)

// A call's audit record names the egress proxy its process had in its own
// network namespace, and where the rules come from; the lines meant for
// the caller are not among what the record gets.
func TestAuditNet(t *testing.T) {
	sum := &netview.Summary{RulesFrom: "/home/u/.config/contextd/config.toml",
		Connections: []sandboxinfo.Connection{{Host: "example.com", Port: 443, Reason: "no rule allows it"}},
		Lines:       []string{"egress refused example.com:443: no rule allows it; to allow it, ..."}}
	ns := sandboxinfo.Layers{Namespaces: true, Seccomp: "embedded:safe_bash.json"}
	for _, c := range []struct {
		name  string
		l     sandboxinfo.Layers
		sum   *netview.Summary
		want  string
		conns int
	}{
		{"through the proxy", ns, sum, "egress proxy", 1},
		{"no proxy", ns, nil, "none", 0},
		{"host network", sandboxinfo.Layers{Namespaces: true, Network: true}, nil, "host", 0},
		{"no process ran", sandboxinfo.Layers{}, &netview.Summary{RulesFrom: "x"}, "", 0},
	} {
		sb, conns := auditNet(c.l, c.sum)
		if sb.NetworkMode() != c.want || len(conns) != c.conns || sb.Layers != c.l {
			t.Errorf("%s: network %q, %d connections, layers %+v; want %q, %d", c.name, sb.NetworkMode(), len(conns), sb.Layers, c.want, c.conns)
		}
	}
	if sb, _ := auditNet(ns, sum); sb.EgressRules != sum.RulesFrom {
		t.Errorf("the rules come from %q, want %q", sb.EgressRules, sum.RulesFrom)
	}
}
