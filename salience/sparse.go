package salience

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// The sparse scan: the failures of a text that is whole in memory (the
// middle of a file safe_read does not send), found without passing every
// line through the rules. Every trigger (a Failure rule that can start a
// block: not Follow) needs a literal in its line, its Contains or its
// Prefix; a line that holds none of them cannot start a block. So the
// text is searched for those literals (prefixes at each line start; the
// others by vectorized searches for a few anchor bytes, chosen per text so
// that they are rare in it and cover every literal), each line that holds one is
// tried against the literal's rules, and a Scanner is run only over windows
// around the lines that pass, wide enough that it sees what it would see
// scanning everything: the context before (maxContext lines) and every line
// a block may hold after (MaxBlockLines). Lines the literals cannot vouch
// for (escape sequences and carriage returns, which the Scanner strips;
// lines longer than MaxMatchLine) are always windowed. Between windows the
// Scanner skips. TestSparseMatchesFull checks the blocks against a full
// scan.

// trigger is a literal that a Failure rule's line must hold, and the
// rules that need it.
type trigger struct {
	lit   string
	rules []uint16
	// col0: every rule wants an unindented line, so one that starts with
	// a blank is turned away before its end is looked for.
	col0 bool
}

// sparseIndex is a Set's triggers; ok is false when some trigger has no
// literal (a user rule that is only a pattern), and the sparse scan must
// read every line.
//
// Triggers whose literal is a prefix (a line that starts with it, after
// its indentation) are looked for at the start of every line, by their
// first byte: many are short and made of common bytes ("E ", "___",
// "error "), and one pass over the line starts costs the same whatever the
// text. The others (Contains) are searched for by anchor bytes.
type sparseIndex struct {
	ok       bool
	trig     []trigger // Contains
	prefixed [256][]uint16
}

func (s *Set) buildSparse() {
	x := &s.sparse
	x.ok = true
	at := map[string]int{}
	for i, r := range s.rules {
		if r.Kind != Failure || r.Follow {
			continue
		}
		if r.Prefix != "" {
			// At the line's start, whatever else the rule wants.
			b := r.Prefix[0]
			x.prefixed[b] = append(x.prefixed[b], uint16(i))
			continue
		}
		lit := r.Contains
		if lit == "" {
			x.ok = false
			return
		}
		k, seen := at[lit]
		if !seen {
			k = len(x.trig)
			at[lit] = k
			x.trig = append(x.trig, trigger{lit: lit, col0: true})
		}
		x.trig[k].rules = append(x.trig[k].rules, uint16(i))
		x.trig[k].col0 = x.trig[k].col0 && r.Col0
	}
}

// anchorPlan is which bytes to search a text for, and for each the
// triggers it stands for and where in their literals it sits.
type anchorPlan struct {
	bytes []byte
	by    [256][]anchored
	// next and prev are, by anchor, the bytes its literals have right
	// after (or, for an anchor that ends its literal, right before) it: a
	// hit with neither is turned away at once. any marks an anchor that is
	// a whole literal.
	next, prev [256]*[4]uint64
	any        [256]bool
}

func setBit(m **[4]uint64, b byte) {
	if *m == nil {
		*m = new([4]uint64)
	}
	(*m)[b>>6] |= 1 << (b & 63)
}

func hasBit(m *[4]uint64, b byte) bool { return m != nil && m[b>>6]&(1<<(b&63)) != 0 }

// anchored is a place of an anchor byte in a trigger's literal, with the
// literal's byte next to it (c2, at d2 from it; d2 0 for a one-byte
// literal), checked before the whole literal is.
type anchored struct {
	trig, off, d2 int
	c2            byte
}

// Costs, in nanoseconds: searchCost per byte of text for one more
// vectorized search of a cache-resident segment (on the development VM,
// 2026-11-26, 20 searches of 10 MB in 64 KiB segments took 6.7 ms, one
// 1.9 ms), and hitCost per hit of it (the search restarted, the literal and
// the line tried; profiled at 30-60 ns, taken high so that a common byte
// is chosen only when nothing rarer covers its literals).
const (
	searchCost = 0.025
	hitCost    = 60.0
)

// planAnchors chooses the bytes to search text for: a few, rare in this
// text, that between them are in every trigger's literal. Byte frequencies
// come from a sample of the text; the choice is greedy set cover, each
// step taking the byte with the lowest cost per trigger newly covered.
func (x *sparseIndex) planAnchors(text []byte) *anchorPlan {
	var freq [256]float64
	const pieces, piece = 32, 4 << 10
	sampled := 0
	step := max(len(text)/pieces, piece)
	for off := 0; off < len(text); off += step {
		for _, b := range text[off:min(off+piece, len(text))] {
			freq[b]++
		}
		sampled += min(piece, len(text)-off)
	}
	n := float64(len(text))
	var cost [256]float64
	for b := range cost {
		// A byte not in the sample is still counted as if seen once.
		cost[b] = searchCost*n + hitCost*n*(freq[b]+1)/float64(sampled+1)
	}
	covered := make([]bool, len(x.trig))
	left := len(x.trig)
	p := &anchorPlan{}
	var chosen [256]bool
	for left > 0 {
		var gain [256]int
		for k, t := range x.trig {
			if covered[k] {
				continue
			}
			var seen [256]bool
			for i := 0; i < len(t.lit); i++ {
				if b := t.lit[i]; !seen[b] {
					seen[b] = true
					gain[b]++
				}
			}
		}
		best, bestScore := -1, 0.0
		for b, g := range gain {
			if g > 0 && (best < 0 || cost[b]/float64(g) < bestScore) {
				best, bestScore = b, cost[b]/float64(g)
			}
		}
		chosen[best] = true
		p.bytes = append(p.bytes, byte(best))
		for k, t := range x.trig {
			if !covered[k] && strings.IndexByte(t.lit, byte(best)) >= 0 {
				covered[k] = true
				left--
			}
		}
	}
	// Each trigger under its cheapest chosen byte.
	for k, t := range x.trig {
		best := -1
		for i := 0; i < len(t.lit); i++ {
			if b := int(t.lit[i]); chosen[b] && (best < 0 || cost[b] < cost[best]) {
				best = b
			}
		}
		for i := 0; i < len(t.lit); i++ {
			if int(t.lit[i]) != best {
				continue
			}
			a := anchored{trig: k, off: i}
			switch {
			case i+1 < len(t.lit):
				a.d2, a.c2 = 1, t.lit[i+1]
				setBit(&p.next[best], a.c2)
			case i > 0:
				a.d2, a.c2 = -1, t.lit[i-1]
				setBit(&p.prev[best], a.c2)
			default:
				a.c2 = t.lit[i] // the anchor itself
				p.any[best] = true
			}
			p.by[best] = append(p.by[best], a)
		}
	}
	return p
}

// sparseWindow is how far a window reaches around a trigger line: every
// line of context a rule may want before it, and every line a block that
// starts there may hold.
const (
	windowBefore = maxContext
	windowAfter  = MaxBlockLines + 1
)

// ScanFailures returns what a Scanner (not Numbered) fed text would return
// for its Failure blocks: Blocks, Total, DroppedFrom/To, Lines and Bytes are
// the same. Summary, Passing and Quiet cover only the parts it read.
func (s *Set) ScanFailures(text []byte) *Result {
	sc := s.NewScanner()
	if !s.sparse.ok {
		sc.Write(text)
		return sc.Close()
	}
	lines, ok := s.triggerLines(text)
	if !ok {
		sc.Write(text)
		return sc.Close()
	}
	// Windows, merged where they overlap or touch, fed to the Scanner;
	// what lies between is skipped, its lines counted.
	cur := 0 // text[:cur] is done
	ws, we := -1, -1
	flush := func() {
		if ws < 0 {
			return
		}
		if ws > cur {
			sc.Skip(int64(ws-cur), int64(bytes.Count(text[cur:ws], []byte{'\n'})))
		}
		sc.Write(text[ws:we])
		cur = we
	}
	for _, ls := range lines {
		a := linesBack(text, ls, windowBefore)
		e := linesForward(text, ls, windowAfter)
		if ws >= 0 && a <= we {
			we = max(we, e)
			continue
		}
		flush()
		ws, we = a, e
	}
	flush()
	if cur < len(text) {
		// The last line goes through the Scanner, so that one without
		// '\n' is counted as Close counts it.
		last := bytes.LastIndexByte(text[:len(text)-1], '\n') + 1
		if last < cur {
			last = cur
		}
		if last > cur {
			sc.Skip(int64(last-cur), int64(bytes.Count(text[cur:last], []byte{'\n'})))
		}
		sc.Write(text[last:])
	}
	return sc.Close()
}

// maxTriggerLines bounds, per byte of text, the lines triggerLines may
// find before the sparse scan gives up for a full one: past it, windows
// would cover most of the text anyway (a log coloured on every line).
const maxTriggerLines = 1.0 / 2048

// sparseSegment is how much of the text all anchors are searched in before
// the next part: the searches after the first find it in cache.
const sparseSegment = 64 << 10

// triggerLines returns the starts of the lines of text that may start a
// block, in order; ok is false when there are so many that a full scan is
// cheaper.
//
// A long text is searched in two halves at once (the halves meet at a line
// start, and a line belongs to the half it starts in): the search is most
// of the sparse scan's time, and a safe_read that runs it has the machine's
// cores to itself.
func (s *Set) triggerLines(text []byte) (starts []int, ok bool) {
	p := s.sparse.planAnchors(text)
	limit := int(float64(len(text))*maxTriggerLines) + 64
	if len(text) < parallelFrom || runtime.GOMAXPROCS(0) < 2 {
		starts, ok = s.triggerRange(text, 0, len(text), p, limit)
	} else {
		mid := len(text) / 2
		if i := bytes.IndexByte(text[mid:], '\n'); i >= 0 {
			mid += i + 1
		} else {
			mid = len(text)
		}
		var second []int
		var ok2 bool
		var failed any
		done := make(chan struct{})
		go func() {
			defer close(done)
			// A fault here (a mapped file cut short under its reader) is
			// raised again in the caller's goroutine, where the caller may
			// have asked for faults to be recoverable (debug.SetPanicOnFault
			// holds per goroutine).
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() { failed = recover() }()
			if testHookHalf != nil {
				testHookHalf()
			}
			second, ok2 = s.triggerRange(text, mid, len(text), p, limit/2)
		}()
		starts, ok = func() ([]int, bool) {
			// Even when this half panics, the other must end first: the
			// text may be a mapping the caller releases as it unwinds.
			defer func() { <-done }()
			return s.triggerRange(text, 0, mid, p, limit/2)
		}()
		if failed != nil {
			panic(failed)
		}
		ok = ok && ok2
		starts = append(starts, second...)
	}
	if !ok {
		return nil, false
	}
	slices.Sort(starts)
	return slices.Compact(starts), true
}

// testHookHalf, when set, runs in the goroutine that searches the second
// half (a test makes it fail there).
var testHookHalf func()

// parallelFrom is the length of text from which triggerLines searches two
// halves at once; below it a goroutine costs more than it saves.
const parallelFrom = 1 << 20

// triggerRange is triggerLines for the lines that start in text[from:to]
// (from is a line start).
//
// Every pass works on a segment at a time, and none reads a line twice
// over: each goes on from where it left off in the last segment (past the
// end of the last line it found, which may lie segments ahead), and the
// bounds of the line an anchor hit is on, and the triggers already tried on
// it, are kept (lineCache). A text of one 10 MB line costs what one of many
// lines does.
func (s *Set) triggerRange(text []byte, from, to int, p *anchorPlan, limit int) (starts []int, ok bool) {
	x := &s.sparse
	lineAt := from // the next line start of the line pass
	// resume is where each of the other passes goes on: the escape and
	// carriage-return passes, then the anchors'.
	resume := make([]int, 2+len(p.bytes))
	var lc lineCache
	found := func(ls int) {
		if n := len(starts); n == 0 || starts[n-1] != ls {
			starts = append(starts, ls)
		}
	}
	for seg := from; seg < to; seg += sparseSegment {
		segEnd := min(seg+sparseSegment, to)
		// The lines that start in the segment, for the prefixed triggers.
		for lineAt < segEnd {
			ls := lineAt
			e := len(text)
			if k := bytes.IndexByte(text[ls:], '\n'); k >= 0 {
				e = ls + k
			}
			lineAt = e + 1
			line := text[ls:e]
			t := trimIndent(line)
			if len(t) > 0 && len(x.prefixed[t[0]]) > 0 && s.prefixStarts(line, t) {
				found(ls)
			}
		}
		// Lines the Scanner sees otherwise than they are.
		for i, c := range []byte{0x1b, '\r'} {
			off := max(seg, resume[i])
			for off < segEnd {
				j := bytes.IndexByte(text[off:segEnd], c)
				if j < 0 {
					break
				}
				ls, le := lc.bounds(text, off+j)
				found(ls)
				off = le + 1
			}
			resume[i] = off
		}
		for i, b := range p.bytes {
			off := max(seg, resume[2+i])
			for off < segEnd {
				j := bytes.IndexByte(text[off:segEnd], b)
				if j < 0 {
					break
				}
				pos := off + j
				off = pos + 1
				if !p.any[b] && (pos+1 >= len(text) || !hasBit(p.next[b], text[pos+1])) &&
					(pos == 0 || !hasBit(p.prev[b], text[pos-1])) {
					continue
				}
				if s.tryAnchor(text, pos, p.by[b], &lc) {
					found(lc.ls)
					// Nothing more to learn from this line.
					off = lc.le + 1
				}
			}
			resume[2+i] = off
		}
		if len(starts) > limit {
			return nil, false
		}
	}
	return starts, true
}

// lineCache is the line an anchor hit was last on, and the triggers
// already tried on it: a long line with many hits is bounded and tried
// once, not once a hit.
type lineCache struct {
	ls, le int // text[ls:le] is the line, le at its '\n' or the end
	valid  bool
	tried  []int
}

// bounds returns the line pos is on, keeping it.
func (lc *lineCache) bounds(text []byte, pos int) (ls, le int) {
	if lc.valid && lc.ls <= pos && pos <= lc.le {
		return lc.ls, lc.le
	}
	lc.ls = bytes.LastIndexByte(text[:pos], '\n') + 1
	lc.le = len(text)
	if i := bytes.IndexByte(text[pos:], '\n'); i >= 0 {
		lc.le = pos + i
	}
	lc.valid, lc.tried = true, lc.tried[:0]
	return lc.ls, lc.le
}

// tryAnchor reports whether the anchor byte at text[pos] is in one of its
// triggers' literals on a line that may start a block; that line is then
// lc's.
func (s *Set) tryAnchor(text []byte, pos int, as []anchored, lc *lineCache) bool {
	for _, a := range as {
		st := pos - a.off
		q := pos + a.d2
		t := &s.sparse.trig[a.trig]
		if q < 0 || q >= len(text) || text[q] != a.c2 || st < 0 || st+len(t.lit) > len(text) ||
			string(text[st:st+len(t.lit)]) != t.lit {
			continue
		}
		ls, le := lc.bounds(text, pos)
		if slices.Contains(lc.tried, a.trig) {
			continue
		}
		lc.tried = append(lc.tried, a.trig)
		if t.col0 && (text[ls] == ' ' || text[ls] == '\t') {
			continue
		}
		if s.mayStart(text[ls:le], t) {
			return true
		}
	}
	return false
}

// prefixStarts reports whether the line may start a block by one of the
// prefixed triggers of its first byte.
func (s *Set) prefixStarts(line, t []byte) bool {
	if len(line) > MaxMatchLine {
		return true
	}
	for _, i := range s.sparse.prefixed[t[0]] {
		if s.rules[i].matches(line, t, false) {
			return true
		}
	}
	return false
}

// mayStart reports whether a line holding t's literal may start a block: it
// matches one of t's rules as the Scanner would try it, or the Scanner sees
// it otherwise than as it is (too long to match whole).
func (s *Set) mayStart(content []byte, t *trigger) bool {
	if len(content) > MaxMatchLine {
		return true
	}
	tr := trimIndent(content)
	for _, i := range t.rules {
		if s.rules[i].matches(content, tr, false) {
			return true
		}
	}
	return false
}

// linesBack returns the start of the line n lines before the one at ls.
func linesBack(text []byte, ls, n int) int {
	for ; n > 0 && ls > 0; n-- {
		ls = bytes.LastIndexByte(text[:ls-1], '\n') + 1
	}
	return ls
}

// linesForward returns the end (after its '\n') of the line n lines after
// the one at ls, or len(text).
func linesForward(text []byte, ls, n int) int {
	for ; n >= 0; n-- {
		i := bytes.IndexByte(text[ls:], '\n')
		if i < 0 {
			return len(text)
		}
		ls += i + 1
	}
	return ls
}
