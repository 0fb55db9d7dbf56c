package gitguard

import (
	"strings"
)

// Entry is one key of a git config file: section and key lower-cased (git
// compares them so), subsection as written.
type Entry struct {
	Section, Subsection, Key, Value string
}

// Name is the entry's dotted name as `git config` spells it.
func (e Entry) Name() string {
	if e.Subsection != "" {
		return e.Section + "." + e.Subsection + "." + e.Key
	}
	return e.Section + "." + e.Key
}

// maxConfig bounds what ParseConfig reads: a config file git writes is a
// few KiB; the rest of a larger one is not looked at (and a workspace
// config that large is reported, see Layout).
const maxConfig = 1 << 20

// ParseConfig reads git's config syntax: [section], [section "sub"],
// the old [section.sub], key = value with quotes, escapes, line
// continuations and comments. It never fails: a line it cannot read is
// skipped, as it must be in a file a sandboxed command may have written;
// the entries that matter to the guard (hooksPath, include paths) are then
// missed, which only makes the guard watch less, never run anything.
func ParseConfig(data []byte) []Entry {
	if len(data) > maxConfig {
		data = data[:maxConfig]
	}
	var out []Entry
	section, sub := "", ""
	s := string(data)
	for len(s) > 0 {
		line, rest := logicalLine(s)
		s = rest
		t := strings.TrimLeft(line, " \t")
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
			continue
		case t[0] == '[':
			var ok bool
			section, sub, ok = header(t)
			if !ok {
				section, sub = "", ""
			}
			continue
		}
		if section == "" {
			continue
		}
		k, v, hasValue := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if !validKey(k) {
			continue
		}
		val := "true" // a key alone is a boolean
		if hasValue {
			val = value(v)
		}
		out = append(out, Entry{Section: section, Subsection: sub, Key: strings.ToLower(k), Value: val})
	}
	return out
}

// logicalLine cuts s at the first newline that is not escaped by a
// backslash (git joins such lines); the backslash-newline pairs are
// dropped.
func logicalLine(s string) (line, rest string) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			return b.String(), ""
		}
		seg := strings.TrimSuffix(s[:i], "\r")
		if strings.HasSuffix(seg, `\`) && !strings.HasSuffix(seg, `\\`) {
			b.WriteString(seg[:len(seg)-1])
			s = s[i+1:]
			continue
		}
		b.WriteString(seg)
		return b.String(), s[i+1:]
	}
}

// header reads "[section]", `[section "sub"]` or "[section.sub]".
func header(t string) (section, sub string, ok bool) {
	end := strings.LastIndexByte(t, ']')
	if end < 0 {
		return "", "", false
	}
	in := t[1:end]
	if name, quoted, found := strings.Cut(in, " "); found {
		quoted = strings.TrimSpace(quoted)
		if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
			return "", "", false
		}
		var b strings.Builder
		q := quoted[1 : len(quoted)-1]
		for i := 0; i < len(q); i++ {
			if q[i] == '\\' && i+1 < len(q) {
				i++
			}
			b.WriteByte(q[i])
		}
		return strings.ToLower(strings.TrimSpace(name)), b.String(), validName(name)
	}
	if name, s, found := strings.Cut(in, "."); found {
		// The deprecated form: the subsection is lower-cased too.
		return strings.ToLower(name), strings.ToLower(s), validName(name)
	}
	return strings.ToLower(in), "", validName(in)
}

func validName(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func validKey(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// value reads a value: surrounding blanks dropped, quotes joined, escapes
// (\" \\ \n \t \b) decoded, a comment outside quotes ending it.
func value(v string) string {
	var b strings.Builder
	inQuote, pending := false, ""
	v = strings.TrimLeft(v, " \t")
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inQuote = !inQuote
			b.WriteString(pending)
			pending = ""
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteString(pending)
			pending = ""
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(v[i])
			}
		case !inQuote && (c == '#' || c == ';'):
			return b.String()
		case !inQuote && (c == ' ' || c == '\t'):
			// Blanks inside a value count, trailing ones do not.
			pending += string(c)
		default:
			b.WriteString(pending)
			pending = ""
			b.WriteByte(c)
		}
	}
	return b.String()
}
