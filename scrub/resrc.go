package scrub

import (
	"regexp/syntax"
	"strconv"
	"strings"
)

// Rewriting regexes as source text. regexp/syntax can print a tree back to a pattern, but
// printing a negated class ([^=], [\s\S]) walks every rune's case folding and takes
// milliseconds per class; curl-auth-user alone took 15 ms. So the few rewrites Find needs
// (drop a leading prefix, relax long repeats, split an alternation) are done on the
// source, and each result is checked against the tree-level rewrite, falling back to
// printing the tree when they differ.

// atomEnd returns the end of the regex atom starting at src[i]: an escape, a character
// class, a group or a single character.
func atomEnd(src string, i int) int {
	if i >= len(src) {
		return i
	}
	switch src[i] {
	case '\\':
		if i+1 >= len(src) {
			return len(src)
		}
		switch src[i+1] {
		case 'x', 'p', 'P':
			if i+2 < len(src) && src[i+2] == '{' {
				if j := strings.IndexByte(src[i:], '}'); j >= 0 {
					return i + j + 1
				}
				return len(src)
			}
			if src[i+1] == 'x' {
				return min(len(src), i+4)
			}
			return min(len(src), i+3)
		case 'Q':
			if j := strings.Index(src[i:], `\E`); j >= 0 {
				return i + j + 2
			}
			return len(src)
		}
		return i + 2
	case '[':
		j := i + 1
		if j < len(src) && src[j] == '^' {
			j++
		}
		if j < len(src) && src[j] == ']' {
			j++
		}
		for j < len(src) {
			switch {
			case src[j] == '\\':
				j = atomEnd(src, j)
			case strings.HasPrefix(src[j:], "[:"):
				if k := strings.Index(src[j:], ":]"); k >= 0 {
					j += k + 2
				} else {
					j++
				}
			case src[j] == ']':
				return j + 1
			default:
				j++
			}
		}
		return len(src)
	case '(':
		depth := 0
		for j := i; j < len(src); {
			switch src[j] {
			case '\\', '[':
				j = atomEnd(src, j)
				continue
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(src)
	}
	return i + 1
}

// quantEnd returns the end of the quantifier at src[i], or i if there is none.
func quantEnd(src string, i int) int {
	if i >= len(src) {
		return i
	}
	j := i
	switch src[i] {
	case '*', '+', '?':
		j = i + 1
	case '{':
		k := strings.IndexByte(src[i:], '}')
		if k < 0 || !isRepeatSpec(src[i+1:i+k]) {
			return i
		}
		j = i + k + 1
	default:
		return i
	}
	if j < len(src) && src[j] == '?' {
		j++
	}
	return j
}

func isRepeatSpec(s string) bool {
	lo, hi, comma := strings.Cut(s, ",")
	if _, err := strconv.Atoi(lo); err != nil {
		return false
	}
	if comma && hi != "" {
		if _, err := strconv.Atoi(hi); err != nil {
			return false
		}
	}
	return true
}

// leadingFlags splits a leading flag group such as (?i) off src.
func leadingFlags(src string) (flags, rest string) {
	if strings.HasPrefix(src, "(?") {
		if j := strings.IndexByte(src, ')'); j > 2 && !strings.ContainsAny(src[2:j], ":(") {
			return src[:j+1], src[j+1:]
		}
	}
	return "", src
}

// sameTree reports whether src parses to the same tree as want.
func sameTree(src string, want *syntax.Regexp) bool {
	t, err := syntax.Parse(src, syntax.Perl)
	return err == nil && t.Equal(want)
}

// relaxSrc makes every {m,n} or {n} with n > relaxAbove unbounded, in the source.
func relaxSrc(src string, relaxAbove int) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		e := atomEnd(src, i)
		if src[i] == '(' && e-i >= 2 {
			// Recurse into the group, keeping its opening syntax.
			open := i + 1
			if strings.HasPrefix(src[open:], "?") {
				if k := strings.IndexAny(src[open:], ":)"); k >= 0 && src[open+k] == ':' {
					open += k + 1
				}
			}
			if open < e-1 {
				b.WriteString(src[i:open])
				b.WriteString(relaxSrc(src[open:e-1], relaxAbove))
				b.WriteByte(')')
			} else {
				b.WriteString(src[i:e])
			}
		} else {
			b.WriteString(src[i:e])
		}
		q := quantEnd(src, e)
		quant := src[e:q]
		if strings.HasPrefix(quant, "{") {
			k := strings.IndexByte(quant, '}')
			lo, hi, comma := strings.Cut(quant[1:k], ",")
			if !comma {
				hi = lo // {n} is {n,n}
			}
			if n, err := strconv.Atoi(hi); err == nil && n > relaxAbove {
				quant = "{" + lo + ",}" + quant[k+1:]
			}
		}
		b.WriteString(quant)
		i = q
	}
	return b.String()
}

// splitAlternation splits a top-level alternation, keeping leading flags on every branch:
// "(?i)(?:a|b)" gives "(?i)a" and "(?i)b". It returns nil when src is not one.
func splitAlternation(src string) []string {
	flags, rest := leadingFlags(src)
	if strings.HasPrefix(rest, "(?:") && atomEnd(rest, 0) == len(rest) {
		rest = rest[3 : len(rest)-1]
	}
	var out []string
	start := 0
	for i := 0; i < len(rest); {
		if rest[i] == '|' {
			out = append(out, flags+rest[start:i])
			i++
			start = i
			continue
		}
		i = atomEnd(rest, i)
	}
	if out == nil {
		return nil
	}
	return append(out, flags+rest[start:])
}
