package budget

import (
	"bytes"
	"unicode/utf8"
)

// side is a text seen from its start (Head) or its end (Tail); positions are
// counted in bytes taken from that end, so the search above is written once.
type side struct {
	text []byte
	tail bool
	max  int // take no more than this many bytes (MaxBytesPerToken)
}

func newSide(text []byte, tail bool) side {
	return side{text: text, tail: tail, max: len(text)}
}

// take returns the k bytes at the side's end.
func (s side) take(k int) []byte {
	if s.tail {
		return s.text[len(s.text)-k:]
	}
	return s.text[:k]
}

// block returns the bytes taken by going from k to k2.
func (s side) block(k, k2 int) []byte {
	if s.tail {
		n := len(s.text)
		return s.text[n-k2 : n-k]
	}
	return s.text[k:k2]
}

// whole returns the largest k' <= k, and <= s.max, such that take(k') is
// whole lines.
func (s side) whole(k int) int {
	n := len(s.text)
	k = min(k, s.max)
	if k >= n {
		return n
	}
	if k <= 0 {
		return 0
	}
	if !s.tail {
		return bytes.LastIndexByte(s.text[:k], '\n') + 1
	}
	start := n - k
	if s.text[start-1] == '\n' {
		return k
	}
	i := bytes.IndexByte(s.text[start:n-1], '\n')
	if i < 0 {
		return 0
	}
	return n - (start + i + 1)
}

// next returns the smallest k' > k such that take(k') is whole lines: k plus
// the next line. k must be less than len(s.text).
func (s side) next(k int) int {
	n := len(s.text)
	if !s.tail {
		i := bytes.IndexByte(s.text[k:], '\n')
		if i < 0 {
			return n
		}
		return k + i + 1
	}
	end := n - k // the line to add ends at end-1
	return n - (bytes.LastIndexByte(s.text[:end-1], '\n') + 1)
}

// firstRune returns the length of the character at the side's end.
func (s side) firstRune() int {
	if s.tail {
		_, size := utf8.DecodeLastRune(s.text)
		return size
	}
	_, size := utf8.DecodeRune(s.text)
	return size
}

// align returns the largest k' <= k such that take(k') does not split a
// character.
func (s side) align(k int) int {
	if !s.tail {
		return alignPrefix(s.text, k)
	}
	n := len(s.text)
	start := n - k
	// A valid character has at most 3 continuation bytes; a longer run of
	// them is invalid text, which can be cut anywhere.
	for i := 0; i < utf8.UTFMax-1 && start > 0 && start < n && !utf8.RuneStart(s.text[start]); i++ {
		start++
	}
	return n - start
}

// alignPrefix returns the largest p' <= p such that b[:p'] does not split a
// character.
func alignPrefix(b []byte, p int) int {
	for i := 0; i < utf8.UTFMax-1 && p > 0 && p < len(b) && !utf8.RuneStart(b[p]); i++ {
		p--
	}
	return p
}
