package scrub

import (
	"strconv"
	"strings"
)

// A placeholder is "[REDACTED:<rule>:<n>]": <rule> is a rule id made of ASCII letters,
// digits, '-', '_' and '.', <n> a decimal number from 1.
var placeholderPrefix = []byte("[REDACTED:")

// formatPlaceholder builds the placeholder for rule and n; characters a placeholder cannot
// hold are replaced so that the result always parses back.
func formatPlaceholder(rule string, n int) string {
	id := []byte(rule)
	for i, c := range id {
		if !isRuleIDByte(c) {
			id[i] = '-'
		}
	}
	if len(id) == 0 {
		id = []byte("secret")
	}
	return string(placeholderPrefix) + string(id) + ":" + strconv.Itoa(n) + "]"
}

func isRuleIDByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// placeholderLen returns the length of the placeholder b starts with, or 0.
func placeholderLen(b []byte) int {
	p := len(placeholderPrefix)
	if len(b) < p || string(b[:p]) != string(placeholderPrefix) {
		return 0
	}
	i := p
	for i < len(b) && isRuleIDByte(b[i]) {
		i++
	}
	if i == p || i >= len(b) || b[i] != ':' {
		return 0
	}
	i++
	d := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' && i-d < 12 {
		i++
	}
	if i == d || b[d] == '0' || i >= len(b) || b[i] != ']' {
		return 0
	}
	return i + 1
}

// IsPlaceholder reports whether s is exactly one placeholder.
func IsPlaceholder(s string) bool {
	return s != "" && placeholderLen([]byte(s)) == len(s)
}

// ParsePlaceholder splits a placeholder into its rule id and number.
func ParsePlaceholder(s string) (rule string, n int, ok bool) {
	if !IsPlaceholder(s) {
		return "", 0, false
	}
	body := s[len(placeholderPrefix) : len(s)-1]
	i := strings.LastIndexByte(body, ':')
	n, err := strconv.Atoi(body[i+1:])
	if err != nil {
		return "", 0, false
	}
	return body[:i], n, true
}

// FindPlaceholders returns the [start, end) offsets of every placeholder in b, in order.
func FindPlaceholders(b []byte) [][2]int {
	var out [][2]int
	for _, p := range placeholderSpans(b) {
		out = append(out, [2]int{p.start, p.end})
	}
	return out
}
