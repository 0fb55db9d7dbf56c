package hook

// The hook reads one key of contextd's TOML configuration. Linking a TOML
// library would cost every proxy start (every tool call) its initialisation
// (BurntSushi/toml loads the local time zone at init, 0.3-0.7 ms here), so
// this file scans the document for [hook] blocked and nothing else: it follows
// TOML's strings, arrays, inline tables and comments only far enough to skip
// them. The daemon parses the whole file strictly and refuses to start on an
// invalid one; a test compares this scanner with the daemon's parser.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxTOMLDepth bounds nesting of arrays and inline tables.
const maxTOMLDepth = 256

type tomlScanner struct {
	src   string
	pos   int
	depth int
}

func (s *tomlScanner) fail(format string, a ...any) error {
	line := 1 + strings.Count(s.src[:min(s.pos, len(s.src))], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
}

// scanBlocked returns the value of hook.blocked in the TOML document src, and
// whether it is set.
func scanBlocked(src string) ([]string, bool, error) {
	s := &tomlScanner{src: src}
	var table []string
	var out []string
	found := false
	take := func(path []string, v any) error {
		got, ok := blockedIn(path, v)
		if !ok {
			return nil
		}
		if found {
			return s.fail("hook.blocked is set twice")
		}
		list, err := stringList(got)
		if err != nil {
			return s.fail("hook.blocked: %v", err)
		}
		out, found = list, true
		return nil
	}
	for {
		s.skipBlank(true)
		if s.pos >= len(s.src) {
			return out, found, nil
		}
		if s.src[s.pos] == '[' {
			arrayTable := strings.HasPrefix(s.src[s.pos:], "[[")
			s.pos++
			if arrayTable {
				s.pos++
			}
			s.skipBlank(false)
			path, err := s.key()
			if err != nil {
				return nil, false, err
			}
			closer := "]"
			if arrayTable {
				closer = "]]"
				// An element of an array of tables is never the [hook] table.
				path = append(path, "[]")
			}
			if !strings.HasPrefix(s.src[s.pos:], closer) {
				return nil, false, s.fail("expected %s after a table name", closer)
			}
			s.pos += len(closer)
			table = path
			if err := s.endOfLine(); err != nil {
				return nil, false, err
			}
			continue
		}
		path, err := s.key()
		if err != nil {
			return nil, false, err
		}
		if s.pos >= len(s.src) || s.src[s.pos] != '=' {
			return nil, false, s.fail("expected = after a key")
		}
		s.pos++
		s.skipBlank(false)
		v, err := s.value()
		if err != nil {
			return nil, false, err
		}
		full := append(append([]string{}, table...), path...)
		if err := take(full, v); err != nil {
			return nil, false, err
		}
		if err := s.endOfLine(); err != nil {
			return nil, false, err
		}
	}
}

// blockedIn finds hook.blocked in a value set at path: the value itself, or
// a member of an inline table (hook = {blocked = [...]}).
func blockedIn(path []string, v any) (any, bool) {
	switch {
	// Case does not matter, as in the daemon's decoder (BurntSushi/toml
	// matches field names like encoding/json does).
	case len(path) == 2 && strings.EqualFold(path[0], "hook") && strings.EqualFold(path[1], "blocked"):
		return v, true
	case len(path) < 2:
		t, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		for k, sub := range t {
			if got, ok := blockedIn(append(append([]string{}, path...), k), sub); ok {
				return got, true
			}
		}
	}
	return nil, false
}

func stringList(v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, errors.New("not an array of tool names")
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		str, ok := e.(string)
		if !ok {
			return nil, errors.New("not an array of tool names")
		}
		out = append(out, str)
	}
	return out, nil
}

// skipBlank passes spaces, tabs and comments, and line ends too when lines.
func (s *tomlScanner) skipBlank(lines bool) {
	for s.pos < len(s.src) {
		switch c := s.src[s.pos]; {
		case c == ' ' || c == '\t':
			s.pos++
		case c == '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case lines && (c == '\n' || c == '\r'):
			s.pos++
		default:
			return
		}
	}
}

// endOfLine expects nothing but blanks and a comment up to the line's end.
func (s *tomlScanner) endOfLine() error {
	s.skipBlank(false)
	if s.pos < len(s.src) && s.src[s.pos] != '\n' && s.src[s.pos] != '\r' {
		return s.fail("unexpected %q after a value", s.src[s.pos])
	}
	return nil
}

// key reads a dotted key of bare and quoted parts, and the blanks after it.
func (s *tomlScanner) key() ([]string, error) {
	var parts []string
	for {
		s.skipBlank(false)
		if s.pos >= len(s.src) {
			return nil, s.fail("a key is missing")
		}
		switch c := s.src[s.pos]; {
		case c == '"' || c == '\'':
			if strings.HasPrefix(s.src[s.pos:], `"""`) || strings.HasPrefix(s.src[s.pos:], `'''`) {
				return nil, s.fail("a key cannot be a multi-line string")
			}
			v, err := s.str()
			if err != nil {
				return nil, err
			}
			parts = append(parts, v)
		default:
			start := s.pos
			for s.pos < len(s.src) && isBare(s.src[s.pos]) {
				s.pos++
			}
			if s.pos == start {
				return nil, s.fail("unexpected %q where a key belongs", c)
			}
			parts = append(parts, s.src[start:s.pos])
		}
		s.skipBlank(false)
		if s.pos < len(s.src) && s.src[s.pos] == '.' {
			s.pos++
			continue
		}
		return parts, nil
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value reads one value: a string, an array, an inline table (as []any and
// map[string]any), or any other scalar, which is skipped (returned as nil).
func (s *tomlScanner) value() (any, error) {
	if s.pos >= len(s.src) {
		return nil, s.fail("a value is missing")
	}
	switch s.src[s.pos] {
	case '"', '\'':
		return s.str()
	case '[':
		return s.array()
	case '{':
		return s.inlineTable()
	}
	start := s.pos
	for s.pos < len(s.src) && !strings.ContainsRune(",]}#\r\n", rune(s.src[s.pos])) {
		s.pos++
	}
	if strings.TrimSpace(s.src[start:s.pos]) == "" {
		return nil, s.fail("a value is missing")
	}
	return nil, nil
}

func (s *tomlScanner) nest() error {
	s.depth++
	if s.depth > maxTOMLDepth {
		return s.fail("nested too deeply")
	}
	return nil
}

func (s *tomlScanner) array() (any, error) {
	if err := s.nest(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++
	out := []any{}
	for {
		s.skipBlank(true)
		if s.pos >= len(s.src) {
			return nil, s.fail("unterminated array")
		}
		if s.src[s.pos] == ']' {
			s.pos++
			return out, nil
		}
		v, err := s.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		s.skipBlank(true)
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.src) && s.src[s.pos] == ']' {
			s.pos++
			return out, nil
		}
		return nil, s.fail("expected , or ] in an array")
	}
}

func (s *tomlScanner) inlineTable() (any, error) {
	if err := s.nest(); err != nil {
		return nil, err
	}
	defer func() { s.depth-- }()
	s.pos++
	out := map[string]any{}
	for {
		s.skipBlank(true)
		if s.pos < len(s.src) && s.src[s.pos] == '}' {
			s.pos++
			return out, nil
		}
		path, err := s.key()
		if err != nil {
			return nil, err
		}
		if s.pos >= len(s.src) || s.src[s.pos] != '=' {
			return nil, s.fail("expected = in an inline table")
		}
		s.pos++
		s.skipBlank(false)
		v, err := s.value()
		if err != nil {
			return nil, err
		}
		// a.b = v inside {} is {a = {b = v}}.
		cur := out
		for _, k := range path[:len(path)-1] {
			next, ok := cur[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
		cur[path[len(path)-1]] = v
		s.skipBlank(true)
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			s.pos++
			continue
		}
		if s.pos < len(s.src) && s.src[s.pos] == '}' {
			s.pos++
			return out, nil
		}
		return nil, s.fail("expected , or } in an inline table")
	}
}

// str reads a basic or literal string, single- or multi-line.
func (s *tomlScanner) str() (string, error) {
	q := s.src[s.pos]
	multi := strings.HasPrefix(s.src[s.pos:], strings.Repeat(string(q), 3))
	if multi {
		s.pos += 3
		// A line break right after the opening quotes is not part of it.
		if strings.HasPrefix(s.src[s.pos:], "\r\n") {
			s.pos += 2
		} else if strings.HasPrefix(s.src[s.pos:], "\n") {
			s.pos++
		}
	} else {
		s.pos++
	}
	var b strings.Builder
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case multi && strings.HasPrefix(s.src[s.pos:], strings.Repeat(string(q), 3)):
			// Up to two more quotes may end the content: """"" is "" then """.
			n := 3
			for n < 5 && s.pos+n < len(s.src) && s.src[s.pos+n] == q {
				n++
			}
			b.WriteString(strings.Repeat(string(q), n-3))
			s.pos += n
			return b.String(), nil
		case !multi && c == q:
			s.pos++
			return b.String(), nil
		case !multi && (c == '\n' || c == '\r'):
			return "", s.fail("line break in a string")
		case q == '"' && c == '\\':
			if err := s.escape(&b, multi); err != nil {
				return "", err
			}
		case c < 0x20 && c != '\t' && !(multi && (c == '\n' || c == '\r')), c == 0x7f:
			return "", s.fail("control character in a string")
		default:
			b.WriteByte(c)
			s.pos++
		}
	}
	return "", s.fail("unterminated string")
}

// escape decodes one backslash escape of a basic string.
func (s *tomlScanner) escape(b *strings.Builder, multi bool) error {
	if s.pos+1 >= len(s.src) {
		return s.fail("unterminated string")
	}
	e := s.src[s.pos+1]
	simple := map[byte]byte{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\', 'e': 0x1b}
	if r, ok := simple[e]; ok {
		b.WriteByte(r)
		s.pos += 2
		return nil
	}
	hexLen := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
	if hexLen > 0 {
		if s.pos+2+hexLen > len(s.src) {
			return s.fail("invalid \\%c escape", e)
		}
		n, err := strconv.ParseUint(s.src[s.pos+2:s.pos+2+hexLen], 16, 32)
		if err != nil || !utf8.ValidRune(rune(n)) {
			return s.fail("invalid \\%c escape", e)
		}
		b.WriteRune(rune(n))
		s.pos += 2 + hexLen
		return nil
	}
	if multi {
		// A backslash at a line's end swallows the break and the blanks after.
		i := s.pos + 1
		for i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t') {
			i++
		}
		if i < len(s.src) && (s.src[i] == '\n' || s.src[i] == '\r') {
			for i < len(s.src) && strings.ContainsRune(" \t\r\n", rune(s.src[i])) {
				i++
			}
			s.pos = i
			return nil
		}
	}
	return s.fail("invalid escape \\%c", e)
}
