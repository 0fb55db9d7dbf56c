package install

// A small JSON (and JSONC) parser that remembers where every value lies in the
// text, so that install can add or remove one member or array element and leave
// every other byte of the user's file as it was: their key order, indentation,
// comments and line endings. encoding/json cannot do this (it re-encodes the
// whole document and loses order and comments).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// maxDepth bounds nesting, so that a hostile file cannot exhaust the stack.
const maxDepth = 512

// jnode is one JSON value and its span [start, end) in the source.
type jnode struct {
	kind       byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	start, end int
	members    []jmember // objects
	elems      []*jnode  // arrays
	// trailing is the offset of a trailing comma before the closing bracket
	// (JSONC only), or -1.
	trailing int
}

// jmember is one "key": value of an object; keyStart is the offset of the key's
// opening quote.
type jmember struct {
	key      string
	keyStart int
	val      *jnode
}

// get returns the value of key (the last one, as JSON.parse keeps the last of
// duplicate keys) and its index.
func (n *jnode) get(key string) (*jnode, int) {
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].val, i
		}
	}
	return nil, -1
}

// items returns the count of members or elements.
func (n *jnode) items() int {
	if n.kind == '{' {
		return len(n.members)
	}
	return len(n.elems)
}

// itemSpan is where item i starts (its key, for a member) and ends.
func (n *jnode) itemSpan(i int) (int, int) {
	if n.kind == '{' {
		return n.members[i].keyStart, n.members[i].val.end
	}
	return n.elems[i].start, n.elems[i].end
}

// SyntaxError says where a file stops being JSON.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

type jparser struct {
	src   []byte
	pos   int
	jsonc bool // allow // and /* */ comments and trailing commas
	depth int
}

// parseJSON parses src, which must hold exactly one value.
func parseJSON(src []byte, jsonc bool) (*jnode, error) {
	p := &jparser{src: src, jsonc: jsonc}
	if err := p.ws(); err != nil {
		return nil, err
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.pos != len(src) {
		return nil, p.fail("unexpected text after the end of the document")
	}
	return n, nil
}

func (p *jparser) fail(msg string) error {
	line, col := 1, 1
	for _, c := range p.src[:min(p.pos, len(p.src))] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Col: col, Msg: msg}
}

// ws skips white space, and comments in JSONC.
func (p *jparser) ws() error {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.jsonc && p.pos+1 < len(p.src) && p.src[p.pos+1] == '/':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.jsonc && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := bytes.Index(p.src[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.fail("unterminated /* comment")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jnode, error) {
	if p.pos >= len(p.src) {
		return nil, p.fail("unexpected end of the document")
	}
	switch c := p.src[p.pos]; {
	case c == '{' || c == '[':
		return p.container(c)
	case c == '"':
		start := p.pos
		if err := p.str(); err != nil {
			return nil, err
		}
		return &jnode{kind: '"', start: start, end: p.pos}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return nil, p.fail(fmt.Sprintf("unexpected character %q", p.src[p.pos]))
}

func (p *jparser) literal(word string) (*jnode, error) {
	if !bytes.HasPrefix(p.src[p.pos:], []byte(word)) {
		return nil, p.fail("invalid literal")
	}
	n := &jnode{kind: word[0], start: p.pos, end: p.pos + len(word)}
	p.pos += len(word)
	return n, nil
}

func (p *jparser) number() (*jnode, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.fail("invalid number")
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	return &jnode{kind: '0', start: start, end: p.pos}, nil
}

// str scans a string starting at its opening quote.
func (p *jparser) str() error {
	p.pos++
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c < 0x20:
			return p.fail("control character in a string")
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return p.fail("unterminated string")
			}
			switch p.src[p.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos += 2
			case 'u':
				if p.pos+6 > len(p.src) {
					return p.fail("invalid \\u escape")
				}
				for _, h := range p.src[p.pos+2 : p.pos+6] {
					if !strings.ContainsRune("0123456789abcdefABCDEF", rune(h)) {
						return p.fail("invalid \\u escape")
					}
				}
				p.pos += 6
			default:
				return p.fail("invalid escape in a string")
			}
		default:
			p.pos++
		}
	}
	return p.fail("unterminated string")
}

func (p *jparser) container(open byte) (*jnode, error) {
	p.depth++
	if p.depth > maxDepth {
		return nil, p.fail("nested too deeply")
	}
	defer func() { p.depth-- }()
	closer := byte('}')
	if open == '[' {
		closer = ']'
	}
	n := &jnode{kind: open, start: p.pos, trailing: -1}
	p.pos++
	if err := p.ws(); err != nil {
		return nil, err
	}
	if p.pos < len(p.src) && p.src[p.pos] == closer {
		p.pos++
		n.end = p.pos
		return n, nil
	}
	for {
		if open == '{' {
			if p.pos >= len(p.src) || p.src[p.pos] != '"' {
				return nil, p.fail("expected a member name in double quotes")
			}
			keyStart := p.pos
			if err := p.str(); err != nil {
				return nil, err
			}
			var key string
			if err := json.Unmarshal(p.src[keyStart:p.pos], &key); err != nil {
				return nil, p.fail("invalid member name")
			}
			if err := p.ws(); err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return nil, p.fail("expected ':' after a member name")
			}
			p.pos++
			if err := p.ws(); err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, jmember{key: key, keyStart: keyStart, val: v})
		} else {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
		}
		if err := p.ws(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.fail("unexpected end of the document")
		}
		switch p.src[p.pos] {
		case closer:
			p.pos++
			n.end = p.pos
			return n, nil
		case ',':
			comma := p.pos
			p.pos++
			if err := p.ws(); err != nil {
				return nil, err
			}
			if p.jsonc && p.pos < len(p.src) && p.src[p.pos] == closer {
				n.trailing = comma
				p.pos++
				n.end = p.pos
				return n, nil
			}
		default:
			return nil, p.fail(fmt.Sprintf("expected ',' or '%c'", closer))
		}
	}
}

// strict writes n as compact strict JSON (comments and trailing commas gone).
func strict(src []byte, n *jnode, out *bytes.Buffer) {
	switch n.kind {
	case '{':
		out.WriteByte('{')
		for i, m := range n.members {
			if i > 0 {
				out.WriteByte(',')
			}
			out.Write(src[m.keyStart : m.keyStart+keyLen(src, m.keyStart)])
			out.WriteByte(':')
			strict(src, m.val, out)
		}
		out.WriteByte('}')
	case '[':
		out.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				out.WriteByte(',')
			}
			strict(src, e, out)
		}
		out.WriteByte(']')
	default:
		out.Write(src[n.start:n.end])
	}
}

// keyLen is the length of the (already validated) string at start.
func keyLen(src []byte, start int) int {
	p := &jparser{src: src, pos: start}
	p.str()
	return p.pos - start
}

// decoded is n's value as encoding/json sees it, for comparing meanings.
func decoded(src []byte, n *jnode) any {
	var b bytes.Buffer
	strict(src, n, &b)
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		// strict output of a parsed node is valid JSON; nil never equals a
		// wanted value, so a surprise here makes the entry "not ours".
		return nil
	}
	return v
}

// sameJSON reports whether the value at n means the same as want (compact JSON).
func sameJSON(src []byte, n *jnode, want []byte) bool {
	var w any
	if json.Unmarshal(want, &w) != nil {
		return false
	}
	return reflect.DeepEqual(decoded(src, n), w)
}

// style is how a file lays out its containers, so insertions look like the rest.
type style struct {
	nl   string // line ending
	unit string // one level of indentation
}

func styleOf(src []byte, root *jnode) style {
	s := style{nl: "\n", unit: "  "}
	if bytes.Contains(src, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	if root != nil && (root.kind == '{' || root.kind == '[') && root.items() > 0 {
		first, _ := root.itemSpan(0)
		if ind, ok := childIndent(src, root.start, first); ok && ind != "" {
			s.unit = ind
		}
	}
	return s
}

// lineIndent is the white space that starts the line holding pos.
func lineIndent(src []byte, pos int) string {
	ls := bytes.LastIndexByte(src[:pos], '\n') + 1
	e := ls
	for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
		e++
	}
	return string(src[ls:e])
}

// childIndent is the indentation of the item at first inside the container
// opened at open, and whether the container is laid out one item per line.
func childIndent(src []byte, open, first int) (string, bool) {
	gap := src[open+1 : first]
	i := bytes.LastIndexByte(gap, '\n')
	if i < 0 {
		return "", false
	}
	return string(bytes.TrimRight(gap[i+1:], "\r")), true
}

// render encodes v (a value already in JSON form) for insertion: indented
// under prefix with unit when pretty, compact otherwise.
func render(v []byte, prefix, unit string, pretty bool) []byte {
	var out bytes.Buffer
	if !pretty {
		if err := json.Compact(&out, v); err != nil {
			return v
		}
		return out.Bytes()
	}
	if err := json.Indent(&out, v, prefix, unit); err != nil {
		return v
	}
	return out.Bytes()
}

// withNL replaces the \n that json.Indent writes by the file's line ending.
func withNL(b []byte, nl string) []byte {
	if nl == "\n" {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte(nl))
}

// insertItem adds an item at the end of container c: a member "key": val for an
// object (key != nil), an element val for an array. val is JSON text. The
// result keeps every existing byte and lays the item out like its siblings.
func insertItem(src []byte, c *jnode, key *string, val []byte, st style) []byte {
	keyText := func(colon string) string {
		if key == nil {
			return ""
		}
		k, _ := marshalNoEscape(*key)
		return string(k) + colon
	}
	closeAt := c.end - 1
	if c.items() == 0 {
		parent := lineIndent(src, c.start)
		ind := parent + st.unit
		item := keyText(": ") + string(withNL(render(val, ind, st.unit, true), st.nl))
		interior := src[c.start+1 : closeAt]
		if len(bytes.TrimSpace(interior)) == 0 {
			return splice(src, c.start+1, closeAt, st.nl+ind+item+st.nl+parent)
		}
		// Only comments inside: put the item first, before them.
		return splice(src, c.start+1, c.start+1, st.nl+ind+item)
	}
	first, _ := c.itemSpan(0)
	_, lastEnd := c.itemSpan(c.items() - 1)
	ind, multiline := childIndent(src, c.start, first)
	if multiline {
		unit := st.unit
		if parent := lineIndent(src, c.start); strings.HasPrefix(ind, parent) && len(ind) > len(parent) {
			unit = ind[len(parent):]
		}
		item := keyText(": ") + string(withNL(render(val, ind, unit, true), st.nl))
		if c.trailing >= 0 {
			return splice(src, c.trailing+1, c.trailing+1, st.nl+ind+item+",")
		}
		return splice(src, lastEnd, lastEnd, ","+st.nl+ind+item)
	}
	// One line: follow its spacing.
	sep := ""
	if first > c.start+1 {
		sep = " "
	}
	colon := ":"
	if c.kind == '{' {
		m := c.members[0]
		if between := src[m.keyStart+keyLen(src, m.keyStart) : m.val.start]; bytes.Contains(between, []byte(" ")) {
			colon = ": "
		}
	}
	item := keyText(colon) + string(render(val, "", "", false))
	if c.trailing >= 0 {
		return splice(src, c.trailing+1, c.trailing+1, sep+item+",")
	}
	return splice(src, lastEnd, lastEnd, ","+sep+item)
}

// removeItem removes item i of container c with its separator. For an item
// insertItem added, and nothing changed around it since, the result is the text
// from before the insertion, byte for byte (a container it left empty becomes
// {} or []).
func removeItem(src []byte, c *jnode, i int) []byte {
	start, end := c.itemSpan(i)
	n := c.items()
	onlyWS := func(b []byte, commas int) bool {
		seen := 0
		for _, ch := range b {
			switch ch {
			case ' ', '\t', '\n', '\r':
			case ',':
				seen++
			default:
				return false
			}
		}
		return seen == commas
	}
	closeAt := c.end - 1
	switch {
	case n == 1 && onlyWS(src[c.start+1:start], 0) && onlyWS(src[end:closeAt], boolInt(c.trailing >= 0)):
		return splice(src, c.start+1, closeAt, "")
	case i > 0 && onlyWS(src[prevEnd(c, i):start], 1):
		// From the comma on: white space before it was there before.
		comma := prevEnd(c, i) + bytes.IndexByte(src[prevEnd(c, i):start], ',')
		return splice(src, comma, end, "")
	case n == 1 && onlyWS(src[c.start+1:start], 0) && c.trailing < 0:
		// The only item, before comments: insertItem put it first with the
		// line break before it.
		return splice(src, c.start+1, end, "")
	case i == 0 && n > 1:
		next, _ := c.itemSpan(1)
		if onlyWS(src[end:next], 1) {
			return splice(src, start, next, "")
		}
	}
	// Comments around the item: cut the item and one comma, keep the comments.
	after := end
	for after < closeAt && isSpace(src[after]) {
		after++
	}
	if after < closeAt && src[after] == ',' && !(i == n-1 && c.trailing < 0) {
		return splice(src, start, after+1, "")
	}
	if i > 0 {
		if comma := bytes.LastIndexByte(src[prevEnd(c, i):start], ','); comma >= 0 {
			comma += prevEnd(c, i)
			return splice(splice(src, start, end, ""), comma, comma+1, "")
		}
	}
	return splice(src, start, end, "")
}

func prevEnd(c *jnode, i int) int {
	_, e := c.itemSpan(i - 1)
	return e
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// replaceValue puts text in place of the value n.
func replaceValue(src []byte, n *jnode, text []byte) []byte {
	return splice(src, n.start, n.end, string(text))
}

// renderAt lays val out for the place of the value n (indented like the line
// that holds it).
func renderAt(src []byte, n *jnode, val []byte, st style) []byte {
	return withNL(render(val, lineIndent(src, n.start), st.unit, true), st.nl)
}

func splice(src []byte, from, to int, text string) []byte {
	out := make([]byte, 0, len(src)-(to-from)+len(text))
	out = append(out, src[:from]...)
	out = append(out, text...)
	return append(out, src[to:]...)
}

// marshalNoEscape encodes v as compact JSON without HTML escaping (a path
// with & stays readable).
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// nest wraps val in objects for the keys in path: nest(["a","b"], v) is
// {"a":{"b":v}}.
func nest(path []string, val []byte) []byte {
	out := val
	for i := len(path) - 1; i >= 0; i-- {
		k, _ := marshalNoEscape(path[i])
		out = append(append(append([]byte("{"), k...), ':'), append(out, '}')...)
	}
	return out
}

// walk follows path from root through objects and returns the deepest node
// reached and how many keys of path it consumed.
func walk(root *jnode, path []string) (*jnode, int) {
	cur := root
	for i, k := range path {
		if cur.kind != '{' {
			return cur, i
		}
		next, _ := cur.get(k)
		if next == nil {
			return cur, i
		}
		cur = next
	}
	return cur, len(path)
}
