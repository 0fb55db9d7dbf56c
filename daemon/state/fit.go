package state

import (
	"strings"

	"github.com/contextd/contextd/budget"
)

// row is one line of a listing: a prefix kept whole (an id, a score, a date)
// and a text that may be cut to make the listing fit.
type row struct {
	prefix, text string
}

// minText is the fewest tokens of a row's text a cut listing still shows;
// below it a row is dropped instead (budget.Head makes progress from 4).
const minText = 8

// fitRows renders rows one per line within limit tokens, counted as one text
// with c. When all of them do not fit whole, every text is cut to the same
// number of tokens (short ones stay whole), the largest number that fits, and
// a cut text ends in "…"; when even minText tokens each do not fit, rows are
// dropped from the end and more(n), a last line, says how many. With no room
// even for one row it returns what fits of the first.
//
// Tokenizing is slow next to everything else here (about 1 MB/s), so the
// search adds up the counts of single rows, cached, and only the result is
// counted whole: where rows meet the tokenizer may merge or split a token,
// and the cut is tightened until the whole fits.
func fitRows(c *budget.Counter, rows []row, limit int, more func(dropped int) string) string {
	full := render(c, rows, -1, "")
	if c.Count([]byte(full)) <= limit {
		return full
	}
	type key struct{ row, cap int }
	type piece struct {
		text   string
		tokens int
	}
	cuts := map[key]piece{}
	cutAt := func(i, capTok int) piece {
		if p, ok := cuts[key{i, capTok}]; ok {
			return p
		}
		t := cutTokens(c, rows[i].text, capTok)
		p := piece{t, c.Count([]byte(t))}
		cuts[key{i, capTok}] = p
		return p
	}
	fixed := make([]int, len(rows)) // prefix and newline
	longest := minText
	for i, r := range rows {
		fixed[i] = c.Count([]byte(r.prefix)) + 1
		longest = max(longest, c.Count([]byte(r.text)))
	}
	tail := func(k int) string {
		if k == len(rows) {
			return ""
		}
		return more(len(rows) - k)
	}
	estimate := func(k, capTok int) int {
		n := c.Count([]byte(tail(k)))
		for i := range k {
			n += fixed[i] + cutAt(i, capTok).tokens
		}
		return n
	}
	// The most rows that fit at minText each, then the largest cut.
	lo, hi := 0, len(rows)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if estimate(mid, minText) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	k := max(lo, 1)
	capLo, capHi := minText, longest
	for capLo < capHi {
		mid := (capLo + capHi + 1) / 2
		if estimate(k, mid) <= limit {
			capLo = mid
		} else {
			capHi = mid - 1
		}
	}
	capTok := capLo
	for {
		var b strings.Builder
		for i := range k {
			b.WriteString(rows[i].prefix)
			b.WriteString(cutAt(i, capTok).text)
			b.WriteByte('\n')
		}
		b.WriteString(tail(k))
		out := b.String()
		n := c.Count([]byte(out))
		switch {
		case n <= limit:
			return out
		case capTok > minText:
			capTok = max(minText, capTok-max(1, (n-limit)/k))
		case k > 1:
			k--
		default:
			cut, _ := c.Head([]byte(out), limit)
			return out[:cut]
		}
	}
}

// render writes rows, each text cut to capTok tokens (< 0: whole), then tail.
func render(c *budget.Counter, rows []row, capTok int, tail string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.prefix)
		b.WriteString(cutTokens(c, r.text, capTok))
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	return b.String()
}

// cutTokens returns s cut to at most capTok tokens plus "…" (capTok < 0:
// s whole).
func cutTokens(c *budget.Counter, s string, capTok int) string {
	if capTok < 0 {
		return s
	}
	n, _ := c.Head([]byte(s), capTok)
	if n >= len(s) {
		return s
	}
	return strings.TrimRight(s[:n], " \t—-,;:") + "…"
}
