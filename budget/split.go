package budget

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Counting without the library's splitter.
//
// A BPE tokenizer first splits text into pieces with a regular expression,
// then encodes each piece on its own. The library splits with a backtracking
// engine that allocates for every piece it finds: on code and logs, about
// 85 bytes of garbage per byte counted. In the daemon, which counts on every
// call, that garbage cost more than the counting itself (a garbage collection
// per large call, with a stop of several milliseconds on these machines).
//
// For cl100k_base, Count therefore splits ASCII text itself, the way the
// library's pattern does, and keeps the token count of each piece it has seen
// (code and logs repeat their words, numbers and punctuation endlessly); only
// a piece not seen yet goes to the library. Text with any other byte goes to
// the library whole, a line or so at a time. The pattern is
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// as the library's engine runs it, which differs from a textbook backtracking
// match twice: \s*[\r\n]+ ends with the first run of newlines ("\n \n" is
// two pieces, not one), and DEL (0x7f) matches no alternative, so it is in no
// piece and counts nothing. The tests compare both ways of counting, piece by
// piece, on every short string of the cases that matter, on random text and on
// real source code; a later version of the library that splits otherwise
// fails them.
//
// Cutting text into segments is exact: no piece contains a newline followed
// by a non-space character (only whitespace runs and the [\r\n]* ending
// contain newlines, and both stop at the first non-space), and the pattern
// looks neither behind nor, at a newline that ends a piece, ahead. So after a
// '\n' followed by an ASCII non-space byte, the pieces of the text are the
// pieces of each side.

// pieceCacheMax bounds the pieces whose counts are kept, about 2 MB at most;
// the cache starts again empty when full.
const pieceCacheMax = 1 << 15

// pieceCache maps a piece to its token count; safe for concurrent use.
type pieceCache struct {
	mu sync.Mutex
	m  map[string]int32
}

// countSplit counts b: ASCII segments piece by piece through the cache,
// others with the library.
func (c *Counter) countSplit(codec tokenizer.Codec, b []byte) (int, error) {
	total := 0
	var misses map[string]int // a piece not cached -> its occurrences here
	var others []string
	c.cache.mu.Lock()
	if c.cache.m == nil {
		c.cache.m = make(map[string]int32)
	}
	for len(b) > 0 {
		seg, ascii := nextSegment(b)
		b = b[len(seg):]
		if !ascii {
			others = append(others, string(seg))
			continue
		}
		for len(seg) > 0 {
			if seg[0] == del {
				seg = seg[1:] // in no piece (see above)
				continue
			}
			n := asciiPiece(seg)
			if v, ok := c.cache.m[string(seg[:n])]; ok {
				total += int(v)
			} else {
				if misses == nil {
					misses = make(map[string]int)
				}
				misses[string(seg[:n])]++
			}
			seg = seg[n:]
		}
	}
	c.cache.mu.Unlock()
	// The library's work is done outside the lock: a large new text must not
	// hold up every other call's counting. Each new piece is counted once.
	for _, s := range others {
		n, err := codec.Count(s)
		if err != nil {
			return 0, err
		}
		total += n
	}
	if len(misses) == 0 {
		return total, nil
	}
	counts := make(map[string]int32, len(misses))
	for s, k := range misses {
		n, err := codec.Count(s)
		if err != nil {
			return 0, err
		}
		counts[s] = int32(n)
		total += n * k
	}
	c.cache.mu.Lock()
	if len(c.cache.m)+len(counts) > pieceCacheMax {
		clear(c.cache.m)
	}
	for s, n := range counts {
		if len(c.cache.m) >= pieceCacheMax {
			break
		}
		c.cache.m[s] = n
	}
	c.cache.mu.Unlock()
	return total, nil
}

// nextSegment returns the first segment of b: up to and including the first
// '\n' followed by an ASCII non-space byte, or all of b; and whether it is
// all ASCII.
func nextSegment(b []byte) (seg []byte, ascii bool) {
	ascii = true
	for i, c := range b {
		if c >= 0x80 {
			ascii = false
		}
		if c == '\n' && i+1 < len(b) && b[i+1] < 0x80 && !isSpace(b[i+1]) {
			return b[:i+1], ascii
		}
	}
	return b, ascii
}

// asciiPiece returns the length of the first piece of p, which is not empty
// and all ASCII: the pattern's alternatives tried in order, the first that
// matches winning.
func asciiPiece(p []byte) int {
	c := p[0]
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && len(p) >= 2 {
		switch p[1] | 0x20 {
		case 's', 't', 'm', 'd':
			return 2
		case 'r', 'v':
			if len(p) >= 3 && p[2]|0x20 == 'e' {
				return 3
			}
		case 'l':
			if len(p) >= 3 && p[2]|0x20 == 'l' {
				return 3
			}
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	i := 0
	if isOther(c) || isSpace(c) && c != '\r' && c != '\n' {
		i = 1
	}
	if i < len(p) && isLetter(p[i]) {
		j := i + 1
		for j < len(p) && isLetter(p[j]) {
			j++
		}
		return j
	}
	// \p{N}{1,3}
	if isDigit(c) {
		j := 1
		for j < len(p) && j < 3 && isDigit(p[j]) {
			j++
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	i = 0
	if c == ' ' {
		i = 1
	}
	if i < len(p) && isOther(p[i]) {
		j := i + 1
		for j < len(p) && isOther(p[j]) {
			j++
		}
		for j < len(p) && (p[j] == '\r' || p[j] == '\n') {
			j++
		}
		return j
	}
	// c is whitespace now: every other byte started a piece above.
	// \s*[\r\n]+, as the library runs it: the spaces before the first
	// newline, and the newlines that follow it.
	nl := 0
	for nl < len(p) && isSpace(p[nl]) && p[nl] != '\r' && p[nl] != '\n' {
		nl++
	}
	if nl < len(p) && (p[nl] == '\r' || p[nl] == '\n') {
		j := nl + 1
		for j < len(p) && (p[j] == '\r' || p[j] == '\n') {
			j++
		}
		return j
	}
	// No newline in the run: p[nl] is not a space, or the text ends.
	switch {
	case nl == len(p): // \s+(?!\S) at the end of the text
		return nl
	case nl > 1: // \s+(?!\S): all but the space before the next character
		return nl - 1
	}
	return 1 // \s+
}

// del matches nothing in the library's pattern (see above).
const del = 0x7f

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// isSpace is \s (unicode.IsSpace) for ASCII.
func isSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

// isOther is [^\s\p{L}\p{N}] for ASCII: punctuation, symbols, controls,
// but DEL, which the library's engine leaves out.
func isOther(c byte) bool { return c != del && !isSpace(c) && !isLetter(c) && !isDigit(c) }
