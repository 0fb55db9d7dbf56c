package salience

import (
	"bytes"
	"strconv"
)

// FoldKind says how a Piece stands for its lines.
type FoldKind uint8

const (
	// Kept is an original line, unchanged.
	Kept FoldKind = iota
	// Redrawn is a line redrawn with carriage returns (a progress bar), shown
	// in its final state.
	Redrawn
	// Similar stands for lines equal to the line before them but for
	// numbers, hashes, paths and durations.
	Similar
	// Passing stands for passing tests' progress lines.
	Passing
)

// Piece is one line of a folded text.
type Piece struct {
	// Text is the line without its '\n': the original line (Kept), its
	// final state (Redrawn), or a line saying what was folded.
	Text []byte
	// First and Last are the lines of the original output the piece
	// stands for (1-based, inclusive).
	First, Last int
	Kind        FoldKind
}

// minSimilar is the shortest run of similar lines folded: two lines read as
// fast as the fold line that would replace one.
const minSimilar = 3

// Fold folds text (whole lines of an output whose first line is firstLine)
// for display. Failure lines, and the context their rules keep, are never
// folded. Folding only shortens what is shown: the output itself stays
// available, page by page.
func Fold(text []byte, firstLine int) []Piece { return defaultSet.Fold(text, firstLine) }

// Fold is the package's Fold with the rules of s.
func (s *Set) Fold(text []byte, firstLine int) []Piece { return s.fold(text, firstLine, false) }

// fold is Fold, for lines that start with their numbers when numbered
// (safe_read's rendering): the rules and the folds see each line without its
// number, and a line shown keeps it.
func (s *Set) fold(text []byte, firstLine int, numbered bool) []Piece {
	lines := splitLines(text)
	if len(lines) == 0 {
		return nil
	}
	n := len(lines)
	class := make([]lineClass, n)
	keep := make([]bool, n) // failures and their context
	var m matcher
	after := 0
	// body is what of line i rules see.
	body := func(i int) []byte {
		if numbered {
			return stripNumber(lines[i])
		}
		return lines[i]
	}
	for i := range lines {
		l := body(i)
		ri, c := m.match(s, l, after > 0 || i > 0 && keep[i-1])
		class[i] = c
		if ri >= 0 && s.rules[ri].Kind == Failure {
			r := &s.rules[ri]
			keep[i] = true
			for j := i - 1; j >= max(i-r.Before, 0); j-- {
				if class[j]&progress != 0 {
					if class[j]&testStart != 0 {
						keep[j] = true
					}
					break
				}
				keep[j] = true
			}
			after = max(after, r.After+1)
		}
		if after > 0 && c&progress != 0 && !indented(l) {
			after = 0 // the next test: the failing one's block is over
		}
		if after > 0 {
			keep[i] = true
			after--
		}
	}

	noise := make([]bool, n)
	for i := range lines {
		noise[i] = class[i]&progress != 0 && !keep[i]
	}
	// A passing test's log lines (go test -v prints them between its
	// "=== RUN" and its "--- PASS") are indented, between progress lines.
	for i := 0; i < n; {
		if noise[i] || keep[i] || !indented(body(i)) {
			i++
			continue
		}
		j := i
		for j < n && !noise[j] && !keep[j] && indented(body(j)) {
			j++
		}
		if i > 0 && noise[i-1] && j < n && noise[j] {
			for k := i; k < j; k++ {
				noise[k] = true
			}
		}
		i = j
	}

	out := make([]Piece, 0, min(n, 64))
	var keyA, keyB []byte
	for i := 0; i < n; {
		num := firstLine + i
		if noise[i] {
			j, tests := i, 0
			for j < n && noise[j] {
				if class[j]&verdict != 0 {
					tests++
				}
				j++
			}
			if j-i >= 2 {
				out = append(out, Piece{Text: passingLine(tests, j-i, num, firstLine+j-1), First: num, Last: firstLine + j - 1, Kind: Passing})
				i = j
				continue
			}
		}
		out = append(out, shown(lines[i], num))
		if keep[i] || noise[i] {
			i++
			continue
		}
		// Similar lines after this one.
		keyA = normalize(keyA[:0], matchText(body(i)))
		j := i + 1
		for ; j < n && !keep[j] && !noise[j]; j++ {
			keyB = normalize(keyB[:0], matchText(body(j)))
			if !bytes.Equal(keyA, keyB) {
				break
			}
		}
		if j-i >= minSimilar {
			out = append(out, Piece{Text: similarLine(j-i-1, num+1, firstLine+j-1), First: num + 1, Last: firstLine + j - 1, Kind: Similar})
			i = j
			continue
		}
		i++
	}
	return out
}

// Join writes pieces as text, a line each.
func Join(pieces []Piece) []byte {
	size := 0
	for _, p := range pieces {
		size += len(p.Text) + 1
	}
	b := make([]byte, 0, size)
	for _, p := range pieces {
		b = append(b, p.Text...)
		b = append(b, '\n')
	}
	return b
}

// shown is the piece for a line not folded away.
func shown(l []byte, num int) Piece {
	t := bytes.TrimSuffix(l, []byte{'\r'})
	if bytes.IndexByte(t, '\r') >= 0 {
		return Piece{Text: lastSegment(t), First: num, Last: num, Kind: Redrawn}
	}
	return Piece{Text: l, First: num, Last: num}
}

// splitLines returns text's lines without their '\n'; a last line without
// one counts, an empty text has none.
func splitLines(text []byte) [][]byte {
	if len(text) == 0 {
		return nil
	}
	text = bytes.TrimSuffix(text, []byte{'\n'})
	return bytes.Split(text, []byte{'\n'})
}

func indented(l []byte) bool { return len(l) > 0 && (l[0] == ' ' || l[0] == '\t') }

// The fold lines are ASCII, like the marker: an agent reads them as the
// output's own, and ASCII keeps the token count on its fast path.
func passingLine(tests, lines, a, b int) []byte {
	buf := []byte("... ")
	if tests > 0 {
		buf = appendCount(buf, tests, "passing test", "passing tests")
	} else {
		buf = appendCount(buf, lines, "line of passing tests", "lines of passing tests")
	}
	return appendRange(buf, a, b)
}

func similarLine(count, a, b int) []byte {
	buf := appendCount([]byte("... "), count, "similar line", "similar lines")
	return appendRange(buf, a, b)
}

func appendCount(b []byte, n int, one, many string) []byte {
	b = appendGrouped(b, n)
	b = append(b, ' ')
	if n == 1 {
		return append(b, one...)
	}
	return append(b, many...)
}

func appendRange(b []byte, first, last int) []byte {
	if first == last {
		b = append(b, " (line "...)
		b = appendGrouped(b, first)
		return append(b, ')')
	}
	b = append(b, " (lines "...)
	b = appendGrouped(b, first)
	b = append(b, '-')
	b = appendGrouped(b, last)
	return append(b, ')')
}

// appendGrouped writes n with commas between groups of three digits, as the
// marker does.
func appendGrouped(b []byte, n int) []byte {
	s := strconv.Itoa(n)
	if n < 0 {
		return append(b, s...)
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return b
}

// normalize appends to dst a key of l under which lines that differ only in
// numbers, hex hashes (7 or more hex digits), paths and durations are equal:
// a word holding '/' becomes "/", a hash "#", every run of digits "0".
func normalize(dst, l []byte) []byte {
	for i := 0; i < len(l); {
		c := l[i]
		if c == ' ' || c == '\t' {
			dst = append(dst, c)
			i++
			continue
		}
		j := i
		slash := false
		for j < len(l) && l[j] != ' ' && l[j] != '\t' {
			slash = slash || l[j] == '/'
			j++
		}
		if slash {
			dst = append(dst, '/')
		} else {
			dst = normalizeWord(dst, l[i:j])
		}
		i = j
	}
	return dst
}

// normalizeWord handles one space-free word: hex runs, then digit runs.
// Each byte is looked at a bounded number of times, so a long word costs
// linear time.
func normalizeWord(dst, w []byte) []byte {
	for i := 0; i < len(w); {
		j, digits := i, 0
		for j < len(w) && isHex(w[j]) {
			if w[j] <= '9' {
				digits++
			}
			j++
		}
		switch {
		case j == i:
			dst = append(dst, w[i])
			i++
		case j-i >= 7 && digits > 0:
			dst = append(dst, '#')
			i = j
		default:
			for i < j {
				if w[i] <= '9' {
					for i < j && w[i] <= '9' {
						i++
					}
					dst = append(dst, '0')
					continue
				}
				dst = append(dst, w[i])
				i++
			}
		}
	}
	return dst
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
