package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// The engine reads and edits messages in place, on their raw bytes: a value
// is located by scanning, and an edit splices new bytes where the old ones
// were. Everything the engine does not touch (key order, spacing, number
// spelling, unknown members) stays byte for byte what the sender wrote, which
// a decode and re-encode through map[string]any would not keep.

// maxDepth bounds the nesting the scanner follows: jsonrpc.MaxDepth, the
// MCP path's one limit. The relay has refused (by Classify) any message
// nested deeper, so the engine only meets the limit in what it builds or a
// user rule edits; a message past it is refused rather than risking deep
// recursion on untrusted input.
const maxDepth = jsonrpc.MaxDepth

// errSyntax is the cause of every scanning failure: the message is not the
// JSON it claims to be.
var errSyntax = errors.New("malformed JSON")

// errDuplicate is a member name that appears twice in one object on a path
// the engine reads. Parsers disagree on which copy wins (the first, the last,
// an error), so a sender could show the engine one value and the receiver
// another; the engine refuses such messages.
var errDuplicate = errors.New("duplicate member name")

func syntaxErr(i int, what string) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, i, what)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanValue checks the JSON value starting at b[i] (no leading space) and
// returns the offset just past it.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, syntaxErr(i, "unexpected end")
	}
	switch c := b[i]; {
	case c == '{':
		return scanObject(b, i, depth, nil)
	case c == '[':
		return scanArray(b, i, depth, nil)
	case c == '"':
		end, _, err := scanString(b, i)
		return end, err
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return 0, syntaxErr(i, "unexpected character "+strconv.QuoteRune(rune(b[i])))
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return 0, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i - s
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return 0, syntaxErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, syntaxErr(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, syntaxErr(start, "invalid number")
		}
	}
	return i, nil
}

// scanString checks the string literal at b[i] (a '"') and returns the offset
// past its closing quote and whether it holds escapes.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, syntaxErr(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, syntaxErr(i, "short \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if !isHexDigit(h) {
						return 0, false, syntaxErr(i, "invalid \\u escape")
					}
				}
				i += 6
			default:
				return 0, false, syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return 0, false, syntaxErr(i, "control character in string")
		default:
			i++
		}
	}
	return 0, false, syntaxErr(start, "unterminated string")
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// member is one name/value pair of an object: the name's literal is
// b[keyStart:keyEnd] (quotes included), the value b[valStart:valEnd].
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
	escaped          bool // the name holds escapes
}

// key returns the member's decoded name.
func (m member) key(b []byte) (string, error) {
	return unquote(b[m.keyStart:m.keyEnd], m.escaped)
}

// scanObject checks the object at b[i] and returns the offset past it,
// calling fn (when not nil) for each member in order.
func scanObject(b []byte, i, depth int, fn func(member) error) (int, error) {
	if depth >= maxDepth {
		return 0, syntaxErr(i, "nested too deeply")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, syntaxErr(i, "expected a member name")
		}
		var m member
		var err error
		m.keyStart = i
		if m.keyEnd, m.escaped, err = scanString(b, i); err != nil {
			return 0, err
		}
		i = skipSpace(b, m.keyEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, syntaxErr(i, "expected ':'")
		}
		m.valStart = skipSpace(b, i+1)
		if m.valEnd, err = scanValue(b, m.valStart, depth+1); err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(m); err != nil {
				return 0, err
			}
		}
		i = skipSpace(b, m.valEnd)
		if i >= len(b) {
			return 0, syntaxErr(i, "unterminated object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, syntaxErr(i, "expected ',' or '}'")
		}
	}
}

// scanArray checks the array at b[i] and returns the offset past it, calling
// fn (when not nil) with each element's index and span.
func scanArray(b []byte, i, depth int, fn func(idx, start, end int) error) (int, error) {
	if depth >= maxDepth {
		return 0, syntaxErr(i, "nested too deeply")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for idx := 0; ; idx++ {
		start := i
		end, err := scanValue(b, start, depth+1)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(idx, start, end); err != nil {
				return 0, err
			}
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, syntaxErr(i, "unterminated array")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, syntaxErr(i, "expected ',' or ']'")
		}
	}
}

// document checks that b is exactly one JSON value (with optional surrounding
// space) and returns its span.
func document(b []byte) (start, end int, err error) {
	start = skipSpace(b, 0)
	if end, err = scanValue(b, start, 0); err != nil {
		return 0, 0, err
	}
	if skipSpace(b, end) != len(b) {
		return 0, 0, syntaxErr(end, "data after the value")
	}
	return start, end, nil
}

// unquote decodes a string literal (quotes included). Literals without
// escapes are their bytes; the others are decoded as encoding/json does
// (invalid UTF-8 and lone surrogates become U+FFFD).
func unquote(lit []byte, escaped bool) (string, error) {
	if !escaped {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", fmt.Errorf("%w: %v", errSyntax, err)
	}
	return s, nil
}

// quote encodes s as a JSON string literal. HTML characters are left as they
// are: the messages are not embedded in HTML, and "<" reads better than
// "\u003c" in a record.
func quote(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// findMember returns the member of the object at b[i] named name. A name that
// appears twice is errDuplicate.
func findMember(b []byte, i int, name string) (m member, ok bool, err error) {
	_, err = scanObject(b, i, 0, func(c member) error {
		k, err := c.key(b)
		if err != nil {
			return err
		}
		if k != name {
			return nil
		}
		if ok {
			return fmt.Errorf("%w %q", errDuplicate, name)
		}
		m, ok = c, true
		return nil
	})
	return m, ok && err == nil, err
}

// findElement returns the span of element idx of the array at b[i].
func findElement(b []byte, i, idx int) (start, end int, ok bool, err error) {
	_, err = scanArray(b, i, 0, func(n, s, e int) error {
		if n == idx {
			start, end, ok = s, e, true
		}
		return nil
	})
	return start, end, ok && err == nil, err
}

// Path is a location inside a JSON message: member names and array indexes
// from the top. It is written with dots between names and brackets for
// indexes or names that hold '.', '[' or ']':
//
//	params.arguments.path
//	result.content[0].text
//	params.arguments["file.name"]
type Path []Step

// Step is one step of a Path: a member name, or an array index when Index is
// at least 0.
type Step struct {
	Name  string
	Index int // -1 for a member name
}

// ParsePath reads a path written as Path describes. The empty string is the
// whole message.
func ParsePath(s string) (Path, error) {
	var p Path
	i := 0
	for i < len(s) {
		switch s[i] {
		case '.':
			if i == 0 || i+1 >= len(s) || s[i+1] == '.' || s[i+1] == '[' {
				return nil, fmt.Errorf("path %q: empty name at offset %d", s, i)
			}
			i++
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if s[i+1:] != "" && s[i+1] == '"' {
				// A quoted name: find the literal's end, which may hold ']'.
				end, _, err := scanString([]byte(s), i+1)
				if err != nil || end >= len(s) || s[end] != ']' {
					return nil, fmt.Errorf("path %q: bad quoted name at offset %d", s, i)
				}
				name, err := unquote([]byte(s[i+1:end]), true)
				if err != nil {
					return nil, fmt.Errorf("path %q: bad quoted name at offset %d", s, i)
				}
				p = append(p, Step{Name: name, Index: -1})
				i = end + 1
				continue
			}
			if j < 0 {
				return nil, fmt.Errorf("path %q: '[' without ']' at offset %d", s, i)
			}
			n, err := strconv.Atoi(s[i+1 : i+j])
			if err != nil || n < 0 || s[i+1] == '+' || s[i+1] == '-' {
				return nil, fmt.Errorf("path %q: %q is not an array index (use [\"name\"] for a member)", s, s[i+1:i+j])
			}
			p = append(p, Step{Index: n})
			i += j + 1
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' && s[j] != ']' {
				j++
			}
			if j < len(s) && s[j] == ']' {
				return nil, fmt.Errorf("path %q: unexpected ']' at offset %d", s, j)
			}
			if i > 0 && s[i-1] != '.' {
				return nil, fmt.Errorf("path %q: missing '.' before %q", s, s[i:j])
			}
			p = append(p, Step{Name: s[i:j], Index: -1})
			i = j
		}
	}
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("path %q: not valid UTF-8", s)
	}
	return p, nil
}

// MustPath is ParsePath for paths written in the program.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

func (p Path) String() string {
	var b strings.Builder
	for i, st := range p {
		switch {
		case st.Index >= 0:
			b.WriteString("[" + strconv.Itoa(st.Index) + "]")
		case st.Name == "" || strings.ContainsAny(st.Name, ".[]\""):
			b.Write([]byte("["))
			b.Write(quote(st.Name))
			b.Write([]byte("]"))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.Name)
		}
	}
	return b.String()
}

// lookup follows p from the value at b[start:end] and returns the span of
// the value it reaches. A path that leads through something else than an
// object (for a name) or an array (for an index), or to a member or element
// that is not there, is not found (ok false, no error). Malformed JSON and
// duplicate names along the path are errors.
func lookup(b []byte, start, end int, p Path) (s, e int, ok bool, err error) {
	s, e = start, end
	for _, st := range p {
		switch {
		case st.Index >= 0:
			if b[s] != '[' {
				return 0, 0, false, nil
			}
			s, e, ok, err = findElement(b, s, st.Index)
		default:
			if b[s] != '{' {
				return 0, 0, false, nil
			}
			var m member
			m, ok, err = findMember(b, s, st.Name)
			s, e = m.valStart, m.valEnd
		}
		if err != nil || !ok {
			return 0, 0, false, err
		}
	}
	return s, e, true, nil
}

// splice returns b with b[s:e] replaced by repl, in a new slice.
func splice(b []byte, s, e int, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(e-s)+len(repl))
	out = append(out, b[:s]...)
	out = append(out, repl...)
	return append(out, b[e:]...)
}

// setPath returns doc with the value at p replaced by val (valid JSON).
// Missing members are created, as nested objects where the path goes on;
// a missing array element, or a step into something that is neither object
// nor array, is an error: there is no sensible value to invent.
func setPath(doc []byte, p Path, val []byte) ([]byte, error) {
	s, e, err := document(doc)
	if err != nil {
		return nil, err
	}
	for k, st := range p {
		if st.Index >= 0 {
			if doc[s] != '[' {
				return nil, fmt.Errorf("%s is not an array", p[:k+1])
			}
			ns, ne, ok, err := findElement(doc, s, st.Index)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%s: no such element", p[:k+1])
			}
			s, e = ns, ne
			continue
		}
		if doc[s] != '{' {
			return nil, fmt.Errorf("%s: %s is not an object", p[:k+1], p[:k])
		}
		m, ok, err := findMember(doc, s, st.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			s, e = m.valStart, m.valEnd
			continue
		}
		// Create the rest of the path here, as nested objects.
		for _, rest := range p[k+1:] {
			if rest.Index >= 0 {
				return nil, fmt.Errorf("%s: cannot create an array element", p)
			}
		}
		v := val
		for j := len(p) - 1; j > k; j-- {
			v = append(append(append(append([]byte("{"), quote(p[j].Name)...), ':'), v...), '}')
		}
		ins := append(append(quote(st.Name), ':'), v...)
		closing := e - 1 // the object's '}'
		if skipSpace(doc, s+1) != closing {
			ins = append([]byte{','}, ins...)
		}
		return splice(doc, closing, closing, ins), nil
	}
	return splice(doc, s, e, val), nil
}

// deletePath returns doc without the member or element at p, and whether it
// was there. Deleting the whole message is an error.
func deletePath(doc []byte, p Path) ([]byte, bool, error) {
	if len(p) == 0 {
		return nil, false, errors.New("cannot delete the whole message")
	}
	s, e, err := document(doc)
	if err != nil {
		return nil, false, err
	}
	ps, _, ok, err := lookup(doc, s, e, p[:len(p)-1])
	if err != nil || !ok {
		return doc, false, err
	}
	last := p[len(p)-1]
	// The items of the parent, each from its start (a member's name, an
	// element's value) to its value's end.
	type item struct{ start, end int }
	var items []item
	target := -1
	switch {
	case last.Index >= 0 && doc[ps] == '[':
		_, err = scanArray(doc, ps, 0, func(n, s, e int) error {
			if n == last.Index {
				target = len(items)
			}
			items = append(items, item{s, e})
			return nil
		})
	case last.Index < 0 && doc[ps] == '{':
		_, err = scanObject(doc, ps, 0, func(m member) error {
			k, err := m.key(doc)
			if err != nil {
				return err
			}
			if k == last.Name {
				if target >= 0 {
					return fmt.Errorf("%w %q", errDuplicate, k)
				}
				target = len(items)
			}
			items = append(items, item{m.keyStart, m.valEnd})
			return nil
		})
	default:
		return doc, false, nil
	}
	if err != nil || target < 0 {
		return doc, false, err
	}
	var cs, ce int
	switch {
	case target+1 < len(items):
		cs, ce = items[target].start, items[target+1].start
	case target > 0:
		cs, ce = items[target-1].end, items[target].end
	default:
		cs, ce = items[target].start, items[target].end
	}
	return splice(doc, cs, ce, nil), true, nil
}
