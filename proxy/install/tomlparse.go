package install

// A small TOML parser for the files install edits for Codex CLI
// (.codex/config.toml and the user's ~/.codex/config.toml). Like jsonedit.go
// it remembers where every statement lies, so that install can append a table
// or insert one key line and leave every other byte (comments, order, spacing)
// as it was. It is deliberately stricter than TOML where TOML is unusual: a
// file it does not accept is refused, never rewritten. BurntSushi/toml, which
// the daemon and the hook decode with, tells no positions; the tests check
// this parser against it (every document it accepts, the library accepts
// with the same meaning).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// tstmt is one statement of a TOML document: a table header or a key/value.
type tstmt struct {
	header    bool     // [table] (array tables are headers too, with array set)
	array     bool     // [[table]]
	table     []string // the table the statement is in (for a header: the table it opens)
	key       []string // the dotted key of a key/value, relative to table
	value     any      // decoded value: string, bool, int64, float64, []any, map[string]any, or a scalar's text
	lineStart int      // start of the line the statement begins on
	lineEnd   int      // after the line break ending the statement's last line (or the end of the document)
}

// tdoc is a parsed TOML document.
type tdoc struct {
	src   string
	stmts []tstmt
	root  *tnode
}

// tnode is a table or a value in the document's tree.
type tnode struct {
	kind  byte // 'T' table opened by a header, 'I' implicit table (a header's parent), 'D' table made by dotted keys, 'A' array of tables, 'V' value
	kids  map[string]*tnode
	elems []*tnode // array of tables
	value any
}

const maxTOMLNest = 128

type tparser struct {
	src   string
	pos   int
	depth int
	doc   *tdoc
	table []string
	cur   *tnode // the table statements go into
}

// parseTOML parses src, refusing anything it is not sure of.
func parseTOML(src string) (*tdoc, error) {
	p := &tparser{src: src, doc: &tdoc{src: src, root: &tnode{kind: 'T', kids: map[string]*tnode{}}}}
	p.cur = p.doc.root
	if !utf8.ValidString(src) {
		return nil, p.fail("not UTF-8 text")
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\r' && (i+1 >= len(src) || src[i+1] != '\n') {
			p.pos = i
			return nil, p.fail("a carriage return without a line feed")
		}
		// TOML allows no other control character, in strings or comments.
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			p.pos = i
			return nil, p.fail("a control character")
		}
	}
	for {
		p.blank(true)
		if p.pos >= len(src) {
			return p.doc, nil
		}
		lineStart := strings.LastIndexByte(src[:p.pos], '\n') + 1
		if strings.TrimSpace(src[lineStart:p.pos]) != "" {
			return nil, p.fail("two statements on one line")
		}
		st := tstmt{lineStart: lineStart}
		if src[p.pos] == '[' {
			if err := p.header(&st); err != nil {
				return nil, err
			}
		} else if err := p.keyValue(&st); err != nil {
			return nil, err
		}
		if err := p.endOfLine(); err != nil {
			return nil, err
		}
		st.lineEnd = p.pos
		if p.pos < len(src) {
			st.lineEnd = p.pos + 1 // the \n (a \r before it was passed by endOfLine)
		}
		p.doc.stmts = append(p.doc.stmts, st)
	}
}

func (p *tparser) fail(format string, a ...any) error {
	line := 1 + strings.Count(p.src[:min(p.pos, len(p.src))], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
}

// blank passes spaces, tabs and comments, and line ends too when lines.
func (p *tparser) blank(lines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case lines && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func (p *tparser) endOfLine() error {
	start := p.pos
	p.blank(false)
	// Control characters are not allowed in comments.
	for _, c := range []byte(p.src[start:p.pos]) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return p.fail("control character in a comment")
		}
	}
	if p.pos < len(p.src) && p.src[p.pos] == '\r' {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] != '\n' {
		return p.fail("unexpected %q after a statement", p.src[p.pos])
	}
	return nil
}

func (p *tparser) header(st *tstmt) error {
	st.header = true
	st.array = strings.HasPrefix(p.src[p.pos:], "[[")
	p.pos++
	if st.array {
		p.pos++
	}
	path, err := p.key()
	if err != nil {
		return err
	}
	closer := "]"
	if st.array {
		closer = "]]"
	}
	if !strings.HasPrefix(p.src[p.pos:], closer) {
		return p.fail("expected %s after a table name", closer)
	}
	p.pos += len(closer)
	st.table = path
	p.table = path
	// Walk the tree: parents become implicit tables.
	n := p.doc.root
	for _, k := range path[:len(path)-1] {
		next := n.kids[k]
		switch {
		case next == nil:
			next = &tnode{kind: 'I', kids: map[string]*tnode{}}
			n.kids[k] = next
		case next.kind == 'A':
			next = next.elems[len(next.elems)-1]
		case next.kind == 'V' || next.kind == 'D':
			return p.fail("table %s is already defined as a value", strings.Join(path, "."))
		}
		n = next
	}
	last := path[len(path)-1]
	cur := n.kids[last]
	switch {
	case st.array && cur == nil:
		cur = &tnode{kind: 'A'}
		n.kids[last] = cur
		fallthrough
	case st.array && cur.kind == 'A':
		el := &tnode{kind: 'T', kids: map[string]*tnode{}}
		cur.elems = append(cur.elems, el)
		p.cur = el
	case st.array:
		return p.fail("%s is already defined, not as an array of tables", strings.Join(path, "."))
	case cur == nil:
		cur = &tnode{kind: 'T', kids: map[string]*tnode{}}
		n.kids[last] = cur
		p.cur = cur
	case cur.kind == 'I':
		cur.kind = 'T'
		p.cur = cur
	default:
		return p.fail("table %s is defined twice", strings.Join(path, "."))
	}
	return nil
}

func (p *tparser) keyValue(st *tstmt) error {
	key, err := p.key()
	if err != nil {
		return err
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '=' {
		return p.fail("expected = after a key")
	}
	p.pos++
	p.blank(false)
	v, err := p.value()
	if err != nil {
		return err
	}
	st.table, st.key, st.value = p.table, key, v
	n := p.cur
	for _, k := range key[:len(key)-1] {
		next := n.kids[k]
		switch {
		case next == nil:
			next = &tnode{kind: 'D', kids: map[string]*tnode{}}
			n.kids[k] = next
		case next.kind != 'D':
			return p.fail("%s is already defined", strings.Join(key, "."))
		}
		n = next
	}
	last := key[len(key)-1]
	if n.kids[last] != nil {
		return p.fail("%s is defined twice", strings.Join(key, "."))
	}
	n.kids[last] = &tnode{kind: 'V', value: v}
	return nil
}

// key reads a dotted key and the blanks after it.
func (p *tparser) key() ([]string, error) {
	var parts []string
	for {
		p.blank(false)
		if p.pos >= len(p.src) {
			return nil, p.fail("a key is missing")
		}
		switch c := p.src[p.pos]; {
		case c == '"' || c == '\'':
			if strings.HasPrefix(p.src[p.pos:], `"""`) || strings.HasPrefix(p.src[p.pos:], `'''`) {
				return nil, p.fail("a key cannot be a multi-line string")
			}
			v, err := p.str()
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		default:
			start := p.pos
			for p.pos < len(p.src) && isBare(p.src[p.pos]) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.fail("unexpected %q where a key belongs", c)
			}
			parts = append(parts, p.src[start:p.pos])
		}
		p.blank(false)
		if p.pos < len(p.src) && p.src[p.pos] == '.' {
			p.pos++
			continue
		}
		return parts, nil
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (p *tparser) nest() error {
	p.depth++
	if p.depth > maxTOMLNest {
		return p.fail("nested too deeply")
	}
	return nil
}

func (p *tparser) value() (any, error) {
	if p.pos >= len(p.src) {
		return nil, p.fail("a value is missing")
	}
	switch p.src[p.pos] {
	case '"', '\'':
		return p.str()
	case '[':
		return p.array()
	case '{':
		return p.inlineTable()
	}
	start := p.pos
	for p.pos < len(p.src) && !strings.ContainsRune(",]}#\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	text := strings.TrimRight(p.src[start:p.pos], " \t")
	p.pos = start + len(text)
	v, ok := scalar(text)
	if !ok {
		return nil, p.fail("%q is not a value contextd understands", text)
	}
	return v, nil
}

// The scalar forms, compiled on first use: install is linked into the proxy,
// which starts on every tool call and parses no TOML there.
var tomlScalars = sync.OnceValue(func() (r struct{ int, radix, float, date, time *regexp.Regexp }) {
	r.int = regexp.MustCompile(`^[+-]?(0|[1-9](_?[0-9])*)$`)
	r.radix = regexp.MustCompile(`^0(x[0-9a-fA-F](_?[0-9a-fA-F])*|o[0-7](_?[0-7])*|b[01](_?[01])*)$`)
	r.float = regexp.MustCompile(`^[+-]?(0|[1-9](_?[0-9])*)(\.[0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?$`)
	r.date = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?)?$`)
	r.time = regexp.MustCompile(`^\d{2}:\d{2}:\d{2}(\.\d+)?$`)
	return r
})

// scalar decodes a bare value: a boolean, an integer, a float, a date or time
// (kept as its text).
func scalar(s string) (any, bool) {
	re := tomlScalars()
	switch {
	case s == "true":
		return true, true
	case s == "false":
		return false, true
	case re.int.MatchString(s):
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		return n, err == nil
	case re.radix.MatchString(s):
		n, err := strconv.ParseInt(strings.ReplaceAll(s[2:], "_", ""), map[byte]int{'x': 16, 'o': 8, 'b': 2}[s[1]], 64)
		return n, err == nil
	case re.float.MatchString(s):
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		return f, err == nil
	case re.date.MatchString(s):
		d := strings.NewReplacer("t", "T", " ", "T", "z", "Z").Replace(s)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
			if _, err := time.Parse(layout, d); err == nil {
				return s, true
			}
		}
		return nil, false
	case re.time.MatchString(s):
		_, err := time.Parse("15:04:05.999999999", s)
		return s, err == nil
	}
	return nil, false
}

func (p *tparser) array() (any, error) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	out := []any{}
	for {
		if err := p.arrayBlank(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) {
			return nil, p.fail("unterminated array")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if err := p.arrayBlank(); err != nil {
			return nil, err
		}
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			return out, nil
		}
		return nil, p.fail("expected , or ] in an array")
	}
}

// arrayBlank passes blanks, comments and line ends inside an array, checking
// the comments.
func (p *tparser) arrayBlank() error {
	for {
		if err := p.endOfLineOrNot(); err != nil {
			return err
		}
		if p.pos < len(p.src) && (p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
			p.pos++
			continue
		}
		return nil
	}
}

func (p *tparser) endOfLineOrNot() error {
	start := p.pos
	p.blank(false)
	for _, c := range []byte(p.src[start:p.pos]) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return p.fail("control character in a comment")
		}
	}
	return nil
}

// inlineTable reads { k = v, ... } on one line (no trailing comma, no line
// breaks: TOML 1.0).
func (p *tparser) inlineTable() (any, error) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	out := map[string]any{}
	dotted := map[string]bool{} // sub-tables made by dotted keys here
	p.blank(false)
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return out, nil
	}
	for {
		path, err := p.key()
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '=' {
			return nil, p.fail("expected = in an inline table")
		}
		p.pos++
		p.blank(false)
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		cur, prefix := out, ""
		for _, k := range path[:len(path)-1] {
			prefix += "\x00" + k
			next, ok := cur[k].(map[string]any)
			switch {
			case cur[k] == nil:
				next = map[string]any{}
				cur[k] = next
				dotted[prefix] = true
			case !ok || !dotted[prefix]:
				return nil, p.fail("%s is defined twice in an inline table", strings.Join(path, "."))
			}
			cur = next
		}
		if _, dup := cur[path[len(path)-1]]; dup {
			return nil, p.fail("%s is defined twice in an inline table", strings.Join(path, "."))
		}
		cur[path[len(path)-1]] = v
		p.blank(false)
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			p.blank(false)
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			return out, nil
		}
		return nil, p.fail("expected , or } in an inline table")
	}
}

// str reads a basic or literal string, single- or multi-line.
func (p *tparser) str() (string, error) {
	q := p.src[p.pos]
	three := strings.Repeat(string(q), 3)
	multi := strings.HasPrefix(p.src[p.pos:], three)
	if multi {
		p.pos += 3
		if strings.HasPrefix(p.src[p.pos:], "\r\n") {
			p.pos += 2
		} else if strings.HasPrefix(p.src[p.pos:], "\n") {
			p.pos++
		}
	} else {
		p.pos++
	}
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case multi && strings.HasPrefix(p.src[p.pos:], three):
			n := 3
			for n < 5 && p.pos+n < len(p.src) && p.src[p.pos+n] == q {
				n++
			}
			b.WriteString(strings.Repeat(string(q), n-3))
			p.pos += n
			return b.String(), nil
		case !multi && c == q:
			p.pos++
			return b.String(), nil
		case !multi && (c == '\n' || c == '\r'):
			return "", p.fail("line break in a string")
		case q == '"' && c == '\\':
			if err := p.escape(&b, multi); err != nil {
				return "", err
			}
		case c < 0x20 && c != '\t' && !(multi && (c == '\n' || c == '\r')), c == 0x7f:
			return "", p.fail("control character in a string")
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.fail("unterminated string")
}

// escape decodes one backslash escape of a basic string (TOML 1.0's, so
// that every version of Codex reads what install accepted).
func (p *tparser) escape(b *strings.Builder, multi bool) error {
	if p.pos+1 >= len(p.src) {
		return p.fail("unterminated string")
	}
	e := p.src[p.pos+1]
	simple := map[byte]byte{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}
	if r, ok := simple[e]; ok {
		b.WriteByte(r)
		p.pos += 2
		return nil
	}
	if hexLen := map[byte]int{'u': 4, 'U': 8}[e]; hexLen > 0 {
		if p.pos+2+hexLen > len(p.src) {
			return p.fail("invalid \\%c escape", e)
		}
		digits := p.src[p.pos+2 : p.pos+2+hexLen]
		n, err := strconv.ParseUint(digits, 16, 32)
		if err != nil || strings.ContainsAny(digits, "+-_") || !utf8.ValidRune(rune(n)) {
			return p.fail("invalid \\%c escape", e)
		}
		b.WriteRune(rune(n))
		p.pos += 2 + hexLen
		return nil
	}
	if multi {
		// A line-ending backslash trims the line break and the blanks after it.
		i := p.pos + 1
		for i < len(p.src) && (p.src[i] == ' ' || p.src[i] == '\t') {
			i++
		}
		if i < len(p.src) && (p.src[i] == '\n' || p.src[i] == '\r') {
			for i < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[i])) {
				i++
			}
			p.pos = i
			return nil
		}
	}
	return p.fail("invalid escape \\%c", e)
}

// lookup returns the node at path (through tables, dotted tables and inline
// tables: an inline table's members come back as value nodes).
func (d *tdoc) lookup(path []string) *tnode {
	n := d.root
	for _, k := range path {
		switch {
		case n.kind == 'V':
			m, ok := n.value.(map[string]any)
			if !ok {
				return nil
			}
			v, ok := m[k]
			if !ok {
				return nil
			}
			n = &tnode{kind: 'V', value: v}
		case n.kind == 'A':
			return nil
		default:
			if n = n.kids[k]; n == nil {
				return nil
			}
		}
	}
	return n
}

// plain is n's meaning as plain Go values (tables as map[string]any).
func (n *tnode) plain() any {
	switch n.kind {
	case 'V':
		return n.value
	case 'A':
		out := make([]any, len(n.elems))
		for i, e := range n.elems {
			out[i] = e.plain()
		}
		return out
	}
	m := map[string]any{}
	for k, v := range n.kids {
		m[k] = v.plain()
	}
	return m
}

// section finds the header statement [path] (not an array table) and returns
// its index, or -1.
func (d *tdoc) section(path []string) int {
	for i, s := range d.stmts {
		if s.header && !s.array && slicesEqual(s.table, path) {
			return i
		}
	}
	return -1
}

// sectionEnd is the index after the last statement belonging to the section
// opened at header index h (-1: the top level before any header).
func (d *tdoc) sectionEnd(h int) int {
	for i := h + 1; i < len(d.stmts); i++ {
		if d.stmts[i].header {
			return i
		}
	}
	return len(d.stmts)
}

// keyStmt finds the key/value statement setting exactly table.key directly in
// the section opened at h (-1: the top level), or -1.
func (d *tdoc) keyStmt(h int, key string) int {
	for i := h + 1; i < d.sectionEnd(h); i++ {
		if s := d.stmts[i]; !s.header && len(s.key) == 1 && s.key[0] == key {
			return i
		}
	}
	return -1
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
