package scrub

import (
	"bytes"
	"cmp"
	"slices"
)

// ruleID names a candidate's rule.
func (s *Scrubber) ruleID(c cand) string {
	switch c.rule {
	case ownEnv:
		return RuleEnvCredential
	case ownURL:
		return RuleURLCredential
	}
	return s.rules[c.rule].id
}

// rank orders rules for naming a merged span: a specific gitleaks rule says the most
// about the secret, generic-api-key the least.
func (s *Scrubber) rank(c cand) int {
	if c.rule < 0 {
		return 1
	}
	if isGeneric(s.rules[c.rule].id) {
		return 0
	}
	return 2
}

// resolve turns candidates into findings: placeholders already in b are cut out, skipped
// auxiliary rules dropped, overlapping spans merged.
func (s *Scrubber) resolve(b []byte, cands []cand) []Finding {
	if len(cands) == 0 {
		return nil
	}
	cands = cutPlaceholders(b, cands)
	// A total order, so that the result does not depend on which worker found what.
	slices.SortFunc(cands, func(x, y cand) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		if c := cmp.Compare(y.end, x.end); c != 0 {
			return c
		}
		if c := cmp.Compare(s.rank(y), s.rank(x)); c != 0 {
			return c
		}
		return cmp.Compare(s.ruleID(x), s.ruleID(y))
	})
	var out []Finding
	for i := 0; i < len(cands); {
		best := cands[i]
		end := best.end
		j := i + 1
		for ; j < len(cands) && cands[j].start < end; j++ {
			c := cands[j]
			end = max(end, c.end)
			if rb, rc := s.rank(best), s.rank(c); rc > rb || rc == rb && c.end-c.start > best.end-best.start {
				best = c
			}
		}
		out = append(out, Finding{Rule: s.ruleID(best), Start: cands[i].start, End: end, Secret: string(b[cands[i].start:end])})
		i = j
	}
	return out
}

// cutPlaceholders removes from each candidate the placeholders it overlaps, keeping the
// rest of its span: text that is already a placeholder must never be reported (scrubbing
// is idempotent), but the secret bytes around one must still be.
func cutPlaceholders(b []byte, cands []cand) []cand {
	phs := placeholderSpans(b)
	if len(phs) == 0 {
		return cands
	}
	out := cands[:0:0]
	for _, c := range cands {
		// First placeholder that ends after c starts.
		k, _ := slices.BinarySearchFunc(phs, c.start, func(p span, x int) int {
			if p.end <= x {
				return -1
			}
			return 1
		})
		if k == len(phs) || phs[k].start >= c.end {
			out = append(out, c)
			continue
		}
		pos := c.start
		for ; k < len(phs) && phs[k].start < c.end; k++ {
			if phs[k].start > pos {
				part := c
				part.start, part.end = pos, phs[k].start
				out = append(out, part)
			}
			pos = max(pos, phs[k].end)
		}
		if pos < c.end {
			part := c
			part.start = pos
			out = append(out, part)
		}
	}
	return out
}

// placeholderSpans finds every placeholder in b, in order.
func placeholderSpans(b []byte) []span {
	var out []span
	for off := 0; ; {
		i := bytes.Index(b[off:], placeholderPrefix)
		if i < 0 {
			return out
		}
		i += off
		if n := placeholderLen(b[i:]); n > 0 {
			out = append(out, span{i, i + n})
			off = i + n
			continue
		}
		off = i + 1
	}
}
