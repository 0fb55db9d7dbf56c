package audit

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/contextd/contextd/sandboxinfo"
)

// NetworkText says which network the record's call (or wrapped server) had,
// for a person: "none", "host", or "egress proxy (rules: SOURCE)"; "" when
// the record does not say. A record written before the proxy was named has
// the network "none" (a server's egress record no sandbox member at all)
// and still lists the connections made through it: it reads as the proxy
// with its rules not recorded.
func (r *Record) NetworkText() string {
	s := r.Sandbox
	if len(r.Egress) > 0 && s.EgressRules == "" && !(s.Namespaces && s.Network) {
		s.EgressRules = rulesNotRecorded
	}
	mode := s.NetworkMode()
	if mode == NetworkEgress {
		return mode + " (rules: " + s.EgressRules + ")"
	}
	return mode
}

// ConnectionText is one connection on one line, for a person and for the
// journal: what was asked for, allowed by which rule (and where the rule
// comes from) or refused and why, and what went through.
//
//	GET registry.npmjs.org:443 allowed by registry.npmjs.org GET,HEAD (npm registry (default)), via connect, intercepted, 310B out, 48.2kB in
//	example.com:443 refused: no rule allows it, via connect
func ConnectionText(c sandboxinfo.Connection) string {
	var b strings.Builder
	if c.Method != "" {
		b.WriteString(c.Method)
		b.WriteByte(' ')
	}
	switch {
	case c.Host != "":
		b.WriteString(net.JoinHostPort(c.Host, strconv.Itoa(c.Port)))
	case c.Port != 0:
		b.WriteString("?:" + strconv.Itoa(c.Port))
	default:
		b.WriteString("a request") // refused by a limit before its target was read
	}
	switch {
	case c.Allowed:
		b.WriteString(" allowed")
		if c.Rule != "" {
			b.WriteString(" by " + c.Rule)
		}
		if c.Source != "" {
			b.WriteString(" (" + c.Source + ")")
		}
	case c.Leak:
		b.WriteString(" blocked (credential leak): " + orUnknown(c.Reason))
	default:
		b.WriteString(" refused: " + orUnknown(c.Reason))
	}
	if c.Via != "" {
		b.WriteString(", via " + c.Via)
	}
	if c.Intercepted {
		b.WriteString(", intercepted")
	}
	if c.Injected > 0 {
		fmt.Fprintf(&b, ", %d credential(s) put back", c.Injected)
	}
	if c.BytesOut > 0 {
		b.WriteString(", " + size(c.BytesOut) + " out")
	}
	if c.BytesIn > 0 {
		b.WriteString(", " + size(c.BytesIn) + " in")
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

// refusedCount is how many of cs were not allowed.
func refusedCount(cs []sandboxinfo.Connection) int {
	n := 0
	for _, c := range cs {
		if !c.Allowed {
			n++
		}
	}
	return n
}
