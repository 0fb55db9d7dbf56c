package budget

import (
	"strconv"
	"strings"
)

// Marker returns the line that stands for the middle of an output a response
// leaves out, for example
//
//	... 48,213 lines (9.6 MB) left out ... the full output, page by page: safe_bash --continue c1a2
//
// It ends in '\n'. It says how much is missing and gives the exact command that
// gets it, because an agent will act on this line alone. It is ASCII, as
// most output is, so that counting a response's tokens never needs the
// tokenizer library's slow path (see split.go).
func Marker(omittedLines int, omittedBytes int64, ref, tool string) string {
	var b strings.Builder
	b.WriteString("... ")
	b.WriteString(groupDigits(int64(omittedLines)))
	if omittedLines == 1 {
		b.WriteString(" line (")
	} else {
		b.WriteString(" lines (")
	}
	b.WriteString(HumanBytes(omittedBytes))
	b.WriteString(") left out ... the full output, page by page: ")
	if tool != "" {
		b.WriteString(tool)
		b.WriteByte(' ')
	}
	b.WriteString("--continue ")
	b.WriteString(ref)
	b.WriteByte('\n')
	return b.String()
}

// HumanBytes writes a size the way people read it: "512 B", "9.6 kB", "48 MB"
// (decimal units, one decimal below 10).
func HumanBytes(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	unit := ""
	for _, u := range []string{"kB", "MB", "GB", "TB", "PB", "EB"} {
		v /= 1000
		unit = u
		if v < 999.5 { // would not round up to 1000
			break
		}
	}
	if v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
