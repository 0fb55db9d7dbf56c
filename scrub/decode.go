package scrub

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Like `gitleaks stdin` (--max-decode-depth 5), Find also looks inside percent-, unicode-
// escape-, hex- and base64-encoded text: an encoded segment that decodes to printable text
// is decoded in place on its line, the line is scanned again, and a secret found in the
// decoded part is reported as the whole encoded segment it came from. Decoding repeats on
// the decoded text, up to maxDecodeDepth passes.
const maxDecodeDepth = 5

const (
	// longDecodeLine is the longest line decoded and rescanned as a whole.
	longDecodeLine = 16 << 10
	// decodeMargin is the context kept around segments of longer lines.
	decodeMargin = 2 << 10
)

// The encodings and their order (precedence) are gitleaks'.
const (
	encPercent = iota
	encUnicode
	encHex
	encBase64
	encCount
)

// segment is an encoded span of a line and what it decodes to.
type segment struct {
	start, end int // in the scanned text
	value      []byte
}

// decoded scans the lines of b starting in [from, to) that hold decodable segments again, with the segments
// decoded, and returns the candidates found in decoded text, mapped back to spans of b.
func (s *Scrubber) decoded(b []byte, from, to, depth int, frag []workItem) []cand {
	var out []cand
	var buf []byte
	// The escapes are searched for in the lines starting before to, the ones after
	// each line as it is passed.
	limit := len(b)
	if i := bytes.IndexByte(b[to:], '\n'); i >= 0 {
		limit = to + i
	}
	esc := escapes{text: b[:limit]}
	for ls := from; ls < to; {
		le := bytes.IndexByte(b[ls:], '\n')
		if le < 0 {
			le = len(b)
		} else {
			le += ls
		}
		if !esc.within(ls, le) && !longRun(b[ls:le]) {
			// No segment can start on this line (see mayEncode).
			ls = le + 1
			continue
		}
		var segs []segment
		segs, buf = findSegments(b[ls:le], buf)
		if len(segs) > 0 && le-ls <= longDecodeLine {
			out = append(out, s.decodeLine(b, ls, le, segs, depth, frag)...)
		} else if len(segs) > 0 {
			// A very long line (minified JSON, a log blob) is decoded in pieces around
			// its segments rather than rescanned whole for each one.
			for i := 0; i < len(segs); {
				j := i + 1
				for j < len(segs) && segs[j].start-segs[j-1].end <= 2*decodeMargin {
					j++
				}
				cs := ls + max(0, segs[i].start-decodeMargin)
				ce := ls + min(le-ls, segs[j-1].end+decodeMargin)
				cs, ce = snapBack(b, cs, ls), snapFwd(b, ce, le)
				part := make([]segment, 0, j-i)
				for _, sg := range segs[i:j] {
					sg.start, sg.end = sg.start-(cs-ls), sg.end-(cs-ls)
					part = append(part, sg)
				}
				out = append(out, s.decodeLine(b, cs, ce, part, depth, frag)...)
				i = j
			}
		}
		ls = le + 1
	}
	return out
}

// decodeLine decodes the segments of line [ls, le) of b (or of a part of a long line) and
// scans the result; segment offsets are relative to ls. The fragment-mode rules of frag
// whose window covers the line run on the whole decoded line.
func (s *Scrubber) decodeLine(b []byte, ls, le int, segs []segment, depth int, frag []workItem) []cand {
	line := b[ls:le]
	// The decoded line, and where each segment landed in it.
	var d []byte
	type placed struct{ ds, de, os, oe int }
	var at []placed
	prev := 0
	for _, sg := range segs {
		d = append(d, line[prev:sg.start]...)
		ds := len(d)
		d = append(d, sg.value...)
		at = append(at, placed{ds, len(d), ls + sg.start, ls + sg.end})
		prev = sg.end
	}
	d = append(d, line[prev:]...)
	// Map a decoded offset to b: inside a segment, to the segment's edge; outside, by
	// the shift accumulated before it.
	toB := func(p int, isEnd bool) int {
		shift := ls
		for _, a := range at {
			if p < a.ds || isEnd && p == a.ds {
				break
			}
			if p < a.de || isEnd && p == a.de {
				if isEnd {
					return a.oe
				}
				return a.os
			}
			shift = a.oe - a.de
		}
		return p + shift
	}
	var out []cand
	var forced []workItem
	for _, f := range frag {
		if f.w.start < le && ls < f.w.end && !slices.ContainsFunc(forced, func(x workItem) bool { return x.rule == f.rule }) {
			forced = append(forced, workItem{f.rule, span{0, len(d)}})
		}
	}
	cands, _ := s.candidates(d, scanOpts{depth: depth + 1, forced: forced})
	for _, c := range cands {
		// Only what the decoding revealed: the rest was scanned as it is.
		overlaps := false
		for _, a := range at {
			if min(c.mstart, c.start) <= a.de && a.ds <= c.end {
				overlaps = true
				break
			}
		}
		if !overlaps {
			continue
		}
		c.start, c.end, c.mstart = toB(c.start, false), toB(c.end, true), toB(c.mstart, false)
		if c.start < c.end {
			out = append(out, c)
		}
	}
	return out
}

// mayEncode reports whether a line has what every match of the encodings pattern needs:
// a % or a backslash, U+, or 16 [\w/+-] in a row. Most lines of source code have
// none, and finding that out costs less than the pattern's scan (decoded finds the
// escapes in a whole chunk at once, with escapes).
func mayEncode(line []byte) bool {
	return bytes.IndexByte(line, '%') >= 0 || bytes.IndexByte(line, '\\') >= 0 ||
		bytes.Index(line, []byte("U+")) >= 0 || longRun(line)
}

// escapes finds the escapes of mayEncode in a text, each kind's next occurrence kept
// until the lines asked about pass it, so the text is searched once.
type escapes struct {
	text    []byte
	next    [3]int // the next %, backslash, U+ (len(text): none)
	started bool
}

var escapeWords = [3][]byte{[]byte("%"), []byte("\\"), []byte("U+")}

// within reports whether an escape starts in [ls, le).
func (e *escapes) within(ls, le int) bool {
	if !e.started {
		e.started = true
		e.next = [3]int{-1, -1, -1}
	}
	for k := range e.next {
		if e.next[k] < ls {
			e.next[k] = len(e.text)
			if ls <= len(e.text) {
				if i := bytes.Index(e.text[ls:], escapeWords[k]); i >= 0 {
					e.next[k] = ls + i
				}
			}
		}
		if e.next[k] < le {
			return true
		}
	}
	return false
}

// longRun reports whether line has 16 [\w/+-] in a row. It looks at every 16th byte
// first (a run that long covers one), and then only around those that are in a run.
func longRun(line []byte) bool {
	const n = 16
	// No run of n starts before i, and line[i-1] is not in one.
	for i := 0; i+n <= len(line); {
		p := i + n - 1
		if byteKind[line[p]]&kindB64 == 0 {
			i = p + 1
			continue
		}
		s := p
		for s > i && byteKind[line[s-1]]&kindB64 != 0 {
			s--
		}
		e := p + 1
		for e < len(line) && byteKind[line[e]]&kindB64 != 0 {
			e++
		}
		if e-s >= n {
			return true
		}
		i = e + 1
	}
	return false
}

// encMatch is one match of gitleaks' encodings pattern
//
//	(%XX(?:.*%XX)?) | ((?:U\+XXXX(?:\s|$))+ | (?i)(?:\\{1,2}uXXXX)+) | ([0-9A-Fa-f]{32,}) | ([\w/+-]{16,}={0,2})
//
// found by hand: the regex costs more than everything else Find does on source code.
type encMatch struct{ start, end, kind int }

// encodedMatches finds the pattern's leftmost-first, non-overlapping matches in a line.
func encodedMatches(line []byte, out []encMatch) []encMatch {
	runEnd := -1  // end of the current [\w/+-] run
	runU := false // whether the run holds a U (a U+ escape may start in it)
	for i := 0; i < len(line); {
		c := line[i]
		k := byteKind[c]
		if k == 0 {
			i++
			continue
		}
		if c == '%' {
			if e := percentAt(line, i); e > 0 {
				out = append(out, encMatch{i, e, encPercent})
				i = e
				continue
			}
		}
		if c == 'U' || c == '\\' {
			if e := unicodeAt(line, i); e > 0 {
				out = append(out, encMatch{i, e, encUnicode})
				i = e
				continue
			}
		}
		if k&kindB64 == 0 {
			i++
			continue
		}
		if runEnd <= i {
			runEnd, runU = i, false
			for runEnd < len(line) {
				c := line[runEnd]
				if byteKind[c]&kindB64 == 0 {
					break
				}
				runU = runU || c == 'U'
				runEnd++
			}
			if runEnd-i < 16 && !runU {
				// Too short for hex or base64, and no U+ escape inside: skip it.
				i = runEnd
				continue
			}
		}
		if k&kindHex != 0 {
			h := i
			for h < runEnd && byteKind[line[h]]&kindHex != 0 {
				h++
			}
			if h-i >= 32 {
				out = append(out, encMatch{i, h, encHex})
				i = h
				continue
			}
		}
		if runEnd-i >= 16 {
			e := runEnd
			for k := 0; k < 2 && e < len(line) && line[e] == '='; k++ {
				e++
			}
			out = append(out, encMatch{i, e, encBase64})
			i = e
			continue
		}
		i++
	}
	return out
}

// byteKind classifies bytes for the encodings scan.
var byteKind = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if isASCIIWord(b) || b == '/' || b == '+' || b == '-' {
			t[c] |= kindB64
		}
		if isHex(b) {
			t[c] |= kindHex
		}
		if b == '%' || b == 'U' || b == '\\' {
			t[c] |= kindEsc
		}
	}
	return t
}()

const (
	kindB64 = 1 << iota
	kindHex
	kindEsc
)

// percentAt matches %XX(?:.*%XX)? at i: to the end of the line's last escape.
func percentAt(line []byte, i int) int {
	if i+2 >= len(line) || !isHex(line[i+1]) || !isHex(line[i+2]) {
		return 0
	}
	for j := len(line) - 3; j >= i+3; j-- {
		if line[j] == '%' && isHex(line[j+1]) && isHex(line[j+2]) {
			return j + 3
		}
	}
	return i + 3
}

// unicodeAt matches (?:U\+XXXX(?:\s|$))+ or (?i)(?:\\{1,2}uXXXX)+ at i; the end of the
// line counts as the end of the text.
func unicodeAt(line []byte, i int) int {
	hex4 := func(p int) bool {
		return p+4 <= len(line) && isHex(line[p]) && isHex(line[p+1]) && isHex(line[p+2]) && isHex(line[p+3])
	}
	e := i
	if line[i] == 'U' {
		for e+1 < len(line) && line[e] == 'U' && line[e+1] == '+' && hex4(e+2) {
			p := e + 6
			if p == len(line) {
				e = p
				break
			}
			if c := line[p]; c != ' ' && c != '\t' && c != '\r' && c != '\f' {
				break
			}
			e = p + 1
		}
		if e == i {
			return 0
		}
		return e
	}
	for {
		p := e
		n := 0
		for p < len(line) && line[p] == '\\' && n < 2 {
			p++
			n++
		}
		if n == 0 || p >= len(line) || line[p] != 'u' && line[p] != 'U' || !hex4(p+1) {
			break
		}
		e = p + 5
	}
	if e == i {
		return 0
	}
	return e
}

// findSegments finds gitleaks' encoded segments in a line and decodes them; segments that
// do not decode to printable ASCII are dropped.
func findSegments(line []byte, buf []byte) ([]segment, []byte) {
	var ms [8]encMatch
	all := encodedMatches(line, ms[:0])
	if len(all) == 0 {
		return nil, buf
	}
	// Where two matches touch, the lower-precedence encoding waits for the next pass.
	touch := func(a, b encMatch) bool { return b.start <= a.end && b.end >= a.start }
	var segs []segment
	for i, m := range all {
		if i > 0 && touch(m, all[i-1]) && all[i-1].kind < m.kind {
			continue
		}
		if i+1 < len(all) && touch(m, all[i+1]) && all[i+1].kind < m.kind {
			continue
		}
		var v []byte
		enc := line[m.start:m.end]
		switch m.kind {
		case encPercent:
			v = decodePercent(enc)
		case encUnicode:
			v = decodeUnicode(enc)
		case encHex:
			v = decodeHex(enc)
		case encBase64:
			v, buf = decodeBase64(enc, buf)
			v = bytes.Clone(v)
		}
		if len(v) > 0 {
			segs = append(segs, segment{m.start, m.end, v})
		}
	}
	return segs, buf
}

// What decodeBase64 looks for in an encoded segment, by byte.
const (
	b64Digit   = 1 << iota
	b64URLOnly // - or _
	b64StdOnly // + or /
	b64Pad     // =
)

var b64Kind = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = b64Digit
	}
	t['-'], t['_'] = b64URLOnly, b64URLOnly
	t['+'], t['/'] = b64StdOnly, b64StdOnly
	t['='] = b64Pad
	return t
}()

func printable(c byte) bool { return '\x08' < c && c < '\x7f' }

func hasDigit(b []byte) bool {
	for _, c := range b {
		if '0' <= c && c <= '9' {
			return true
		}
	}
	return false
}

func allPrintable(b []byte) bool {
	for _, c := range b {
		if !printable(c) {
			return false
		}
	}
	return true
}

func decodePercent(enc []byte) []byte {
	out := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		if enc[i] == '%' && i+2 < len(enc) && isHex(enc[i+1]) && isHex(enc[i+2]) {
			c := unhex(enc[i+1])<<4 | unhex(enc[i+2])
			if !printable(c) {
				return nil
			}
			out = append(out, c)
			i += 2
			continue
		}
		out = append(out, enc[i])
	}
	return out
}

func decodeHex(enc []byte) []byte {
	if len(enc)%2 != 0 || !hasDigit(enc) {
		return nil
	}
	// Checked before allocating: most hex in output (hashes, ids) is not text.
	for i := 0; i < len(enc); i += 2 {
		if !printable(unhex(enc[i])<<4 | unhex(enc[i+1])) {
			return nil
		}
	}
	out := make([]byte, len(enc)/2)
	for i := 0; i < len(enc); i += 2 {
		out[i/2] = unhex(enc[i])<<4 | unhex(enc[i+1])
	}
	return out
}

// decodeBase64 tries standard then URL-safe unpadded base64, as gitleaks does; buf is
// scratch space reused across calls.
func decodeBase64(enc, buf []byte) ([]byte, []byte) {
	var seen uint8
	for _, c := range enc {
		seen |= b64Kind[c]
	}
	// Text of letters alone is taken for words, not base64.
	if seen&(b64Digit|b64URLOnly|b64StdOnly) == 0 {
		return nil, buf
	}
	std := len(enc)%4 == 0 && seen&b64URLOnly == 0
	url := len(enc)%4 != 1 && seen&(b64StdOnly|b64Pad) == 0
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		if e == base64.StdEncoding && !std || e == base64.RawURLEncoding && !url {
			continue
		}
		// Most base64 in output is binary: the first four characters' three bytes are
		// seldom all printable, and then the rest need not be decoded.
		if len(enc) > 4 {
			var head [3]byte
			if n, err := e.Decode(head[:], enc[:4]); err == nil && !allPrintable(head[:n]) {
				continue
			}
		}
		buf = slices.Grow(buf[:0], e.DecodedLen(len(enc)))[:e.DecodedLen(len(enc))]
		n, err := e.Decode(buf, enc)
		if err == nil && allPrintable(buf[:n]) {
			return buf[:n], buf
		}
	}
	return nil, buf
}

// decodeUnicode turns U+XXXX code points (with the blank after each) and \uXXXX escapes
// into UTF-8.
func decodeUnicode(enc []byte) []byte {
	var out []byte
	for i := 0; i < len(enc); {
		var hex []byte
		switch {
		case i+6 <= len(enc) && enc[i] == 'U' && enc[i+1] == '+':
			hex = enc[i+2 : i+6]
			i += 6
			if i < len(enc) && (enc[i] == ' ' || enc[i] == '\t' || enc[i] == '\n' || enc[i] == '\r') {
				i++
			}
		case enc[i] == '\\':
			j := i
			for j < len(enc) && enc[j] == '\\' {
				j++
			}
			if j+5 <= len(enc) && (enc[j] == 'u' || enc[j] == 'U') {
				hex = enc[j+1 : j+5]
				i = j + 5
			} else {
				return nil
			}
		default:
			out = append(out, enc[i])
			i++
			continue
		}
		n, err := strconv.ParseUint(string(hex), 16, 32)
		if err != nil {
			return nil
		}
		out = utf8.AppendRune(out, rune(n))
	}
	return out
}

// snapBack moves p back to just after a non-word byte, not before lo and at most 64 bytes.
func snapBack(b []byte, p, lo int) int {
	for q := p; q > lo && q > p-64; q-- {
		if !isASCIIWord(b[q-1]) {
			return q
		}
	}
	return p
}

// snapFwd moves p forward to just before a non-word byte, not after hi and at most 64
// bytes.
func snapFwd(b []byte, p, hi int) int {
	for q := p; q < hi && q < p+64; q++ {
		if !isASCIIWord(b[q]) {
			return q
		}
	}
	return p
}
