package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextd/contextd/mcp/jsonscan"
)

// The engine reads and edits messages in place, on their raw bytes: a value
// is located by scanning (with jsonscan, the MCP path's one scanner, so the
// engine reads a message by the rules the relay checked it by), and an edit
// splices new bytes where the old ones were. Everything the engine does not
// touch (key order, spacing, number spelling, unknown members) stays byte
// for byte what the sender wrote, which a decode and re-encode through
// map[string]any would not keep.

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
				sc := jsonscan.Scanner{B: []byte(s), I: i + 1}
				name, err := sc.Text()
				end := sc.I
				if err != nil || end >= len(s) || s[end] != ']' {
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
// a name along the path that appears twice, in any letter case
// (jsonscan.Find), are errors.
func lookup(b []byte, start, end int, p Path) (s, e int, ok bool, err error) {
	s, e = start, end
	for _, st := range p {
		switch {
		case st.Index >= 0:
			if b[s] != '[' {
				return 0, 0, false, nil
			}
			s, e, ok, err = jsonscan.Element(b, s, st.Index)
		default:
			if b[s] != '{' {
				return 0, 0, false, nil
			}
			var m jsonscan.Member
			m, ok, err = jsonscan.Find(b, s, st.Name)
			s, e = m.Start, m.End
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
	s, e, err := jsonscan.Document(doc)
	if err != nil {
		return nil, err
	}
	for k, st := range p {
		if st.Index >= 0 {
			if doc[s] != '[' {
				return nil, fmt.Errorf("%s is not an array", p[:k+1])
			}
			ns, ne, ok, err := jsonscan.Element(doc, s, st.Index)
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
		m, ok, err := jsonscan.Find(doc, s, st.Name)
		if err != nil {
			return nil, err
		}
		if ok {
			s, e = m.Start, m.End
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
		if jsonscan.Space(doc, s+1) != closing {
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
	s, e, err := jsonscan.Document(doc)
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
		_, err = jsonscan.Array(doc, ps, 0, func(n, s, e int) error {
			if n == last.Index {
				target = len(items)
			}
			items = append(items, item{s, e})
			return nil
		})
	case last.Index < 0 && doc[ps] == '{':
		// The member is found as a lookup finds it, refusing a name
		// that is there twice, in any letter case.
		var m jsonscan.Member
		if m, ok, err = jsonscan.Find(doc, ps, last.Name); err != nil || !ok {
			return doc, false, err
		}
		_, err = jsonscan.Object(doc, ps, 0, func(c jsonscan.Member) error {
			if c.NameStart == m.NameStart {
				target = len(items)
			}
			items = append(items, item{c.NameStart, c.End})
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
