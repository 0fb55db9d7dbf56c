package jsonrpc

import (
	"encoding/json"
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonscan"
)

// Limits Classify enforces. They are far above what MCP peers send and keep what
// the relay remembers per message (ids and methods live in the correlator) small.
const (
	MaxIDLen     = 1024  // bytes of an id as spelled
	MaxMethodLen = 1024  // bytes of a method or tool name
	MaxBatch     = 10000 // elements of one batch
	// MaxDepth is the MCP path's one nesting limit (jsonscan's, which every
	// scanner on the path uses): a message nested deeper is refused here, at
	// the relay, before any handler sees it.
	MaxDepth = jsonscan.MaxDepth
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
			if jsonscan.EqualFold(name, k) {
				return keyFolded
			}
		}
	}
	return keyOther
}

// Classify reads a message's envelope: the jsonrpc version, id, method, the
// presence of result or error, params.name of a tools/call request (or
// notification) and params.requestId of a cancellation. It decodes nothing
// else, but it checks the whole message is strict JSON (jsonscan's rules: in
// UTF-8, nested at most MaxDepth deep), since the relay never passes on what
// it could not check and peers disagree on how to read broken JSON.
//
// A batch (a JSON array) is classified element by element. An invalid message
// yields Kind KindInvalid and an error wrapping ErrInvalid (and so
// catalog.ErrBadInput); the Info then still holds what was read before the
// fault (the id, unless it was the id that was at fault, and the method), so a
// caller can answer a broken request. For a broken batch, Batch holds the
// elements read so far, the faulty one last.
func Classify(raw []byte) (Info, error) {
	s := scanner{jsonscan.Scanner{B: raw}}
	s.Space()
	if s.I >= len(raw) {
		return Info{}, s.fail("empty message")
	}
	var (
		info Info
		err  error
	)
	switch raw[s.I] {
	case '{':
		info, err = s.object()
	case '[':
		info, err = s.batch()
	default:
		return Info{}, s.fail("not a JSON object or array")
	}
	if err == nil {
		s.Space()
		if s.I != len(raw) {
			err = s.fail("data after the message")
		}
	}
	if err != nil {
		info.Kind = KindInvalid
	}
	return info, err
}

// scanner is jsonscan's, with Classify's reading of an envelope on top.
type scanner struct{ jsonscan.Scanner }

// fail is a broken rule of JSON-RPC, at the current offset.
func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalid, what, s.I)
}

// invalid is an error of jsonscan's as Classify reports it.
func invalid(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *jsonscan.SyntaxError:
		return fmt.Errorf("%w: %s at offset %d", ErrInvalid, e.What, e.Offset)
	case *jsonscan.DuplicateError:
		if e.Folded {
			return fmt.Errorf("%w: a key differs from %s only in letter case at offset %d", ErrInvalid, e.Name, e.Offset)
		}
		return fmt.Errorf("%w: duplicate key %s at offset %d", ErrInvalid, e.Name, e.Offset)
	}
	return fmt.Errorf("%w: %v", ErrInvalid, err)
}

func (s *scanner) batch() (Info, error) {
	info := Info{Kind: KindBatch}
	empty, err := s.Open()
	if err != nil {
		return info, invalid(err)
	}
	if empty {
		return info, s.fail("empty batch")
	}
	for {
		if s.I >= len(s.B) {
			return info, s.fail("unexpected end of batch")
		}
		if s.B[s.I] != '{' {
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
		more, err := s.More(']')
		if err != nil {
			return info, invalid(err)
		}
		if !more {
			return info, nil
		}
	}
}

// object classifies the object at s.I and leaves s.I after it.
func (s *scanner) object() (Info, error) {
	var info Info
	env := envelope{paramsAt: -1}
	if err := s.members(&info, &env); err != nil {
		return info, err
	}
	if err := s.kind(&info, env); err != nil {
		return info, err
	}
	return info, s.methodParams(&info, env)
}

// envelope is what object has read of a message besides its Info.
type envelope struct {
	seen     uint8 // the envelope keys met, as bits
	idNull   bool  // the id is null
	paramsAt int   // offset of the value of params; -1: none
}

// has says whether the envelope key k was met.
func (e *envelope) has(k int) bool { return e.seen&(1<<k) != 0 }

// members reads the object's members, checking each envelope member's value
// and keeping into info and env what classifying it needs.
func (s *scanner) members(info *Info, env *envelope) error {
	empty, err := s.Open()
	if err != nil {
		return invalid(err)
	}
	for !empty {
		k, err := s.key()
		if err != nil {
			return err
		}
		if k >= 0 {
			if env.has(k) {
				if k == keyID {
					info.ID = nil // which one the peer would use is unknowable
				}
				return s.fail("duplicate key " + envelopeKeys[k])
			}
			env.seen |= 1 << k
		}
		if s.I >= len(s.B) {
			return s.fail("unexpected end of object")
		}
		if err := s.member(k, info, env); err != nil {
			return err
		}
		more, err := s.More('}')
		if err != nil {
			return invalid(err)
		}
		empty = !more
	}
	return nil
}

// key reads a member's name and says which envelope key it is.
func (s *scanner) key() (int, error) {
	start, end, escaped, err := s.Name()
	if err != nil {
		return 0, invalid(err)
	}
	name := s.B[start+1 : end-1]
	if escaped {
		v, err := jsonscan.Unquote(s.B[start:end], true)
		if err != nil {
			return 0, invalid(err)
		}
		name = []byte(v)
	}
	k := envelopeKey(name)
	if k == keyFolded {
		return 0, s.fail("a key differs from an envelope key only in letter case")
	}
	return k, nil
}

// member reads the value of the member whose key is k.
func (s *scanner) member(k int, info *Info, env *envelope) error {
	at := s.I
	switch k {
	case keyJSONRPC:
		v, err := s.stringValue("jsonrpc")
		if err != nil {
			return err
		}
		if v != "2.0" {
			return s.fail(`jsonrpc is not "2.0"`)
		}
	case keyID:
		return s.id(info, env)
	case keyMethod:
		v, err := s.stringValue("method")
		if err != nil {
			return err
		}
		if len(v) > MaxMethodLen {
			return s.fail(fmt.Sprintf("method longer than %d bytes", MaxMethodLen))
		}
		info.Method = v
	case keyParams:
		if c := s.B[s.I]; c != '{' && c != '[' {
			return s.fail("params is not an object or array")
		}
		if err := s.Value(); err != nil {
			return invalid(err)
		}
		env.paramsAt = at
	case keyError:
		if s.B[s.I] != '{' {
			return s.fail("error is not an object")
		}
		if err := s.Value(); err != nil {
			return invalid(err)
		}
	default: // result and unknown fields: any value
		if err := s.Value(); err != nil {
			return invalid(err)
		}
	}
	return nil
}

// id reads the id's value, a string, number or null, into info.ID as spelled.
func (s *scanner) id(info *Info, env *envelope) error {
	at := s.I
	var err error
	switch c := s.B[s.I]; {
	case c == '"':
		_, err = s.String()
	case c == '-' || c >= '0' && c <= '9':
		err = s.Number()
	case c == 'n':
		err = s.Literal("null")
		env.idNull = true
	default:
		return s.fail("id is not a string, number or null")
	}
	if err != nil {
		return invalid(err)
	}
	if s.I-at > MaxIDLen {
		return s.fail(fmt.Sprintf("id longer than %d bytes", MaxIDLen))
	}
	info.ID = json.RawMessage(s.B[at:s.I:s.I])
	return nil
}

// kind sets info.Kind from which envelope members the message has, refusing
// the combinations JSON-RPC does not allow.
func (s *scanner) kind(info *Info, env envelope) error {
	switch {
	case !env.has(keyJSONRPC):
		return s.fail(`missing "jsonrpc"`)
	case env.has(keyMethod):
		if env.has(keyResult) || env.has(keyError) {
			return s.fail("method together with result or error")
		}
		if info.Method == "" {
			return s.fail("empty method")
		}
		if !env.has(keyID) {
			info.Kind = KindNotification
		} else if env.idNull {
			return s.fail("request with a null id")
		} else {
			info.Kind = KindRequest
		}
	case env.has(keyResult) && env.has(keyError):
		return s.fail("both result and error")
	case env.has(keyResult):
		if !env.has(keyID) || env.idNull {
			return s.fail("result without an id")
		}
		info.Kind = KindResponse
	case env.has(keyError):
		if !env.has(keyID) {
			return s.fail("error without an id")
		}
		info.Kind = KindError
	default:
		return s.fail("neither method, result nor error")
	}
	return nil
}

// methodParams reads what info's method carries in params that the relay
// needs: the tool of a tools/call, the request a cancellation names.
func (s *scanner) methodParams(info *Info, env envelope) error {
	switch {
	case info.Method == "tools/call":
		var err error
		if info.Tool, err = s.tool(env.paramsAt, info.Kind == KindRequest); err != nil {
			info.Kind = KindInvalid
			return err
		}
	case info.Kind == KindNotification && info.Method == "notifications/cancelled" && env.paramsAt >= 0 && s.B[env.paramsAt] == '{':
		// A cancellation naming no usable request is still a valid
		// notification: it cancels nothing.
		m, ok, err := jsonscan.Find(s.B, env.paramsAt, "requestId")
		if err != nil {
			info.Kind = KindInvalid
			return invalid(paramErr(err))
		}
		if !ok || m.End-m.Start > MaxIDLen {
			break
		}
		if c := s.B[m.Start]; c == '"' || c == '-' || c >= '0' && c <= '9' {
			info.CancelID = json.RawMessage(s.B[m.Start:m.End:m.End])
		}
	}
	return nil
}

// tool reads params.name of a tools/call message whose params are at
// paramsAt (-1: none). A request must name its tool, with a string. A
// notification is no call MCP defines (a call wants an answer), but a server
// may act on it all the same: the tool it names, if it names one with a
// string, is read by the same rules, so that the engine can take it from
// here rather than read the message again.
func (s *scanner) tool(paramsAt int, request bool) (string, error) {
	if paramsAt < 0 || s.B[paramsAt] != '{' {
		if !request {
			return "", nil
		}
		return "", s.fail("tools/call without a params object")
	}
	m, ok, err := jsonscan.Find(s.B, paramsAt, "name")
	switch {
	case err != nil:
		return "", invalid(paramErr(err))
	case !ok && request:
		return "", s.fail("tools/call without params.name")
	case ok && s.B[m.Start] != '"' && request:
		return "", fmt.Errorf("%w: params.name is not a string at offset %d", ErrInvalid, m.Start)
	case !ok || s.B[m.Start] != '"':
		return "", nil
	}
	v, err := jsonscan.StringValue(s.B, m.Start)
	if err != nil {
		return "", invalid(err)
	}
	if len(v) > MaxMethodLen {
		return v, s.fail(fmt.Sprintf("tool name longer than %d bytes", MaxMethodLen))
	}
	return v, nil
}

// paramErr names a member of params, in an error of jsonscan.Find, by its
// path in the message.
func paramErr(err error) error {
	if e, ok := err.(*jsonscan.DuplicateError); ok {
		d := *e
		d.Name = "params." + d.Name
		return &d
	}
	return err
}

// stringValue reads a value that must be a string and decodes it.
func (s *scanner) stringValue(field string) (string, error) {
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return "", s.fail(field + " is not a string")
	}
	v, err := s.Text()
	return v, invalid(err)
}
