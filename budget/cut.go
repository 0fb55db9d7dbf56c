package budget

// Head and Tail find the longest run of whole lines at one end of a text that
// fits a budget, tokenizing only about as much as fits: a 10 MB text costs the
// same as a 10 kB one.
//
// BPE tokens do not add up across a cut: where two pieces meet, the tokenizer
// may merge across the seam (a line "}\n" followed by an empty line "\n" is one
// token together, two apart). So the search works in three steps:
//
//  1. grow: take blocks of whole lines, sized from the tokens left and the bytes
//     per token seen so far, and add up their counts; a block that does not fit
//     is halved until a single line does not fit. A line only a token or two
//     over is counted together with what is taken, as it may merge into it;
//  2. settle: count the chosen run as one text; if it is over budget (merging
//     can also add tokens), search back to the longest run that fits;
//  3. extend: merging usually saves tokens, so grow again from the exact count,
//     a couple of rounds at most.
//
// A first (or last) line that does not fit is cut inside, by galloping then
// interpolating on its prefixes. Nothing longer than budget*MaxBytesPerToken
// bytes is ever counted.
//
// The token count returned is always that of the returned bytes counted as one
// text, and never more than the budget. "Longest" is what this search finds:
// on random text with multi-byte characters, long lines and runs of blank
// lines, one more line never fit (see TestHeadTailRandom).

// Head returns the length n of the longest prefix of text made of whole lines
// (each ending in '\n', the last one possibly not when it ends the text) whose
// token count is at most budget, and that count. If the first line alone does
// not fit, n cuts inside it, within a token of the longest prefix that fits,
// without splitting a UTF-8 character, so that paging by Head always makes
// progress; see MinBudget. n is at most budget*MaxBytesPerToken.
func (c *Counter) Head(text []byte, budget int) (n, tokens int) {
	return c.cut(newSide(text, false), budget)
}

// Tail is Head from the end: it returns start such that text[start:] is the
// longest run of whole lines at the end of text that fits budget, and its token
// count. If the last line alone does not fit, start cuts inside it.
func (c *Counter) Tail(text []byte, budget int) (start, tokens int) {
	k, tokens := c.cut(newSide(text, true), budget)
	return len(text) - k, tokens
}

// MaxBytesPerToken caps what Head and Tail return at budget*MaxBytesPerToken
// bytes. Code and logs run at about 4 bytes per token, indented YAML at under
// 10; only degenerate text (megabytes of spaces, 128 to a token) comes near the
// cap, and then a response holds fewer tokens than its budget allows. The cap
// bounds the work of every search by the budget whatever the text.
const MaxBytesPerToken = 32

// extendRounds bounds step 3: each round costs one more count of the whole run,
// and after two the slack left is a token or two.
const extendRounds = 2

// cut returns how many bytes to take from the side's end, and their tokens.
func (c *Counter) cut(s side, budget int) (int, int) {
	n := len(s.text)
	if n == 0 || budget <= 0 {
		return 0, 0
	}
	s.max = n
	if budget < n/MaxBytesPerToken {
		s.max = budget * MaxBytesPerToken
	}
	k, _, blocked := c.grow(s, 0, 0, budget)
	tokens := 0
	if k > 0 {
		var k1 int
		k1, tokens = c.settle(s, 0, 0, k, budget)
		blocked = blocked && k1 == k
		k = k1
	}
	for round := 0; k > 0 && k < n && !blocked && round < extendRounds; round++ {
		var k2 int
		k2, _, blocked = c.grow(s, k, tokens, budget)
		if k2 == k {
			break
		}
		k, tokens = c.settle(s, k, tokens, k2, budget)
	}
	if k == 0 {
		return c.cutInside(s, budget)
	}
	return k, tokens
}

// grow adds whole lines to the k bytes already taken (worth sum tokens) while
// the sum of the blocks' counts stays within budget. blocked reports that the
// next line was counted together with take(k) and does not fit, so growing
// again from k is pointless.
func (c *Counter) grow(s side, k, sum, budget int) (_, _ int, blocked bool) {
	chunk := estimate(k, sum, budget-sum, s.max)
	nearMisses := 0
	for k < s.max && sum <= budget {
		rem := budget - sum
		k2 := s.whole(k + min(chunk, s.max-k))
		single := s.next(k)
		if k2 <= k {
			k2 = single
		}
		if k2 > s.max {
			break // the next line alone is over the byte cap
		}
		t, over := c.countUpTo(s.block(k, k2), rem)
		if !over {
			k, sum = k2, sum+t
			chunk = estimate(k, sum, budget-sum, s.max)
			continue
		}
		if k2 != single {
			chunk = (k2 - k) / 2
			continue
		}
		// One line is a token or two over: at the seam it may merge with what
		// is taken (blank lines after "}\n" cost nothing), so count exactly.
		if t-rem > seamSlack || nearMisses == maxNearMisses {
			break
		}
		nearMisses++
		e := c.Count(s.take(k2))
		if e > budget {
			return k, sum, true
		}
		k, sum = k2, e
	}
	return k, sum, false
}

// seamSlack and maxNearMisses bound grow's exact counts of a line that is just
// over: each costs a count of all that is taken.
const (
	seamSlack     = 3
	maxNearMisses = 3
)

// estimate guesses how many bytes hold 90% of rem tokens, from the bytes per
// token of what was taken so far (3.5 before anything was: code and logs run at
// 3.5 to 4). Aiming a little short makes most blocks fit: a block over budget
// is counted for nothing.
func estimate(k, sum, rem, n int) int {
	bpt := 3.5
	if sum > 0 && k > 0 {
		bpt = float64(k) / float64(sum)
	}
	e := float64(rem) * bpt * 0.9
	if e > float64(n) {
		return n
	}
	return max(int(e), 64)
}

// settle returns the longest whole-line run of at most k bytes, and at least lo
// (known to fit, with loTokens), whose exact count fits budget.
func (c *Counter) settle(s side, lo, loTokens, k, budget int) (int, int) {
	t := c.Count(s.take(k))
	if t <= budget {
		return k, t
	}
	hi := k
	for {
		mid := s.whole(lo + (hi-lo)/2)
		if mid <= lo {
			mid = s.next(lo)
		}
		if mid >= hi {
			return lo, loTokens
		}
		if t := c.Count(s.take(mid)); t <= budget {
			lo, loTokens = mid, t
		} else {
			hi = mid
		}
	}
}

// cutInside handles a first (or last) line longer than the budget: it returns
// a piece of that line, cut between characters, that fits, and is within a
// token of the longest that does.
func (c *Counter) cutInside(s side, budget int) (int, int) {
	line := min(s.next(0), s.max)
	lo := s.firstRune()
	loTokens := c.Count(s.take(lo))
	if loTokens > budget {
		return 0, 0
	}
	// Gallop: double the step until a piece is over budget, so that only
	// pieces up to about twice the answer are counted.
	hi, hiTokens := line+1, 0
	for step := max(min(budget, s.max)*4, 16); lo < line; step *= 2 {
		k := s.align(min(lo+step, line))
		if k <= lo {
			k = lo + 1 // only invalid UTF-8 has no boundary here
		}
		t := c.Count(s.take(k))
		if t > budget {
			hi, hiTokens = k, t
			break
		}
		lo, loTokens = k, t
	}
	// Then home in on the piece worth budget tokens: interpolate on the bytes
	// per token between lo and hi, which on text of even density lands within
	// a few probes; bisect instead when that did not halve the range, so the
	// worst case stays logarithmic.
	bisect := false
	for hi-lo > 1 && loTokens < budget {
		guess := lo + (hi-lo)/2
		if !bisect && hiTokens > loTokens {
			guess = lo + int(int64(hi-lo)*int64(budget-loTokens)/int64(hiTokens-loTokens))
		}
		k := s.align(min(max(guess, lo+1), hi-1))
		if k <= lo {
			break
		}
		before := hi - lo
		if t := c.Count(s.take(k)); t <= budget {
			lo, loTokens = k, t
		} else {
			hi, hiTokens = k, t
		}
		bisect = hi-lo > before/2
	}
	return lo, loTokens
}

// CountUpTo is Count for a text that may be far over limit: it stops early
// once a prefix of b is over limit, and then reports over with a count that is
// only a lower bound. When over is false the count is exact. A 1 MB piece of
// output checked against a 1,000-token budget costs a few kilobytes of
// tokenizing instead of a megabyte's.
func (c *Counter) CountUpTo(b []byte, limit int) (n int, over bool) { return c.countUpTo(b, limit) }

// countUpTo counts b, but stops early once a prefix of b is already over
// limit, so that one long line (minified JSON, a progress bar) costs about as
// much as the budget, not as its length. The early answer assumes a longer text
// has no fewer tokens, true but for a token or two at the cut; it only decides
// that a line does not fit, and every answer Head gives is counted exactly.
func (c *Counter) countUpTo(b []byte, limit int) (int, bool) {
	// Text with 4 bytes or fewer per limit token cannot be cut short usefully.
	if len(b)/4 > limit {
		for p := max(limit*4, 256); p < len(b); p *= 2 {
			q := alignPrefix(b, p)
			if t := c.Count(b[:q]); t > limit {
				return t, true
			}
		}
	}
	t := c.Count(b)
	return t, t > limit
}
