package pages

import (
	"errors"
	"fmt"
	"strconv"
)

// A reference names a stored output and where a page of it starts:
//
//	c<id>            the output from its first byte
//	c<id>-<offset>   the output from byte offset (lowercase hex, > 0)
//
// where id is 32 lowercase hex digits (128 random bits). Each page's
// "continue" value is the reference of the next page's start, so a retried
// request returns the same page. References come from agents: ParseRef accepts
// only this exact form (no path separators, dots, upper case or leading zeros),
// so a reference can never name a file of the store by itself.

// ErrMalformed reports a string that is not a reference.
var ErrMalformed = errors.New("malformed continuation reference")

const (
	idLen     = 32                 // hex digits of an id
	maxRefLen = 1 + idLen + 1 + 16 // "c", id, "-", an int64 in hex
)

// FormatRef returns the reference to offset in the output id.
func FormatRef(id string, offset int64) string {
	if offset <= 0 {
		return "c" + id
	}
	return "c" + id + "-" + strconv.FormatInt(offset, 16)
}

// ParseRef returns the id and the offset a reference names. Errors wrap
// ErrMalformed.
func ParseRef(s string) (id string, offset int64, err error) {
	bad := func(why string) (string, int64, error) {
		if len(s) > maxRefLen {
			s = s[:maxRefLen] + "…"
		}
		return "", 0, fmt.Errorf("%w %q: %s", ErrMalformed, s, why)
	}
	if len(s) > maxRefLen {
		return bad("too long")
	}
	if len(s) < 1+idLen || s[0] != 'c' {
		return bad("want c and 32 hex digits")
	}
	id, rest := s[1:1+idLen], s[1+idLen:]
	if !isHex(id) {
		return bad("want c and 32 hex digits")
	}
	if rest == "" {
		return id, 0, nil
	}
	digits := rest[1:]
	if rest[0] != '-' || digits == "" || !isHex(digits) || digits[0] == '0' {
		return bad("want -<offset in hex> after the id")
	}
	offset, err = strconv.ParseInt(digits, 16, 64)
	if err != nil {
		return bad("offset out of range")
	}
	return id, offset, nil
}

// isHex reports whether s is lowercase hex digits only.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
