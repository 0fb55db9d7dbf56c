package scrub

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseDefaultTOML reads gitleaks' default config with a parser for just the TOML it
// uses: [[rules]], [[rules.allowlists]], [allowlist], key = value with strings (”' ”',
// ' ', " "), numbers, booleans and arrays of strings. A general TOML decoder takes ~7 ms
// on its 100 kB, which every sandbox process would pay; this takes a fraction of one.
// Anything it does not know is an error, and the caller then falls back to the general
// decoder; a test checks both agree on the embedded file.
func parseDefaultTOML(text string) (*tomlConfig, error) {
	p := &tomlParser{s: text}
	tc := &tomlConfig{}
	table := ""
	for {
		p.skipBlank()
		if p.eof() {
			return tc, nil
		}
		switch {
		case strings.HasPrefix(p.rest(), "[["):
			end := strings.Index(p.rest(), "]]")
			if end < 0 {
				return nil, p.errorf("unterminated table header")
			}
			table = strings.TrimSpace(p.rest()[2:end])
			p.i += end + 2
			switch table {
			case "rules":
				tc.Rules = append(tc.Rules, tomlRule{})
			case "rules.allowlists":
				if len(tc.Rules) == 0 {
					return nil, p.errorf("[[rules.allowlists]] before [[rules]]")
				}
				r := &tc.Rules[len(tc.Rules)-1]
				r.Allowlists = append(r.Allowlists, &tomlAllowlist{})
			case "allowlists":
				tc.Allowlists = append(tc.Allowlists, &tomlAllowlist{})
			default:
				return nil, p.errorf("table [[%s]] not supported", table)
			}
		case strings.HasPrefix(p.rest(), "["):
			end := strings.IndexByte(p.rest(), ']')
			if end < 0 {
				return nil, p.errorf("unterminated table header")
			}
			table = strings.TrimSpace(p.rest()[1:end])
			p.i += end + 1
			switch table {
			case "allowlist":
				tc.AllowList = &tomlAllowlist{}
			default:
				return nil, p.errorf("table [%s] not supported", table)
			}
		default:
			if err := p.keyValue(tc, table); err != nil {
				return nil, err
			}
		}
		p.skipSpaces()
		if !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != '#' && p.s[p.i] != '\r' {
			return nil, p.errorf("unexpected text after value")
		}
	}
}

type tomlParser struct {
	s string
	i int
}

func (p *tomlParser) eof() bool    { return p.i >= len(p.s) }
func (p *tomlParser) rest() string { return p.s[p.i:] }

func (p *tomlParser) errorf(format string, a ...any) error {
	line := strings.Count(p.s[:min(p.i, len(p.s))], "\n") + 1
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
}

func (p *tomlParser) skipSpaces() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipBlank skips blanks, newlines and comments.
func (p *tomlParser) skipBlank() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		case '#':
			if j := strings.IndexByte(p.s[p.i:], '\n'); j >= 0 {
				p.i += j + 1
			} else {
				p.i = len(p.s)
			}
		default:
			return
		}
	}
}

func (p *tomlParser) keyValue(tc *tomlConfig, table string) error {
	k := p.i
	for p.i < len(p.s) && (isASCIIWord(p.s[p.i]) || p.s[p.i] == '-') {
		p.i++
	}
	key := p.s[k:p.i]
	p.skipSpaces()
	if key == "" || p.eof() || p.s[p.i] != '=' {
		return p.errorf("expected key = value")
	}
	p.i++
	p.skipSpaces()
	v, err := p.value()
	if err != nil {
		return err
	}
	var al *tomlAllowlist
	switch table {
	case "":
		switch key {
		case "title":
			return setString(&tc.Title, v, p)
		case "description":
			return setString(&tc.Description, v, p)
		case "minVersion":
			return setString(&tc.MinVersion, v, p)
		}
		return p.errorf("key %q not supported", key)
	case "rules":
		r := &tc.Rules[len(tc.Rules)-1]
		switch key {
		case "id":
			return setString(&r.ID, v, p)
		case "description":
			return setString(&r.Description, v, p)
		case "regex":
			return setString(&r.Regex, v, p)
		case "path":
			return setString(&r.Path, v, p)
		case "keywords":
			return setStrings(&r.Keywords, v, p)
		case "tags":
			return setStrings(&r.Tags, v, p)
		case "entropy":
			switch n := v.(type) {
			case float64:
				r.Entropy = n
			case int64:
				r.Entropy = float64(n)
			default:
				return p.errorf("entropy: not a number")
			}
			return nil
		case "secretGroup":
			n, ok := v.(int64)
			if !ok || n != int64(int(n)) {
				return p.errorf("secretGroup: not an integer")
			}
			r.SecretGroup = int(n)
			return nil
		case "skipReport":
			b, ok := v.(bool)
			if !ok {
				return p.errorf("skipReport: not a boolean")
			}
			r.SkipReport = b
			return nil
		}
		return p.errorf("rule key %q not supported", key)
	case "rules.allowlists":
		r := &tc.Rules[len(tc.Rules)-1]
		al = r.Allowlists[len(r.Allowlists)-1]
	case "allowlist":
		al = tc.AllowList
	case "allowlists":
		al = tc.Allowlists[len(tc.Allowlists)-1]
	}
	switch key {
	case "description":
		return setString(&al.Description, v, p)
	case "condition":
		return setString(&al.Condition, v, p)
	case "regexTarget":
		return setString(&al.RegexTarget, v, p)
	case "paths":
		return setStrings(&al.Paths, v, p)
	case "regexes":
		return setStrings(&al.Regexes, v, p)
	case "stopwords":
		return setStrings(&al.StopWords, v, p)
	case "commits":
		return setStrings(&al.Commits, v, p)
	case "targetRules":
		return setStrings(&al.TargetRules, v, p)
	}
	return p.errorf("allowlist key %q not supported", key)
}

func setString(dst *string, v any, p *tomlParser) error {
	s, ok := v.(string)
	if !ok {
		return p.errorf("expected a string")
	}
	*dst = s
	return nil
}

func setStrings(dst *[]string, v any, p *tomlParser) error {
	s, ok := v.([]string)
	if !ok {
		return p.errorf("expected an array of strings")
	}
	*dst = s
	return nil
}

// value reads a string, a number, a boolean or an array of strings.
func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, p.errorf("missing value")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '[':
		p.i++
		var out []string
		for {
			p.skipBlank()
			if p.eof() {
				return nil, p.errorf("unterminated array")
			}
			if p.s[p.i] == ']' {
				p.i++
				if out == nil {
					out = []string{}
				}
				return out, nil
			}
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			p.skipBlank()
			switch {
			case !p.eof() && p.s[p.i] == ',':
				p.i++
			case !p.eof() && p.s[p.i] == ']':
			default:
				return nil, p.errorf("expected ',' or ']' after an array element")
			}
		}
	case c == 't' && strings.HasPrefix(p.rest(), "true"):
		p.i += 4
		return true, nil
	case c == 'f' && strings.HasPrefix(p.rest(), "false"):
		p.i += 5
		return false, nil
	default:
		j := p.i
		for j < len(p.s) && strings.IndexByte("0123456789.-+", p.s[j]) >= 0 {
			j++
		}
		n, ok := plainNumber(p.s[p.i:j])
		if !ok {
			return nil, p.errorf("unsupported value")
		}
		p.i = j
		return n, nil
	}
}

// plainNumber reads the two number forms the default config uses, as TOML
// spells them: an integer (int64) without leading zeros, or a decimal
// fraction (float64) with digits on both sides of the point. Anything else
// TOML allows (exponents, underscores, hex, inf) makes the parser give up,
// for the general decoder to read.
func plainNumber(s string) (any, bool) {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 {
		return nil, false
	}
	whole, frac, isFloat := strings.Cut(digits, ".")
	if whole == "" || len(whole) > 1 && whole[0] == '0' || strings.Trim(whole, "0123456789") != "" {
		return nil, false
	}
	if !isFloat {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if frac == "" || strings.Trim(frac, "0123456789") != "" {
		return nil, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// str reads a literal ('...', ”'...”') or basic ("...") string.
func (p *tomlParser) str() (string, error) {
	r := p.rest()
	switch {
	case strings.HasPrefix(r, "'''"):
		end := strings.Index(r[3:], "'''")
		if end < 0 {
			return "", p.errorf("unterminated ''' string")
		}
		s := r[3 : 3+end]
		// A newline right after the opening quotes is not part of the string.
		s = strings.TrimPrefix(strings.TrimPrefix(s, "\r"), "\n")
		p.i += 6 + end
		// Up to two more quotes belong to the string ('''it's'''').
		for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] == '\''; k++ {
			s += "'"
			p.i++
		}
		return s, nil
	case strings.HasPrefix(r, `"""`):
		return "", p.errorf(`""" strings not supported`)
	case strings.HasPrefix(r, "'"):
		end := strings.IndexAny(r[1:], "'\n")
		if end < 0 || r[1+end] != '\'' {
			return "", p.errorf("unterminated ' string")
		}
		p.i += end + 2
		return r[1 : 1+end], nil
	case strings.HasPrefix(r, `"`):
		var b strings.Builder
		for i := 1; i < len(r); i++ {
			switch c := r[i]; c {
			case '"':
				p.i += i + 1
				return b.String(), nil
			case '\n':
				return "", p.errorf("newline in a string")
			case '\\':
				if i+1 >= len(r) {
					return "", p.errorf("bad escape")
				}
				i++
				switch r[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case '"', '\\':
					b.WriteByte(r[i])
				case 'u':
					if i+4 >= len(r) {
						return "", p.errorf("bad escape")
					}
					n, err := strconv.ParseUint(r[i+1:i+5], 16, 32)
					if err != nil {
						return "", p.errorf("bad escape")
					}
					b.WriteRune(rune(n))
					i += 4
				default:
					return "", p.errorf("escape \\%c not supported", r[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", p.errorf("unterminated string")
	}
	return "", errors.New("expected a string")
}
