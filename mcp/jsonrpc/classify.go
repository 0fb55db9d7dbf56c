package jsonrpc

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
)

// Limits Classify enforces. They are far above what MCP peers send and keep what
// the relay remembers per message (ids and methods live in the correlator) small.
const (
	MaxIDLen     = 1024  // bytes of an id as spelled
	MaxMethodLen = 1024  // bytes of a method or tool name
	MaxBatch     = 10000 // elements of one batch
	// MaxDepth is the one nesting limit of the MCP path: how many containers
	// (the envelope's own object, and a batch's array, included) may be open
	// at once. Every scanner on the path (Classify, the intercept engine's
	// reading, editing and scrubbing) uses it, so a message the relay accepts
	// is one the engine can read: a message nested deeper is refused by
	// Classify, at the relay, before any handler sees it. No MCP message comes
	// near it; it bounds the recursion untrusted input can cause.
	MaxDepth = 512
)

// ErrInvalid is what Classify reports for a message it refuses. Its texts name
// the rule broken and the byte offset, never the message's content, so they can
// be shown and logged without leaking what the message carried.
var ErrInvalid = fmt.Errorf("jsonrpc: invalid message: %w", catalog.ErrBadInput)

// The envelope's keys, as bit positions in a seen-set.
const (
	keyJSONRPC = iota
	keyID
	keyMethod
	keyParams
	keyResult
	keyError
	keyOther  = -1 // any other key: an unknown field, passed on untouched
	keyFolded = -2 // differs from an envelope key only in letter case
)

var envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// envelopeKey says which envelope key name is. Go's encoding/json (and so the
// Go SDK) matches struct fields case-insensitively, while JavaScript and Python
// servers match exactly: {"method":"a","Method":"b"} would be "a" to one and "b"
// to the other. A key that folds to an envelope key without being it is
// therefore refused, as are duplicates, so every reader sees one method and id.
func envelopeKey(name []byte) int {
	for i, k := range envelopeKeys {
		if string(name) == k {
			return i
		}
	}
	if len(name) <= 3*len("jsonrpc") { // folded letters take at most 3 bytes each
		for _, k := range envelopeKeys {
			if foldEqual(name, k) {
				return keyFolded
			}
		}
	}
	return keyOther
}

// foldEqual is strings.EqualFold for a key read from the message, without
// converting it to a string.
func foldEqual(name []byte, key string) bool {
	for _, r := range key {
		if len(name) == 0 {
			return false
		}
		c, n := utf8.DecodeRune(name)
		name = name[n:]
		if c == r {
			continue
		}
		// Walk r's case-folding orbit (as strings.EqualFold does).
		f := unicode.SimpleFold(r)
		for f != r && f != c {
			f = unicode.SimpleFold(f)
		}
		if f != c {
			return false
		}
	}
	return len(name) == 0
}

// Classify reads a message's envelope: the jsonrpc version, id, method, the
// presence of result or error, params.name of a tools/call request and
// params.requestId of a cancellation. It decodes nothing else, but it checks
// the whole message is well-formed JSON in UTF-8, since the relay never passes
// on what it could not check and peers disagree on how to read broken JSON.
//
// A batch (a JSON array) is classified element by element. An invalid message
// yields Kind KindInvalid and an error wrapping ErrInvalid (and so
// catalog.ErrBadInput); the Info then still holds what was read before the
// fault (the id, unless it was the id that was at fault, and the method), so a
// caller can answer a broken request. For a broken batch, Batch holds the
// elements read so far, the faulty one last.
func Classify(raw []byte) (Info, error) {
	s := scanner{b: raw}
	s.ws()
	if s.i >= len(raw) {
		return Info{}, s.fail("empty message")
	}
	var (
		info Info
		err  error
	)
	switch raw[s.i] {
	case '{':
		info, err = s.object()
	case '[':
		info, err = s.batch()
	default:
		return Info{}, s.fail("not a JSON object or array")
	}
	if err == nil {
		s.ws()
		if s.i != len(raw) {
			err = s.fail("data after the message")
		}
	}
	if err != nil {
		info.Kind = KindInvalid
	}
	return info, err
}

func (s *scanner) batch() (Info, error) {
	info := Info{Kind: KindBatch}
	s.depth++
	defer func() { s.depth-- }()
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return info, s.fail("empty batch")
	}
	for {
		s.ws()
		if s.i >= len(s.b) {
			return info, s.fail("unexpected end of batch")
		}
		if s.b[s.i] != '{' {
			return info, s.fail("batch element is not an object")
		}
		if len(info.Batch) == MaxBatch {
			return info, s.fail(fmt.Sprintf("batch of more than %d elements", MaxBatch))
		}
		el, err := s.object()
		info.Batch = append(info.Batch, el)
		if err != nil {
			info.Batch[len(info.Batch)-1].Kind = KindInvalid
			return info, err
		}
		s.ws()
		if s.i >= len(s.b) {
			return info, s.fail("unexpected end of batch")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return info, nil
		default:
			return info, s.fail("expected , or ] in batch")
		}
	}
}

// object classifies the object at s.i and leaves s.i after it.
func (s *scanner) object() (Info, error) {
	var (
		info                Info
		seen                uint8
		idNull              bool
		paramsAt, paramsEnd = -1, -1
	)
	s.depth++
	defer func() { s.depth-- }()
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.ws()
			name, err := s.key()
			if err != nil {
				return info, err
			}
			k := envelopeKey(name)
			if k == keyFolded {
				return info, s.fail("a key differs from an envelope key only in letter case")
			}
			if k >= 0 {
				if seen&(1<<k) != 0 {
					if k == keyID {
						info.ID = nil // which one the peer would use is unknowable
					}
					return info, s.fail("duplicate key " + envelopeKeys[k])
				}
				seen |= 1 << k
			}
			s.ws()
			if s.i >= len(s.b) {
				return info, s.fail("unexpected end of object")
			}
			at := s.i
			switch k {
			case keyJSONRPC:
				v, err := s.stringValue("jsonrpc")
				if err != nil {
					return info, err
				}
				if v != "2.0" {
					return info, s.fail(`jsonrpc is not "2.0"`)
				}
			case keyID:
				switch c := s.b[s.i]; {
				case c == '"':
					_, _, _, err = s.str()
				case c == '-' || c >= '0' && c <= '9':
					err = s.num()
				case c == 'n':
					err = s.lit("null")
					idNull = true
				default:
					return info, s.fail("id is not a string, number or null")
				}
				if err != nil {
					return info, err
				}
				if s.i-at > MaxIDLen {
					return info, s.fail(fmt.Sprintf("id longer than %d bytes", MaxIDLen))
				}
				info.ID = json.RawMessage(s.b[at:s.i:s.i])
			case keyMethod:
				v, err := s.stringValue("method")
				if err != nil {
					return info, err
				}
				if len(v) > MaxMethodLen {
					return info, s.fail(fmt.Sprintf("method longer than %d bytes", MaxMethodLen))
				}
				info.Method = v
			case keyParams:
				if c := s.b[s.i]; c != '{' && c != '[' {
					return info, s.fail("params is not an object or array")
				}
				if err := s.skip(); err != nil {
					return info, err
				}
				paramsAt, paramsEnd = at, s.i
			case keyError:
				if s.b[s.i] != '{' {
					return info, s.fail("error is not an object")
				}
				if err := s.skip(); err != nil {
					return info, err
				}
			default: // result and unknown fields: any value
				if err := s.skip(); err != nil {
					return info, err
				}
			}
			s.ws()
			if s.i >= len(s.b) {
				return info, s.fail("unexpected end of object")
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] == '}' {
				s.i++
				break
			}
			return info, s.fail("expected , or } in object")
		}
	}

	has := func(k int) bool { return seen&(1<<k) != 0 }
	switch {
	case !has(keyJSONRPC):
		return info, s.fail(`missing "jsonrpc"`)
	case has(keyMethod):
		if has(keyResult) || has(keyError) {
			return info, s.fail("method together with result or error")
		}
		if info.Method == "" {
			return info, s.fail("empty method")
		}
		if !has(keyID) {
			info.Kind = KindNotification
		} else if idNull {
			return info, s.fail("request with a null id")
		} else {
			info.Kind = KindRequest
		}
	case has(keyResult) && has(keyError):
		return info, s.fail("both result and error")
	case has(keyResult):
		if !has(keyID) || idNull {
			return info, s.fail("result without an id")
		}
		info.Kind = KindResponse
	case has(keyError):
		if !has(keyID) {
			return info, s.fail("error without an id")
		}
		info.Kind = KindError
	default:
		return info, s.fail("neither method, result nor error")
	}

	switch {
	case info.Kind == KindRequest && info.Method == "tools/call":
		if paramsAt < 0 || s.b[paramsAt] != '{' {
			info.Kind = KindInvalid
			return info, s.fail("tools/call without a params object")
		}
		at, end, err := s.member(paramsAt, paramsEnd, "name")
		if err == nil && at < 0 {
			err = s.fail("tools/call without params.name")
		}
		if err == nil {
			sub := scanner{b: s.b[:end], i: at}
			var v string
			if v, err = sub.stringValue("params.name"); err == nil && len(v) > MaxMethodLen {
				err = s.fail(fmt.Sprintf("tool name longer than %d bytes", MaxMethodLen))
			}
			info.Tool = v
		}
		if err != nil {
			info.Kind = KindInvalid
			return info, err
		}
	case info.Kind == KindNotification && info.Method == "notifications/cancelled" && paramsAt >= 0 && s.b[paramsAt] == '{':
		// A cancellation naming no usable request is still a valid
		// notification: it cancels nothing.
		at, end, err := s.member(paramsAt, paramsEnd, "requestId")
		if err != nil {
			info.Kind = KindInvalid
			return info, err
		}
		if at >= 0 && end-at <= MaxIDLen && (s.b[at] == '"' || s.b[at] == '-' || s.b[at] >= '0' && s.b[at] <= '9') {
			info.CancelID = json.RawMessage(s.b[at:end:end])
		}
	}
	return info, nil
}

// member finds key in the (already validated) object spanning b[at:end] and
// returns its value's span, or -1 when absent. Duplicates of key, or keys that
// fold to it, are refused for the same reason as in the envelope.
func (s *scanner) member(at, end int, key string) (int, int, error) {
	sub := scanner{b: s.b[:end], i: at + 1}
	found, foundEnd := -1, -1
	sub.ws()
	if sub.i < end && sub.b[sub.i] == '}' {
		return -1, -1, nil
	}
	for {
		sub.ws()
		name, err := sub.key()
		if err != nil {
			return -1, -1, err
		}
		sub.ws()
		v := sub.i
		if err := sub.skip(); err != nil {
			return -1, -1, err
		}
		switch {
		case string(name) == key && found >= 0:
			return -1, -1, fmt.Errorf("%w: duplicate key params.%s at offset %d", ErrInvalid, key, v)
		case string(name) == key:
			found, foundEnd = v, sub.i
		case len(name) <= 3*len(key) && foldEqual(name, key):
			return -1, -1, fmt.Errorf("%w: a key differs from params.%s only in letter case at offset %d", ErrInvalid, key, v)
		}
		sub.ws()
		if sub.i < end && sub.b[sub.i] == ',' {
			sub.i++
			continue
		}
		return found, foundEnd, nil
	}
}

// scanner walks a message's bytes. It validates as it skips, so one pass both
// finds the envelope and proves the message well-formed.
type scanner struct {
	b     []byte
	i     int
	depth int // containers open around the value being scanned
}

func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalid, what, s.i)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// key reads an object key and the colon after it, returning the key decoded
// (without copying when it holds no escapes).
func (s *scanner) key() ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, s.fail("expected a key")
	}
	start, end, esc, err := s.str()
	if err != nil {
		return nil, err
	}
	name := s.b[start:end]
	if esc {
		v, err := s.decode(start, end, esc)
		if err != nil {
			return nil, err
		}
		name = []byte(v)
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, s.fail("expected :")
	}
	s.i++
	return name, nil
}

// skipKey is key without decoding: skipped objects' keys need only be valid.
func (s *scanner) skipKey() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.fail("expected a key")
	}
	if _, _, _, err := s.str(); err != nil {
		return err
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return s.fail("expected :")
	}
	s.i++
	return nil
}

// stringValue reads a value that must be a string and decodes it.
func (s *scanner) stringValue(field string) (string, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", s.fail(field + " is not a string")
	}
	start, end, esc, err := s.str()
	if err != nil {
		return "", err
	}
	return s.decode(start, end, esc)
}

// decode returns the string whose contents span b[start:end]. Without escapes
// the bytes are the value (str has checked they are valid UTF-8); with escapes,
// encoding/json decodes them, so this reading and encoding/json's agree.
func (s *scanner) decode(start, end int, esc bool) (string, error) {
	if !esc {
		return string(s.b[start:end]), nil
	}
	var v string
	if err := json.Unmarshal(s.b[start-1:end+1], &v); err != nil {
		return "", fmt.Errorf("%w: bad string at offset %d", ErrInvalid, start)
	}
	return v, nil
}

// str scans the string at s.i, returning its contents' span and whether it
// holds escapes.
func (s *scanner) str() (start, end int, esc bool, err error) {
	b := s.b
	s.i++ // "
	start = s.i
	i := s.i
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			return start, i, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.i = i
				return 0, 0, false, s.fail("unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					s.i = i
					return 0, 0, false, s.fail(`bad \u escape`)
				}
				i += 6
			default:
				s.i = i
				return 0, 0, false, s.fail("bad escape")
			}
		case c < 0x20:
			s.i = i
			return 0, 0, false, s.fail("control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				s.i = i
				return 0, 0, false, s.fail("invalid UTF-8")
			}
			i += n
		}
	}
	s.i = i
	return 0, 0, false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// num scans a number as RFC 8259 spells it.
func (s *scanner) num() error {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		s.i = i
		return s.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			s.i = i
			return s.fail("bad number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			s.i = i
			return s.fail("bad number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

func (s *scanner) lit(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return s.fail("bad literal")
	}
	s.i += len(word)
	return nil
}

// skip scans one value of any kind, validating it. Nesting is tracked on an
// explicit stack, so deep input costs memory in proportion, not Go stack.
func (s *scanner) skip() error {
	var buf [64]byte
	stack := buf[:0]
	for {
		s.ws()
		if s.i >= len(s.b) {
			return s.fail("unexpected end of input")
		}
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			if s.depth+len(stack) >= MaxDepth {
				return s.fail("nested too deep")
			}
			s.i++
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == c+2 { // '}' is '{'+2, ']' is '['+2
				s.i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if err := s.skipKey(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, _, _, err := s.str(); err != nil {
				return err
			}
		case c == 't':
			if err := s.lit("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := s.lit("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := s.lit("null"); err != nil {
				return err
			}
		case c == '-' || isDigit(c):
			if err := s.num(); err != nil {
				return err
			}
		default:
			return s.fail("unexpected character")
		}
		// A value is complete: close containers until one wants another value.
		for {
			if len(stack) == 0 {
				return nil
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.fail("unexpected end of input")
			}
			top, c := stack[len(stack)-1], s.b[s.i]
			if c == top+2 {
				s.i++
				stack = stack[:len(stack)-1]
				continue
			}
			if c != ',' {
				return s.fail("expected , or a closing bracket")
			}
			s.i++
			if top == '{' {
				s.ws()
				if err := s.skipKey(); err != nil {
					return err
				}
			}
			break
		}
	}
}
