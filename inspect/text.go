package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
)

// sanitize makes untrusted text safe to put on a terminal: every message
// comes from an agent or a server, and a raw ESC, CSI or OSC in it could
// move the cursor, retitle the window or rewrite what the user sees before
// deciding. Control characters (C0 but newline, DEL, C1), invalid UTF-8 and
// the bidirectional overrides that can reorder text on screen become
// visible escapes.
func sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r, n):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true
	case r == '\n':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// oneLine sanitizes s and folds it onto one line, for list columns.
func oneLine(s string) string {
	return strings.ReplaceAll(sanitize(s), "\n", `\n`)
}

// indent pretty-prints raw JSON with two-space indentation; ok is false when
// raw is not valid JSON.
func indent(raw []byte) (string, bool) {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return "", false
	}
	return b.String(), true
}

// compactMessage checks that an edited message is one JSON object or array
// and returns it compacted, as it will travel.
func compactMessage(b []byte) ([]byte, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil, fmt.Errorf("the edited file is empty: %w", catalog.ErrBadInput)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, t); err != nil {
		return nil, fmt.Errorf("not valid JSON (%v): %w", err, catalog.ErrBadInput)
	}
	if c := out.Bytes()[0]; c != '{' && c != '[' {
		return nil, fmt.Errorf("a JSON-RPC message is a JSON object (or an array, a batch), %w: %w", errNotMessage, catalog.ErrBadInput)
	}
	return out.Bytes(), nil
}

// errorCode reads error.code of a JSON-RPC error response ("" when absent).
func errorCode(raw []byte) string {
	var v struct {
		Error struct {
			Code json.Number `json:"code"`
		} `json:"error"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	c := string(v.Error.Code)
	if len(c) > 12 {
		c = c[:12]
	}
	return c
}

// fmtSize renders a byte count in at most 6 columns.
func fmtSize(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n) + "B"
	case n < 1000*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + "K"
	default:
		return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + "M"
	}
}

// fmtDur renders a latency in at most 6 columns.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "?"
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < 100*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	default:
		return strconv.FormatInt(int64(d.Minutes()), 10) + "m"
	}
}
