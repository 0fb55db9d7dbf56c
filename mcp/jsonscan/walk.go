package jsonscan

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Document checks that b is exactly one JSON value, with optional space
// around it, and returns the value's span.
func Document(b []byte) (start, end int, err error) {
	s := Scanner{B: b}
	s.Space()
	start = s.I
	if err := s.Value(); err != nil {
		return 0, 0, err
	}
	end = s.I
	s.Space()
	if s.I != len(b) {
		return 0, 0, &SyntaxError{Offset: end, What: "data after the value"}
	}
	return start, end, nil
}

// Space returns the offset of the first byte from b[i] on that is not
// white space.
func Space(b []byte, i int) int {
	s := Scanner{B: b, I: i}
	s.Space()
	return s.I
}

// Value checks the value at b[i], with depth containers open around it,
// and returns the offset past it.
func Value(b []byte, i, depth int) (int, error) {
	s := Scanner{B: b, I: i, Depth: depth}
	err := s.Value()
	return s.I, err
}

// Member is one member of an object: its name's literal (quotes included)
// is b[NameStart:NameEnd], its value b[Start:End].
type Member struct {
	NameStart, NameEnd int
	Start, End         int
	Escaped            bool // the name holds escapes
}

// Name returns the member's name, decoded.
func (m Member) Name(b []byte) (string, error) {
	return Unquote(b[m.NameStart:m.NameEnd], m.Escaped)
}

// name is Name without a copy when the name holds no escapes.
func (m Member) name(b []byte) []byte {
	if !m.Escaped {
		return b[m.NameStart+1 : m.NameEnd-1]
	}
	v, err := Unquote(b[m.NameStart:m.NameEnd], true)
	if err != nil { // not reached: the literal was scanned
		return nil
	}
	return []byte(v)
}

// Object checks the object at b[i], with depth containers open around it,
// calling fn (when not nil) for each member in order, and returns the
// offset past it. Each value is checked whole before fn sees it.
func Object(b []byte, i, depth int, fn func(Member) error) (int, error) {
	s := Scanner{B: b, I: i, Depth: depth}
	if i >= len(b) || b[i] != '{' {
		return 0, s.fail("expected an object")
	}
	empty, err := s.Open()
	if err != nil || empty {
		return s.I, err
	}
	for {
		var m Member
		if m.NameStart, m.NameEnd, m.Escaped, err = s.Name(); err != nil {
			return 0, err
		}
		m.Start = s.I
		if err := s.Value(); err != nil {
			return 0, err
		}
		m.End = s.I
		if fn != nil {
			if err := fn(m); err != nil {
				return 0, err
			}
		}
		more, err := s.More('}')
		if err != nil {
			return 0, err
		}
		if !more {
			return s.I, nil
		}
	}
}

// Array checks the array at b[i], with depth containers open around it,
// calling fn (when not nil) with each element's index and span, and
// returns the offset past it.
func Array(b []byte, i, depth int, fn func(n, start, end int) error) (int, error) {
	s := Scanner{B: b, I: i, Depth: depth}
	if i >= len(b) || b[i] != '[' {
		return 0, s.fail("expected an array")
	}
	empty, err := s.Open()
	if err != nil || empty {
		return s.I, err
	}
	for n := 0; ; n++ {
		start := s.I
		if err := s.Value(); err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(n, start, s.I); err != nil {
				return 0, err
			}
		}
		more, err := s.More(']')
		if err != nil {
			return 0, err
		}
		if !more {
			return s.I, nil
		}
	}
}

// DuplicateError is a lookup by name that cannot tell which member is
// meant.
type DuplicateError struct {
	Name   string // the name looked up (the caller's spelling, not the input's)
	Offset int    // the second member's name
	Folded bool   // the second differs from Name in letter case only
}

func (e *DuplicateError) Error() string {
	if e.Folded {
		return fmt.Sprintf("a member name differs from %q only in letter case at byte %d", e.Name, e.Offset)
	}
	return fmt.Sprintf("%v %q at byte %d", ErrDuplicate, e.Name, e.Offset)
}

func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// Find returns the member called name of the object at b[i], checking the
// object whole. It refuses, with a *DuplicateError, an object where name
// appears twice or also under a spelling that differs only in letter case:
// parsers disagree on which copy counts (the first, the last), and Go's
// encoding/json, and so the Go SDK, matches names regardless of case where
// JavaScript and Python match them exactly, so a sender could show one
// reader one value and the receiver another. Other names are not checked.
func Find(b []byte, i int, name string) (m Member, ok bool, err error) {
	_, err = Object(b, i, 0, func(c Member) error {
		k := c.name(b)
		switch {
		case string(k) == name:
			if ok {
				return &DuplicateError{Name: name, Offset: c.NameStart}
			}
			m, ok = c, true
		case EqualFold(k, name):
			return &DuplicateError{Name: name, Offset: c.NameStart, Folded: true}
		}
		return nil
	})
	return m, ok && err == nil, err
}

// Element returns the span of element n of the array at b[i], checking the
// array whole.
func Element(b []byte, i, n int) (start, end int, ok bool, err error) {
	_, err = Array(b, i, 0, func(k, s, e int) error {
		if k == n {
			start, end, ok = s, e, true
		}
		return nil
	})
	return start, end, ok && err == nil, err
}

// StringValue decodes the string at b[i]; a value of another kind is an
// error.
func StringValue(b []byte, i int) (string, error) {
	s := Scanner{B: b, I: i}
	if i >= len(b) || b[i] != '"' {
		return "", s.fail("not a string")
	}
	return s.Text()
}

// Unquote decodes a string literal (quotes included) that String scanned.
// A literal without escapes is its bytes; one with escapes is decoded by
// encoding/json, so that this reading and Go peers' agree (a lone
// surrogate becomes U+FFFD).
func Unquote(lit []byte, escaped bool) (string, error) {
	if !escaped {
		return string(lit[1 : len(lit)-1]), nil
	}
	var v string
	if err := json.Unmarshal(lit, &v); err != nil {
		return "", &SyntaxError{What: "bad string"}
	}
	return v, nil
}

// EqualFold is strings.EqualFold for a name read from the input, without
// converting it to a string: whether Go's encoding/json would take name for
// key.
func EqualFold(name []byte, key string) bool {
	for _, r := range key {
		if len(name) == 0 {
			return false
		}
		c, n := utf8.DecodeRune(name)
		name = name[n:]
		if c == r {
			continue
		}
		// Walk r's case-folding orbit (as strings.EqualFold does).
		f := unicode.SimpleFold(r)
		for f != r && f != c {
			f = unicode.SimpleFold(f)
		}
		if f != c {
			return false
		}
	}
	return len(name) == 0
}
