package scrub

import (
	"bytes"
	"sort"
)

// applyRequired implements gitleaks' composite rules ([[rules.required]]) and skipReport:
// a finding of a rule with required rules is kept only if each required rule also matched
// within the given lines and columns (anywhere in the input when no bound is given), and
// then the required rules' secrets are hidden too. Rules with skipReport only ever serve
// as required rules.
func (s *Scrubber) applyRequired(b []byte, cands []cand) []cand {
	byRule := map[int32][]cand{}
	for _, c := range cands {
		if c.rule >= 0 && s.rules[c.rule].required == nil {
			byRule[c.rule] = append(byRule[c.rule], c)
		}
	}
	var nl []int // newline offsets, built on first use
	pos := func(p int) (line, col int) {
		if nl == nil {
			nl = append(nl, -1)
			for i := 0; ; {
				j := bytes.IndexByte(b[i:], '\n')
				if j < 0 {
					break
				}
				nl = append(nl, i+j)
				i += j + 1
			}
		}
		k := sort.SearchInts(nl, p) - 1
		return k, p - nl[k]
	}
	out := cands[:0:0]
	for _, c := range cands {
		if c.rule < 0 {
			out = append(out, c)
			continue
		}
		r := s.rules[c.rule]
		if len(r.required) == 0 {
			if !r.skipReport || c.aux {
				out = append(out, c)
			}
			continue
		}
		if r.skipReport && !c.aux {
			continue
		}
		line, col := pos(c.mstart)
		var aux []cand
		ok := true
		for _, rq := range r.required {
			ri, known := s.index[rq.id]
			found := false
			for _, x := range byRule[ri] {
				if !known {
					break
				}
				xl, xc := pos(x.mstart)
				if rq.withinLines != nil && abs(xl-line) > *rq.withinLines {
					continue
				}
				if rq.withinColumns != nil && abs(xc-col) > *rq.withinColumns {
					continue
				}
				found = true
				x.aux = true
				aux = append(aux, x)
			}
			if !found {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, c)
			out = append(out, aux...)
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
