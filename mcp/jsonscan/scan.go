// Package jsonscan checks and walks raw JSON by byte offsets, strictly: the one scanner of the MCP path.
package jsonscan

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the one nesting limit of the MCP path: how many objects and
// arrays may be open at once, the envelope's own object (and a batch's
// array) included. jsonrpc.Classify, at the relay, and the intercept
// engine's reading, editing and scrubbing all scan with it, so a message the
// relay accepts is one the engine can read. No MCP message comes near it; it
// bounds the work (and the engine's recursion) untrusted input can cause.
const MaxDepth = 512

// ErrSyntax is the cause of every error about the JSON itself.
var ErrSyntax = errors.New("malformed JSON")

// ErrDuplicate is the cause of a lookup by name that found the name twice.
var ErrDuplicate = errors.New("duplicate member name")

// SyntaxError says which rule of strict JSON the input breaks, and where.
// Its text never quotes the input, so it can be logged and sent to a peer
// without leaking what the message carried.
type SyntaxError struct {
	Offset int    // where the fault was found
	What   string // the rule broken
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v at byte %d: %s", ErrSyntax, e.Offset, e.What)
}

func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Scanner reads the JSON in B from offset I, checking what it passes over.
// Depth is how many containers are open around I; Open and More keep it as
// they enter and leave one. The zero Depth is right for a whole document.
//
// Strict means: RFC 8259's grammar exactly (no leading zeros, trailing
// commas, comments or bare words), no control characters in strings, only
// the escapes JSON defines, strings in valid UTF-8 (encoding/json lets
// invalid bytes through and reads them as U+FFFD; peers in other languages
// may read them otherwise), and no more than MaxDepth containers open.
// Escaped lone surrogates (\ud800) are JSON and are accepted; they decode
// to U+FFFD, as encoding/json decodes them.
type Scanner struct {
	B     []byte
	I     int
	Depth int
}

func (s *Scanner) fail(what string) error { return &SyntaxError{Offset: s.I, What: what} }

// Space skips white space.
func (s *Scanner) Space() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// String scans the string whose opening quote is at I and leaves I past its
// closing quote. It reports whether the string holds escapes (and so must be
// decoded to be read).
func (s *Scanner) String() (escaped bool, err error) {
	b := s.B
	i := s.I + 1
	for i < len(b) {
		c := b[i]
		if plain[c] { // most of a string: one table lookup a byte
			i++
			continue
		}
		switch {
		case c == '"':
			s.I = i + 1
			return escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				s.I = i
				return false, s.fail("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					s.I = i
					return false, s.fail(`bad \u escape`)
				}
				i += 6
			default:
				s.I = i
				return false, s.fail("bad escape")
			}
		case c < 0x20:
			s.I = i
			return false, s.fail("control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				s.I = i
				return false, s.fail("invalid UTF-8")
			}
			i += n
		}
	}
	s.I = i
	return false, s.fail("unterminated string")
}

// Text scans the string at I, as String does, and returns it decoded.
func (s *Scanner) Text() (string, error) {
	start := s.I
	escaped, err := s.String()
	if err != nil {
		return "", err
	}
	return Unquote(s.B[start:s.I], escaped)
}

// plain marks the bytes a string holds as they are: printable ASCII but
// the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Number scans the number at I, as RFC 8259 spells numbers.
func (s *Scanner) Number() error {
	b, i := s.B, s.I
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		s.I = i
		return s.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			s.I = i
			return s.fail("bad number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			s.I = i
			return s.fail("bad number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.I = i
	return nil
}

// Literal scans word (true, false or null) at I.
func (s *Scanner) Literal(word string) error {
	if len(s.B)-s.I < len(word) || string(s.B[s.I:s.I+len(word)]) != word {
		return s.fail("bad literal")
	}
	s.I += len(word)
	return nil
}

// Name scans a member name and the ':' after it, leaving I at the value
// (space skipped). The name's literal, quotes included, is B[start:end].
func (s *Scanner) Name() (start, end int, escaped bool, err error) {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return 0, 0, false, s.fail("expected a member name")
	}
	start = s.I
	if escaped, err = s.String(); err != nil {
		return 0, 0, false, err
	}
	end = s.I
	s.Space()
	if s.I >= len(s.B) || s.B[s.I] != ':' {
		return 0, 0, false, s.fail("expected :")
	}
	s.I++
	s.Space()
	return start, end, escaped, nil
}

// Open enters the object or array at I, counting it against MaxDepth. It
// reports whether the container is empty, and then leaves I past it;
// otherwise I is at the first member or element (space skipped), and More
// leaves the container.
func (s *Scanner) Open() (empty bool, err error) {
	if s.Depth >= MaxDepth {
		return false, s.fail("nested too deep")
	}
	c := s.B[s.I]
	s.I++
	s.Space()
	if s.I < len(s.B) && s.B[s.I] == c+2 { // '}' is '{'+2, ']' is '['+2
		s.I++
		return true, nil
	}
	s.Depth++
	return false, nil
}

// More reads what follows a member or element of the container Open
// entered, whose closing bracket is end: a ',' (true: another follows, and
// I is at it) or end (false: I is past the container).
func (s *Scanner) More(end byte) (bool, error) {
	s.Space()
	if s.I >= len(s.B) {
		return false, s.fail("unexpected end of input")
	}
	switch s.B[s.I] {
	case ',':
		s.I++
		s.Space()
		return true, nil
	case end:
		s.I++
		s.Depth--
		return false, nil
	}
	return false, s.fail("expected , or " + string(end))
}

// Value scans one value of any kind at I (space before it skipped) and
// leaves I past it. Nesting is kept on an explicit stack, so deep input
// costs a byte of memory per level, not Go stack.
func (s *Scanner) Value() error {
	var buf [64]byte
	stack := buf[:0]
	for {
		s.Space()
		if s.I >= len(s.B) {
			return s.fail("unexpected end of input")
		}
		switch c := s.B[s.I]; {
		case c == '{' || c == '[':
			if s.Depth+len(stack) >= MaxDepth {
				return s.fail("nested too deep")
			}
			s.I++
			s.Space()
			if s.I < len(s.B) && s.B[s.I] == c+2 {
				s.I++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if _, _, _, err := s.Name(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, err := s.String(); err != nil {
				return err
			}
		case c == 't':
			if err := s.Literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := s.Literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := s.Literal("null"); err != nil {
				return err
			}
		case c == '-' || isDigit(c):
			if err := s.Number(); err != nil {
				return err
			}
		default:
			return s.fail("unexpected character")
		}
		// A value is complete: close containers until one wants another.
		for {
			if len(stack) == 0 {
				return nil
			}
			s.Space()
			if s.I >= len(s.B) {
				return s.fail("unexpected end of input")
			}
			top, c := stack[len(stack)-1], s.B[s.I]
			if c == top+2 {
				s.I++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return s.fail("expected , or a closing bracket")
			}
			s.I++
			if top == '{' {
				s.Space()
				if _, _, _, err := s.Name(); err != nil {
					return err
				}
			}
			break
		}
	}
}
