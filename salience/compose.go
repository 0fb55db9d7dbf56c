package salience

import (
	"bytes"
	"sort"

	"github.com/contextd/contextd/budget"
)

// Shares of a first page's budget (after the marker) that head and tail are
// sure of. Salient blocks come first, but the head says what ran and the
// tail how it ended, so neither is starved; what blocks leave goes to them.
const (
	headFloor = 12
	tailFloor = 15
)

// Span is a part of the output a Page shows.
type Span struct {
	// Start and End are byte offsets in the output (for head and tail, in
	// the coordinates of the windows Compose was given).
	Start, End          int64
	FirstLine, LastLine int
	What                string // "head", "block", "tail"
}

// Page is a first response.
type Page struct {
	Data []byte
	// Tokens is the exact token count of Data, at most the budget (unless
	// the marker alone is longer).
	Tokens    int
	Truncated bool
	// Gap is what lies between the head and the tail; the marker line is
	// mark(Gap). Blocks shown from inside it are in Shown.
	Gap              budget.Gap
	HeadLen, TailLen int
	Shown            []Span
	// Blocks is how many Failure blocks Data shows apart from head and
	// tail; More how many of the output's failures it does not show.
	Blocks, More int
	// Folded is set when some of Data is folded (see Fold).
	Folded bool
}

// Compose makes the first page of an output over budget: its head, the
// marker line, its salient blocks in order (each under a line saying where it
// is), and its tail, with exact Tokens at most tokens. head, tail, size and
// newlines are as budget.Counter.PlanEnds takes them; r is the Scanner's
// Result for the whole output.
//
// When r has no Failure blocks (or nil), the page is what PlanEnds returns,
// byte for byte, except that a head or tail made mostly of passing tests'
// progress lines is folded: a passing "go test -v" then costs a few dozen
// tokens, not the whole budget.
func Compose(c *budget.Counter, tokens int, head, tail []byte, size, newlines int64, r *Result, mark budget.MarkFunc) Page {
	cut := c.PlanEnds(head, tail, size, newlines, tokens, mark)
	if !cut.Truncated {
		return Page{Data: cut.Data, Tokens: cut.Tokens, HeadLen: cut.HeadLen,
			Shown: []Span{{Start: 0, End: int64(cut.HeadLen), FirstLine: 1, LastLine: max(bytes.Count(cut.Data, []byte{'\n'}), 1), What: "head"}}}
	}
	set := defaultSet
	if r != nil && r.set != nil {
		set = r.set
	}
	w := newWindows(head, tail, size, newlines)
	w.numbered = r != nil && r.numbered
	if r != nil && len(r.Blocks) > 0 {
		if p, ok := composeSalient(c, set, max(tokens, budget.MinBudget), w, r, mark); ok {
			return p
		}
	}
	return foldCut(c, set, cut, w, mark)
}

// windows are the ends of an output, with what is needed to number lines.
type windows struct {
	head, tail []byte // as given
	headW      []byte // head without a partial last line
	tailW      []byte // tail without a partial first line
	tailOff    int64  // offset of tailW in the output
	numbered   bool   // lines start with their numbers (safe_read)
	size       int64
	newlines   int64
	lines      int // lines in the output
}

func newWindows(head, tail []byte, size, newlines int64) windows {
	w := windows{head: head, tail: tail, size: size, newlines: newlines}
	if int64(len(head)) >= size {
		w.head = head[:size]
		w.tail = w.head
		w.headW, w.tailW = w.head, w.head
	} else {
		w.headW, w.tailW = head, tail
		if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
			w.headW = head[:i+1]
		}
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			w.tailW = tail[i+1:]
		}
	}
	w.tailOff = size - int64(len(w.tailW))
	w.lines = int(newlines)
	if size > 0 && w.tail[len(w.tail)-1] != '\n' {
		w.lines++
	}
	return w
}

// lineAt returns the number of the line holding offset off, which lies in
// the tail window.
func (w *windows) lineAt(off int64) int {
	from := off - (w.size - int64(len(w.tail)))
	if from < 0 || from > int64(len(w.tail)) {
		return 1
	}
	return int(w.newlines) - bytes.Count(w.tail[from:], []byte{'\n'}) + 1
}

// gapLines counts the lines in output[hl:ts], a line cut by either end
// counting as one.
func (w *windows) gapLines(hl int, ts int64) int {
	if ts <= int64(hl) {
		return 0
	}
	a := bytes.Count(w.head[:hl], []byte{'\n'})
	from := ts - (w.size - int64(len(w.tail)))
	n := int(w.newlines) - a - bytes.Count(w.tail[from:], []byte{'\n'})
	if from > 0 && w.tail[from-1] != '\n' {
		n++
	}
	return max(n, 0)
}

// foldCut is PlanEnds' cut, with an end folded when passing tests' progress
// is most of it.
func foldCut(c *budget.Counter, set *Set, cut budget.Cut, w windows, mark budget.MarkFunc) Page {
	p := Page{Data: cut.Data, Tokens: cut.Tokens, Truncated: true, Gap: cut.Gap, HeadLen: cut.HeadLen, TailLen: cut.TailLen}
	hb := w.head[:cut.HeadLen]
	tb := w.tail[len(w.tail)-cut.TailLen:]
	tFirst := w.lineAt(cut.Gap.End)
	hLast := bytes.Count(hb, []byte{'\n'})
	p.Shown = []Span{
		{Start: 0, End: int64(cut.HeadLen), FirstLine: 1, LastLine: max(hLast, 1), What: "head"},
		{Start: cut.Gap.End, End: w.size, FirstLine: tFirst, LastLine: w.lines, What: "tail"},
	}
	hp, tp := set.fold(hb, 1, w.numbered), set.fold(tb, tFirst, w.numbered)
	fh, ft := dominated(hp), dominated(tp)
	if !fh && !ft {
		return p
	}
	data := make([]byte, 0, len(cut.Data))
	if fh {
		data = append(data, Join(hp)...)
	} else {
		data = append(data, hb...)
		if len(hb) > 0 && hb[len(hb)-1] != '\n' {
			data = append(data, '\n')
		}
	}
	data = append(data, endLine(mark(cut.Gap))...)
	if ft {
		data = append(data, Join(tp)...)
	} else {
		data = append(data, tb...)
	}
	if n := c.Count(data); n <= cut.Tokens {
		p.Data, p.Tokens, p.Folded = data, n, true
	}
	return p
}

// dominated reports whether passing tests' progress is at least half of the
// lines pieces stand for.
func dominated(pieces []Piece) bool {
	all, passing := 0, 0
	for _, p := range pieces {
		n := p.Last - p.First + 1
		all += n
		if p.Kind == Passing {
			passing += n
		}
	}
	return passing > 0 && 2*passing >= all
}

// candidate is a block as a page would show it.
type candidate struct {
	b           *Block
	start, end  int64
	first, last int
	raw         []byte // the block's lines between head and tail
	text        []byte // label and folded lines
	tokens      int
	pri         int // 0 first failure, 1 last, 2 the others
}

// composeSalient lays out head, marker, blocks and tail; ok is false when
// no layout fits (the caller then falls back to PlanEnds' cut).
func composeSalient(c *budget.Counter, set *Set, B int, w windows, r *Result, mark budget.MarkFunc) (Page, bool) {
	reserve := c.Count([]byte(mark(budget.Gap{Start: 0, End: w.size, Lines: w.lines}))) + 1 + 8
	more := 0
	if len(r.Blocks) > 1 || r.Total > len(r.Blocks) {
		more = c.Count(moreLine(r.Total, 999_999_999, 999_999_999)) + 1
	}
	avail := B - reserve - more
	for range 4 {
		if avail <= 0 {
			return Page{}, false
		}
		p := layout(c, set, avail, w, r, mark)
		if p.Tokens <= B {
			return p, true
		}
		avail -= p.Tokens - B
	}
	return Page{}, false
}

// layout makes one page with avail tokens for everything but the marker and
// the "more failures" line.
func layout(c *budget.Counter, set *Set, avail int, w windows, r *Result, mark budget.MarkFunc) Page {
	hl, ht := c.Head(w.headW, avail*headFloor/100)
	ts, tt := c.Tail(w.tailW, avail*tailFloor/100)
	tailStart := w.tailOff + int64(ts)
	if tailStart < int64(hl) {
		tailStart = int64(hl)
		ts = int(tailStart - w.tailOff)
	}

	var cands []*candidate
	for i := range r.Blocks {
		cd := clipBlock(&r.Blocks[i], int64(hl), tailStart)
		if cd == nil {
			continue
		}
		cd.pri = 2
		cands = append(cands, cd)
	}
	// The first and last failures between head and tail win: the first is
	// usually the cause, the last the verdict.
	if n := len(cands); n > 0 {
		cands[n-1].pri = 1
		cands[0].pri = 0
	}
	left := avail - ht - tt
	order := append([]*candidate(nil), cands...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].pri < order[j].pri })
	var chosen []*candidate
	for _, cd := range order {
		render(c, set, cd, w.lines, w.numbered)
		if cd.tokens <= left {
			chosen = append(chosen, cd)
			left -= cd.tokens
			continue
		}
		if cd.pri < 2 && shrink(c, set, cd, left, w.lines, w.numbered) {
			chosen = append(chosen, cd)
			left -= cd.tokens
		}
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].start < chosen[j].start })

	// What the blocks leave goes to head and tail, up to the blocks.
	if left > 0 {
		limit := int(min(int64(len(w.headW)), tailStart))
		if len(chosen) > 0 {
			limit = min(limit, int(chosen[0].start))
		}
		if limit > hl {
			if hl2, ht2 := c.Head(w.headW[:limit], ht+left*budget.HeadShare/100); hl2 > hl {
				left -= ht2 - ht
				hl, ht = hl2, ht2
			}
		}
		from := max(int64(hl), w.tailOff)
		if len(chosen) > 0 {
			from = max(from, chosen[len(chosen)-1].end)
		}
		if from < tailStart {
			region := w.tailW[from-w.tailOff:]
			if s2, _ := c.Tail(region, tt+left); from+int64(s2) < tailStart {
				tailStart = from + int64(s2)
			}
		}
	}

	p := Page{Truncated: true, HeadLen: hl, TailLen: int(w.size - tailStart)}
	p.Gap = budget.Gap{Start: int64(hl), End: tailStart, Lines: w.gapLines(hl, tailStart)}
	headText := w.head[:hl]
	tailText := w.tail[int64(len(w.tail))-(w.size-tailStart):]
	tFirst := w.lineAt(tailStart)

	data := make([]byte, 0, len(headText)+len(tailText)+1024)
	hp := set.fold(headText, 1, w.numbered)
	data = append(data, Join(hp)...)
	data = append(data, endLine(mark(p.Gap))...)
	p.Shown = append(p.Shown, Span{Start: 0, End: int64(hl), FirstLine: 1, LastLine: max(bytes.Count(headText, []byte{'\n'}), 1), What: "head"})
	shown := map[*Block]bool{}
	for _, cd := range chosen {
		data = append(data, cd.text...)
		p.Shown = append(p.Shown, Span{Start: cd.start, End: cd.end, FirstLine: cd.first, LastLine: cd.last, What: "block"})
		shown[cd.b] = true
	}
	// A failure is shown when a chosen block or the head or tail holds its
	// matched lines; the others are counted in one line.
	from, to := r.DroppedFrom, r.DroppedTo
	p.More = r.Dropped()
	for i := range r.Blocks {
		b := &r.Blocks[i]
		if shown[b] || b.MatchStart < int64(hl) || b.MatchStart >= tailStart {
			if shown[b] {
				p.Blocks++
			}
			continue
		}
		p.More++
		if from == 0 || b.FirstLine < from {
			from = b.FirstLine
		}
		to = max(to, b.LastLine)
	}
	if p.More > 0 {
		data = append(data, moreLine(p.More, from, to)...)
	}
	tp := set.fold(tailText, tFirst, w.numbered)
	data = append(data, Join(tp)...)
	p.Shown = append(p.Shown, Span{Start: tailStart, End: w.size, FirstLine: tFirst, LastLine: w.lines, What: "tail"})
	p.Data = data
	p.Tokens = c.Count(data)
	p.Folded = true
	return p
}

// clipBlock returns the part of b between the head (up to hl) and the tail
// (from ts), or nil if its matched line is not between. A clipped block's line lengths are unknown; it
// is shown only if it lies wholly between.
func clipBlock(b *Block, hl, ts int64) *candidate {
	if b.End <= hl || b.Start >= ts || b.MatchStart < hl || b.MatchStart >= ts {
		return nil // head or tail shows it (its match, at least)
	}
	if b.Start >= hl && b.End <= ts {
		return &candidate{b: b, start: b.Start, end: b.End, first: b.FirstLine, last: b.LastLine, raw: b.Text}
	}
	if b.Clipped {
		return nil
	}
	cd := &candidate{b: b, first: -1}
	off, num := b.Start, b.FirstLine
	text := b.Text
	var a, e int // the part of text kept
	for i := 0; i < len(text); num++ {
		j := bytes.IndexByte(text[i:], '\n')
		end := len(text)
		if j >= 0 {
			end = i + j + 1
		}
		ls, le := off+int64(i), off+int64(end)
		if ls >= hl && le <= ts {
			if cd.first < 0 {
				cd.first, cd.start, a = num, ls, i
			}
			cd.last, cd.end, e = num, le, end
		}
		i = end
	}
	if cd.first < 0 {
		return nil
	}
	cd.raw = text[a:e]
	return cd
}

// render sets cd's text: a label line, then its lines folded.
func render(c *budget.Counter, set *Set, cd *candidate, lines int, numbered bool) {
	pieces := set.fold(cd.raw, cd.first, numbered)
	label := labelLine(cd.b, cd.first, cd.last, lines)
	cd.text = append(label, Join(pieces)...)
	cd.tokens = c.Count(cd.text)
}

// shrink cuts cd to its first lines so that it fits tokens, keeping at least
// the matched line's start; false if not even one line fits.
func shrink(c *budget.Counter, set *Set, cd *candidate, tokens, lines int, numbered bool) bool {
	full := *cd
	lo, hi := 0, bytes.Count(full.raw, []byte{'\n'}) // lines that fit, found by bisection
	var best *candidate
	for lo < hi {
		mid := (lo + hi + 1) / 2
		t := full
		t.raw = firstLines(full.raw, mid)
		t.last = full.first + mid - 1
		t.end = full.start + int64(len(t.raw))
		render(c, set, &t, lines, numbered)
		if t.tokens <= tokens {
			lo, best = mid, &t
		} else {
			hi = mid - 1
		}
	}
	if best == nil {
		return false
	}
	*cd = *best
	return true
}

func firstLines(b []byte, n int) []byte {
	i := 0
	for range n {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return b
		}
		i += j + 1
	}
	return b[:i]
}

// labelLine heads a block: where it is, and which rule found it.
func labelLine(b *Block, first, last, lines int) []byte {
	l := []byte("--- ")
	if first == last {
		l = append(l, "line "...)
		l = appendGrouped(l, first)
	} else {
		l = append(l, "lines "...)
		l = appendGrouped(l, first)
		l = append(l, '-')
		l = appendGrouped(l, last)
	}
	l = append(l, " of "...)
	l = appendGrouped(l, lines)
	l = append(l, " ("...)
	l = append(l, b.Family...)
	l = append(l, ": "...)
	l = append(l, b.Name...)
	return append(l, ") ---\n"...)
}

func moreLine(n, from, to int) []byte {
	l := []byte("... ")
	l = appendCount(l, n, "more failure", "more failures")
	switch {
	case from > 0 && from == to:
		l = append(l, " in line "...)
		l = appendGrouped(l, from)
	case from > 0:
		l = append(l, " in lines "...)
		l = appendGrouped(l, from)
		l = append(l, '-')
		l = appendGrouped(l, to)
	}
	return append(l, ", not shown: page through with --continue\n"...)
}

func endLine(m string) string {
	if m == "" || m[len(m)-1] != '\n' {
		return m + "\n"
	}
	return m
}
