package scrub

import (
	"bytes"
	"errors"
)

const (
	// streamContext is how much already emitted text a Stream keeps and scans again
	// with new lines, for matches that start on an earlier line (a key name on one
	// line, its value on the next) and for gitleaks rules that look back from their
	// keyword. It is more than every default rule's reach before its keyword, except
	// the fragment-mode rules' (see fragmentBack).
	streamContext = 4 << 10
	// maxHeldPEM bounds how much a Stream holds back after a private key's BEGIN line
	// while waiting for its END line: no key is that large.
	maxHeldPEM = 64 << 10
	// maxLine is the longest line a Stream buffers before it cuts it.
	maxLine = 1 << 20
	// lineMargin is how much of a cut line is kept for the next round, so that a
	// secret that would straddle the cut is scanned whole.
	lineMargin = 64 << 10
)

// Stream scrubs output that arrives in pieces (a command's stdout), with the findings
// Find would return on the whole output: it emits complete lines only, keeps the end of
// what it emitted as context for the next lines (a key on one line, its value on the
// next), holds back a private key block until its END line arrives (up to 64 KiB), and
// cuts lines longer than 1 MiB where no secret is. Each byte is scanned a bounded number
// of times: once as new text, then as context (at most 4 KiB of it per emission), and
// twice more if it is in a line that has to be cut.
//
// What Stream cannot know when it emits a line is what comes after it. So a composite
// rule ([[rules.required]] without a line bound) only pairs findings seen together, and
// the few gitleaks rules whose match need not contain their keyword (a bare 40-hex
// Sourcegraph token when "sourcegraph" appears nearby) apply after the keyword, and up to
// 4 KiB before it, where Find looks 128 KiB both ways.
type Stream struct {
	s    *Scrubber
	emit func(text []byte, fs []Finding) error

	buf      []byte // received, not emitted
	ctx      []byte // the end of the emitted text
	scratch  []byte
	pos      int64 // stream offset of buf[0]
	nlEnd    int   // end of the last complete line in buf
	searched int   // buf[:searched] was searched for newlines
	// An open private key block: the start of its BEGIN line in buf, or -1, and how far
	// complete lines were searched for BEGIN/END markers.
	pemOpen     int
	pemSearched int
	// fragment-mode rules whose keyword was seen: the stream offset their reach ends at.
	sticky map[int32]int64
	err    error
	closed bool
}

// NewStream returns a Stream that passes scrubbing results to emit: text is the next
// part of the output (it must not be retained after emit returns) and fs the findings in
// it, with offsets relative to text. An error from emit stops the stream and is returned
// by Write and Close.
func NewStream(s *Scrubber, emit func(text []byte, fs []Finding) error) *Stream {
	return &Stream{s: s, emit: emit, pemOpen: -1}
}

// Write buffers p and emits what can be emitted.
func (st *Stream) Write(p []byte) (int, error) {
	if st.err != nil {
		return 0, st.err
	}
	if st.closed {
		return 0, errors.New("scrub: write to a closed Stream")
	}
	st.buf = append(st.buf, p...)
	if err := st.flush(false); err != nil {
		st.err = err
		return len(p), err
	}
	return len(p), nil
}

// Close emits the rest (an incomplete last line, a private key block without its END).
func (st *Stream) Close() error {
	if st.err != nil {
		return st.err
	}
	if st.closed {
		return nil
	}
	st.closed = true
	st.err = st.flush(true)
	return st.err
}

func (st *Stream) flush(final bool) error {
	for len(st.buf) > 0 {
		end := st.ready(final)
		if end <= 0 {
			return nil
		}
		if err := st.emitPrefix(end); err != nil {
			return err
		}
	}
	return nil
}

// ready returns how much of buf can be emitted now.
func (st *Stream) ready(final bool) int {
	if final {
		return len(st.buf)
	}
	if i := bytes.LastIndexByte(st.buf[st.searched:], '\n'); i >= 0 {
		st.nlEnd = st.searched + i + 1
	}
	st.searched = len(st.buf)
	st.trackPEM()
	end := st.nlEnd
	if st.pemOpen >= 0 && st.pemOpen < end {
		if len(st.buf)-st.pemOpen <= maxHeldPEM {
			end = st.pemOpen
		} else {
			// Too big to be a key: stop waiting for its end.
			st.pemOpen = -1
		}
	}
	if end == 0 && st.pemOpen < 0 && len(st.buf) > maxLine {
		return st.longCut()
	}
	return end
}

// trackPEM follows BEGIN ... PRIVATE KEY and END markers through the complete lines not
// searched yet.
func (st *Stream) trackPEM() {
	b := st.buf[:st.nlEnd]
	for p := st.pemSearched; p < len(b); {
		i := bytes.Index(b[p:], []byte("-----"))
		if i < 0 {
			break
		}
		p += i
		rest := b[p+5:]
		switch {
		case len(rest) >= 5 && bytes.EqualFold(rest[:5], []byte("BEGIN")):
			le := bytes.IndexByte(rest, '\n')
			if le < 0 {
				le = len(rest)
			}
			if st.pemOpen < 0 && containsFold(rest[:le], "PRIVATE KEY") {
				st.pemOpen = bytes.LastIndexByte(b[:p], '\n') + 1
			}
		case len(rest) >= 3 && bytes.EqualFold(rest[:3], []byte("END")):
			st.pemOpen = -1
		}
		p += 5
	}
	// A marker split over the end of the searched lines cannot be: they end in '\n'.
	st.pemSearched = len(b)
}

func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}

// longCut picks where to cut a line longer than maxLine: lineMargin before its end, moved
// back to the start of any secret there.
func (st *Stream) longCut() int {
	text := append(append(st.scratch[:0], st.ctx...), st.buf...)
	st.scratch = text
	from := len(st.ctx)
	cands, _ := st.s.candidates(text, scanOpts{from: from})
	c := len(st.buf) - lineMargin
	// Prefer a cut after a non-word byte, so no token is split.
	for k := c; k > c-4096 && k > 0; k-- {
		if !isASCIIWord(st.buf[k-1]) {
			c = k
			break
		}
	}
	for moved := true; moved; {
		moved = false
		for _, f := range cands {
			if s, e := f.start-from, f.end-from; s < c && c < e {
				c, moved = s, true
			}
		}
	}
	if c <= 0 {
		return len(st.buf)
	}
	return c
}

// emitPrefix scans and emits buf[:end].
func (st *Stream) emitPrefix(end int) error {
	text := append(append(st.scratch[:0], st.ctx...), st.buf[:end]...)
	st.scratch = text
	from := len(st.ctx)
	var forced []workItem
	for ri, until := range st.sticky {
		if until <= st.pos {
			delete(st.sticky, ri)
			continue
		}
		we := min(int64(len(text)), int64(from)+until-st.pos)
		forced = append(forced, workItem{ri, span{from, int(we)}})
	}
	cands, frag := st.s.candidates(text, scanOpts{from: from, forced: forced})
	for ri, e := range frag {
		if st.sticky == nil {
			st.sticky = map[int32]int64{}
		}
		st.sticky[ri] = max(st.sticky[ri], st.pos+int64(e-from)+fragmentFwd)
	}
	// Only what starts in the new text: the context was emitted with its findings.
	kept := cands[:0]
	for _, c := range cands {
		if c.end <= from {
			continue
		}
		c.start = max(c.start, from)
		kept = append(kept, c)
	}
	fs := st.s.resolve(text, kept)
	for i := range fs {
		fs[i].Start -= from
		fs[i].End -= from
	}
	err := st.emit(st.buf[:end], fs)

	// The new context: the end of the text, from a line start when there is one.
	tail := text[max(0, len(text)-streamContext):]
	if len(tail) < len(text) {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i+1 < len(tail) {
			tail = tail[i+1:]
		}
	}
	st.ctx = append(st.ctx[:0], tail...)
	st.buf = append(st.buf[:0], st.buf[end:]...)
	st.pos += int64(end)
	st.nlEnd = max(0, st.nlEnd-end)
	st.searched = max(0, st.searched-end)
	st.pemSearched = max(0, st.pemSearched-end)
	if st.pemOpen >= 0 {
		st.pemOpen -= end
	}
	return err
}
