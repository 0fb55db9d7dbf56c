package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/contextd/contextd/mcp/jsonscan"
)

// Key is the correlation key of the request with the given id that travelled
// dir. A request and its response share a Key when the response's direction is
// reversed: Key(m.Dir.Reverse(), m.Info.ID) for a response m.
//
// The direction is part of the key because each peer numbers its own
// requests: the client's request 1 and the server's sampling request 1 are two
// requests. String and number ids never match each other (1 and "1" differ, as
// JSON-RPC says). Numbers match by value, not spelling: 1, 1.0, 10e-1 and 1E0 are
// the same id, as they are to a JavaScript or Python peer that parses them to a
// number, but the comparison is exact decimal, so large integer ids never
// collide by rounding. Strings match after decoding escapes ("\u0031" is "1").
//
// Key returns "" for a null, empty or malformed id, or an unknown direction:
// such ids correlate with nothing.
func Key(dir Direction, id json.RawMessage) string {
	var d byte
	switch dir {
	case ClientToServer:
		d = '>'
	case ServerToClient:
		d = '<'
	default:
		return ""
	}
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		s := jsonscan.Scanner{B: id}
		v, err := s.Text()
		if err != nil || s.I != len(id) {
			return ""
		}
		return string([]byte{d, 's', ':'}) + v
	case c == '-' || isDigit(c):
		s := jsonscan.Scanner{B: id}
		if s.Number() != nil || s.I != len(id) {
			return ""
		}
		return string([]byte{d, 'n', ':'}) + canonNumber(id)
	}
	return ""
}

// canonNumber spells a valid JSON number canonically: an optional minus sign,
// the significant digits without leading or trailing zeros, "e" and the
// exponent, so that equal values spell alike ("0" for any zero, -0 included).
func canonNumber(n []byte) string {
	neg := n[0] == '-'
	if neg {
		n = n[1:]
	}
	var intPart, frac, exp []byte
	i := 0
	for i < len(n) && isDigit(n[i]) {
		i++
	}
	intPart, n = n[:i], n[i:]
	if len(n) > 0 && n[0] == '.' {
		i = 1
		for i < len(n) && isDigit(n[i]) {
			i++
		}
		frac, n = n[1:i], n[i:]
	}
	if len(n) > 0 { // e or E
		exp = n[1:]
	}
	digits := make([]byte, 0, len(intPart)+len(frac))
	digits = append(append(digits, intPart...), frac...)
	e := -len(frac)
	if len(exp) > 0 {
		x, err := strconv.Atoi(string(exp))
		if err != nil || x > 1<<40 || x < -(1<<40) {
			// An exponent this far out is no id a peer could mean; keep the
			// spelling so it matches only itself.
			return "x" + string(intPart) + "." + string(frac) + "e" + string(exp)
		}
		e += x
	}
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return "0"
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		e++
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.Write(digits)
	b.WriteByte('e')
	b.WriteString(strconv.Itoa(e))
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
