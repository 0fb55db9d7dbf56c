package intercept

import (
	"fmt"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// envelope is what the engine reads of a message before deciding on it. The
// tool name it checks against allowlists and pins must be the one the
// receiver will act on, so a message whose envelope names a member twice
// ("name":"allowed","name":"evil"), where parsers disagree on which copy
// counts, is refused. jsonrpc.Classify, which the relay runs on every
// message, is that strict (stricter: it also refuses keys that differ from
// the envelope's only in letter case), so the engine takes the envelope
// from the relay's classification (classifiedEnvelope) and reads it itself
// (readEnvelope) only for what was not classified: a message the user
// edited while it was held.
type envelope struct {
	start, end int  // the value's span in the raw bytes
	valid      bool // the bytes are one JSON value
	object     bool
	kind       jsonrpc.Kind
	id         []byte // the id's JSON, nil when absent
	method     string
	tool       string // params.name of tools/call
}

// classifiedEnvelope is the envelope of b from info, b's classification by
// jsonrpc.Classify (one message, or one element of a batch). ok is false
// when info cannot stand for it: none was given, b did not classify, or it
// is a tools/call notification, whose tool Classify does not read.
func classifiedEnvelope(b []byte, info *jsonrpc.Info) (env envelope, ok bool) {
	if info == nil {
		return env, false
	}
	switch info.Kind {
	case jsonrpc.KindRequest, jsonrpc.KindResponse, jsonrpc.KindError:
	case jsonrpc.KindNotification:
		if info.Method == "tools/call" {
			return env, false
		}
	default:
		return env, false
	}
	env.start, env.end = skipSpace(b, 0), len(b)
	for env.end > env.start && isSpace(b[env.end-1]) {
		env.end--
	}
	env.valid, env.object = true, true
	env.kind, env.method, env.tool = info.Kind, info.Method, info.Tool
	if len(info.ID) > 0 {
		env.id = info.ID
	}
	return env, true
}

var trackedMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// readEnvelope reads the envelope of one message (not a batch). Bytes that
// are not JSON, or JSON that is not an object, come back with kind
// KindInvalid and no error; an ambiguous envelope is an error.
func readEnvelope(b []byte) (envelope, error) {
	var env envelope
	s, e, err := document(b)
	if err != nil {
		return env, nil
	}
	env.start, env.end, env.valid = s, e, true
	if b[s] != '{' {
		return env, nil
	}
	env.object = true
	seen := map[string]member{}
	if _, err := scanObject(b, s, 0, func(m member) error {
		k, err := m.key(b)
		if err != nil {
			return err
		}
		if !trackedMembers[k] {
			return nil
		}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("%w %q in the envelope", errDuplicate, k)
		}
		seen[k] = m
		return nil
	}); err != nil {
		return env, err
	}
	method, hasMethod := seen["method"]
	if hasMethod {
		if b[method.valStart] != '"' {
			return env, nil // not JSON-RPC: method must be a string
		}
		_, esc, _ := scanString(b, method.valStart)
		if env.method, err = unquote(b[method.valStart:method.valEnd], esc); err != nil {
			return env, err
		}
	}
	id, hasID := seen["id"]
	if hasID {
		env.id = b[id.valStart:id.valEnd]
	}
	_, hasResult := seen["result"]
	_, hasError := seen["error"]
	switch {
	case hasMethod && hasID:
		env.kind = jsonrpc.KindRequest
	case hasMethod:
		env.kind = jsonrpc.KindNotification
	case hasID && hasResult && !hasError:
		env.kind = jsonrpc.KindResponse
	case hasID && hasError && !hasResult:
		env.kind = jsonrpc.KindError
	}
	if p, ok := seen["params"]; ok {
		if env.method == "tools/call" && b[p.valStart] == '{' {
			m, ok, err := findMember(b, p.valStart, "name")
			if err != nil {
				return env, err
			}
			if ok && b[m.valStart] == '"' {
				_, esc, _ := scanString(b, m.valStart)
				if env.tool, err = unquote(b[m.valStart:m.valEnd], esc); err != nil {
					return env, err
				}
			}
		}
	}
	return env, nil
}
