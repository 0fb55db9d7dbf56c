package salience

import (
	"bytes"
)

// Limits that bound a Scanner's memory whatever it is fed.
const (
	// MaxMatchLine is how much of a line rules see; the rest of a longer
	// line is counted, not matched.
	MaxMatchLine = 64 << 10
	// KeepBlocks is how many Failure blocks a Result keeps at each end: the
	// first failure is usually the cause, the last the verdict.
	KeepBlocks = 8
	// MaxBlockLines and MaxBlockBytes bound a block's Text. A block that
	// reaches either ends there; a match after it starts a new block.
	MaxBlockLines = 40
	MaxBlockBytes = 8 << 10
	// KeepSummary is how many of the last summary lines a Result keeps.
	KeepSummary = 8
)

// Block is a run of lines of the output: a matched line with its context,
// merged with the blocks it overlaps or touches.
type Block struct {
	FirstLine, LastLine int   // 1-based, inclusive
	Start, End          int64 // the block is output[Start:End]
	Rule                int   // index in the Set of the block's first match
	MatchLine           int   // the first matched line...
	MatchStart          int64 // ...and its offset
	Name, Family        string
	Kind                Kind
	// Text is the block's lines as in the output, unless Clipped: then a
	// line was longer than the block may hold, and Text has its start only.
	Text    []byte
	Clipped bool
}

// Result is what a Scanner found.
type Result struct {
	// Blocks are Failure blocks in output order: the first and last
	// KeepBlocks of them.
	Blocks []Block
	// Total is how many Failure blocks the output has; Total-len(Blocks)
	// were dropped from the middle, in lines DroppedFrom..DroppedTo.
	Total                  int
	DroppedFrom, DroppedTo int
	// Summary holds the last KeepSummary summary lines, one line each.
	Summary []Block
	// Lines and Bytes are the output's size; Lines counts a last line
	// without '\n'.
	Lines int
	Bytes int64
	// Passing counts passing tests' verdict lines ("--- PASS", "✓", ...),
	// and Quiet all lines of passing tests' progress, verdicts included.
	Passing, Quiet int

	set      *Set // whose rules found the blocks, for folding them
	numbered bool // the output's lines start with their numbers
}

// Dropped returns how many Failure blocks the Result does not hold.
func (r *Result) Dropped() int { return r.Total - len(r.Blocks) }

// ringLine is one line remembered for the context before a match.
type ringLine struct {
	n          int
	start, end int64
	text       []byte // up to MaxBlockBytes of it, '\n' included when whole
	buf        []byte // text's own storage, reused
	borrowed   bool   // text is the caller's, valid until Write returns
	clipped    bool
	stop       bool // a boundary: context before a match never reaches past it
	include    bool // ...but includes this line itself (a test's "=== RUN")
}

// Scanner finds salient blocks in an output fed to it in pieces, in one pass
// and bounded memory. It is not safe for concurrent use.
type Scanner struct {
	// Numbered says each line starts with its number ("%6d\t", safe_read's
	// rendering): rules match the text after it; blocks keep it.
	Numbered bool

	set *Set
	m   matcher

	part    []byte // the current line when split across writes (capped)
	partLen int64  // its full length so far

	n   int   // lines completed
	off int64 // bytes completed

	ring     []ringLine // the last set.maxBefore lines, as a circular buffer
	rHead    int        // index of the oldest
	borrowed bool       // some ring lines are borrowed from the current Write

	slow bool // match every line with the matcher alone (the reference path)
	fast fastScratch

	open      *Block
	openAfter int  // context lines still to add to open
	openFull  bool // open reached its bounds: no more lines go in

	res   Result
	first []Block
	last  []Block // circular, KeepBlocks
	lastN int     // blocks pushed into last
}

// stripNumber drops a line-number prefix ("%6d\t", as safe_read shows a
// file) so that rules see the line as the file has it.
func stripNumber(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j > i && j < len(b) && b[j] == '\t' {
		return b[j+1:]
	}
	return b
}

// NewScanner returns a Scanner for s.
func (s *Set) NewScanner() *Scanner {
	return &Scanner{set: s, ring: make([]ringLine, 0, s.maxBefore)}
}

// Write feeds the next bytes of the output. It never fails.
func (sc *Scanner) Write(p []byte) (int, error) {
	if !sc.slow && !sc.Numbered && len(sc.set.always) == 0 {
		return sc.writeFast(p)
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			sc.appendPart(p)
			break
		}
		if sc.partLen == 0 {
			sc.line(p[:i+1], int64(i+1), false)
		} else {
			sc.appendPart(p[:i+1])
			sc.line(sc.part, sc.partLen, false)
			sc.part, sc.partLen = sc.part[:0], 0
		}
		p = p[i+1:]
	}
	return n, nil
}

// appendPart keeps at most MaxMatchLine+1 bytes of a line, so that the line
// is seen the same whatever the chunking (line clips what is over).
func (sc *Scanner) appendPart(p []byte) {
	if room := MaxMatchLine + 1 - len(sc.part); room > 0 {
		sc.part = append(sc.part, p[:min(room, len(p))]...)
	}
	sc.partLen += int64(len(p))
}

// Close ends the output and returns what was found.
func (sc *Scanner) Close() *Result {
	if sc.partLen > 0 {
		sc.line(sc.part, sc.partLen, false)
		sc.part, sc.partLen = nil, 0
	}
	sc.finish()
	r := sc.res
	r.Lines, r.Bytes, r.set, r.numbered = sc.n, sc.off, sc.set, sc.Numbered
	r.Blocks = append([]Block(nil), sc.first...)
	k := min(sc.lastN, KeepBlocks)
	for i := range k {
		r.Blocks = append(r.Blocks, sc.last[(sc.lastN-k+i)%KeepBlocks])
	}
	return &r
}

// line handles one line: b holds its first bytes (all of them when whole is
// len(b)), the '\n' included if it has one. b is not kept.
func (sc *Scanner) line(b []byte, whole int64, borrowed bool) {
	content := b
	if int64(len(b)) == whole {
		content = bytes.TrimSuffix(content, []byte{'\n'})
	}
	if sc.Numbered {
		content = stripNumber(content)
	}
	if len(content) > MaxMatchLine {
		content = content[:MaxMatchLine]
	}
	inBlock := sc.open != nil && !sc.openFull && sc.open.LastLine == sc.n
	ri, class := sc.m.match(sc.set, content, inBlock)
	sc.handle(b, whole, ri, class, indented(content), borrowed)
}

// handle files one line that matched rule ri (-1: none) with class; ind
// says the line (after any number) is indented.
// borrowed says b stays valid until the end of the current Write, so that
// the ring may refer to it instead of copying it.
func (sc *Scanner) handle(b []byte, whole int64, ri int, class lineClass, ind, borrowed bool) {
	sc.n++
	start := sc.off
	sc.off += whole
	clipped := int64(len(b)) > MaxBlockBytes || int64(len(b)) < whole
	kept := b[:min(len(b), MaxBlockBytes)]
	if class&progress != 0 {
		sc.res.Quiet++
		if class&verdict != 0 {
			sc.res.Passing++
		}
	}

	if class&progress != 0 && !ind {
		sc.openAfter = 0 // the next test: the failing one's block is over
	}
	kind := Kind(0)
	if ri >= 0 {
		kind = sc.set.rules[ri].Kind
	}
	switch {
	case kind == Failure:
		sc.failure(ri, kept, start, whole, clipped)
	case sc.open != nil && !sc.openFull && sc.openAfter > 0:
		sc.add(kept, sc.n, start, whole, clipped)
		sc.openAfter--
	}
	if kind == Summary {
		sc.summary(ri, kept, start, whole, clipped)
	}
	sc.remember(kept, start, whole, clipped, class, borrowed)
}

// failure starts a block at a matched line, or extends the open one.
func (sc *Scanner) failure(ri int, text []byte, start, whole int64, clipped bool) {
	r := &sc.set.rules[ri]
	ctx := sc.context(r.Before)
	if sc.open != nil && !sc.openFull && sc.open.LastLine >= sc.n-1-len(ctx) {
		// Overlapping or adjacent: add the lines between, then this one.
		for _, l := range ctx {
			if l.n > sc.open.LastLine {
				sc.add(l.text, l.n, l.start, l.end-l.start, l.clipped)
			}
		}
		sc.add(text, sc.n, start, whole, clipped)
		sc.openAfter = max(sc.openAfter, r.After)
		return
	}
	sc.finish()
	first := start
	firstLine := sc.n
	if len(ctx) > 0 {
		first, firstLine = ctx[0].start, ctx[0].n
	}
	sc.open = &Block{FirstLine: firstLine, LastLine: firstLine - 1, Start: first, End: first,
		Rule: ri, MatchLine: sc.n, MatchStart: start, Name: r.Name, Family: r.Family, Kind: Failure}
	sc.openFull = false
	for _, l := range ctx {
		sc.add(l.text, l.n, l.start, l.end-l.start, l.clipped)
	}
	sc.add(text, sc.n, start, whole, clipped)
	sc.openAfter = r.After
}

// context returns up to k remembered lines before the current one, oldest
// first, stopping at a boundary (a passing test's verdict, or the start of
// the test: the lines above belong to other tests).
func (sc *Scanner) context(k int) []ringLine {
	n := len(sc.ring)
	k = min(k, n)
	from := 0
	for j := 1; j <= k; j++ {
		l := &sc.ring[(sc.rHead+n-j)%n]
		if l.stop {
			if l.include {
				from = j
			}
			break
		}
		from = j
	}
	out := make([]ringLine, 0, from)
	for j := from; j >= 1; j-- {
		out = append(out, sc.ring[(sc.rHead+n-j)%n])
	}
	return out
}

// add appends a line to the open block, closing it when it is full.
func (sc *Scanner) add(text []byte, n int, start, whole int64, clipped bool) {
	b := sc.open
	if sc.openFull {
		return
	}
	room := MaxBlockBytes - len(b.Text)
	if room <= 0 {
		sc.openFull = true
		return
	}
	if len(text) > room {
		text, clipped = text[:room], true
	}
	if b.Text == nil {
		b.Text = make([]byte, 0, min(MaxBlockBytes, 512))
	}
	b.Text = append(b.Text, text...)
	b.Clipped = b.Clipped || clipped
	b.LastLine = n
	b.End = start + whole
	if b.LastLine-b.FirstLine+1 >= MaxBlockLines || len(b.Text) >= MaxBlockBytes || clipped {
		sc.openFull = true
	}
}

// finish closes the open block and files it.
func (sc *Scanner) finish() {
	b := sc.open
	if b == nil {
		return
	}
	sc.open = nil
	sc.res.Total++
	if len(sc.first) < KeepBlocks {
		sc.first = append(sc.first, *b)
		return
	}
	if sc.last == nil {
		sc.last = make([]Block, KeepBlocks)
	}
	i := sc.lastN % KeepBlocks
	if sc.lastN >= KeepBlocks {
		d := &sc.last[i] // evicted: its lines join the dropped range
		if sc.res.DroppedFrom == 0 {
			sc.res.DroppedFrom = d.FirstLine
		}
		sc.res.DroppedTo = d.LastLine
	}
	sc.last[i] = *b
	sc.lastN++
}

func (sc *Scanner) summary(ri int, text []byte, start, whole int64, clipped bool) {
	r := &sc.set.rules[ri]
	b := Block{FirstLine: sc.n, LastLine: sc.n, Start: start, End: start + whole, Rule: ri, MatchLine: sc.n, MatchStart: start,
		Name: r.Name, Family: r.Family, Kind: Summary, Text: append([]byte(nil), text...), Clipped: clipped}
	if len(sc.res.Summary) == KeepSummary {
		copy(sc.res.Summary, sc.res.Summary[1:])
		sc.res.Summary[KeepSummary-1] = b
		return
	}
	sc.res.Summary = append(sc.res.Summary, b)
}

// remember puts the line in the ring, reusing the slot's buffer.
func (sc *Scanner) remember(text []byte, start, whole int64, clipped bool, class lineClass, borrowed bool) {
	if cap(sc.ring) == 0 {
		return
	}
	var l *ringLine
	if len(sc.ring) < cap(sc.ring) {
		sc.ring = append(sc.ring, ringLine{})
		l = &sc.ring[len(sc.ring)-1]
	} else {
		l = &sc.ring[sc.rHead]
		if sc.rHead++; sc.rHead == len(sc.ring) {
			sc.rHead = 0
		}
	}
	l.n, l.start, l.end, l.clipped = sc.n, start, start+whole, clipped
	if borrowed {
		l.text, l.borrowed = text, true
		sc.borrowed = true
	} else {
		l.buf = append(l.buf[:0], text...)
		l.text, l.borrowed = l.buf, false
	}
	l.stop = class&progress != 0
	l.include = class&testStart != 0
}

// Skip stands for n bytes holding lines newlines that the caller does not
// have (the middle of a long file, never sent): numbering goes on after
// them, and no block or context reaches across. A line cut by the skip
// ends there.
func (sc *Scanner) Skip(n, lines int64) {
	if sc.partLen > 0 {
		sc.line(sc.part, sc.partLen, false)
		sc.part, sc.partLen = sc.part[:0], 0
	}
	sc.finish()
	sc.ring = sc.ring[:0]
	sc.rHead = 0
	sc.n += int(lines)
	sc.off += n
}

// Insert files blocks found by someone else in a part of the output this
// Scanner skipped (the sandboxed tool's scan of a file's middle), with the
// number of failure blocks that part had in all. Call it between Skip and
// the next Write; the blocks must lie in the skipped part, in order.
func (sc *Scanner) Insert(blocks []Block, total int) {
	sc.finish()
	for i := range blocks {
		b := blocks[i]
		sc.open = &b
		sc.finish()
	}
	// Blocks the other side dropped still count.
	if extra := total - len(blocks); extra > 0 {
		sc.res.Total += extra
	}
}
