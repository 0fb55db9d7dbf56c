package intercept

import (
	"bytes"
	"strings"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/jsonscan"
)

// envelope is what the engine reads of a message before deciding on it. The
// tool name it checks against allowlists and pins must be the one the
// receiver will act on, so a message whose envelope names a member twice
// ("name":"allowed","name":"evil"), where parsers disagree on which copy
// counts, or names it also in another letter case (as Go peers read
// names), is refused. jsonrpc.Classify, which the relay runs on every
// message, refuses it, so the engine takes the envelope from the relay's
// classification (classifiedEnvelope) and reads it itself (readEnvelope),
// by the same rule, only for what was not classified: a message the user
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
// when info cannot stand for it: none was given, or b did not classify.
func classifiedEnvelope(b []byte, info *jsonrpc.Info) (env envelope, ok bool) {
	if info == nil {
		return env, false
	}
	switch info.Kind {
	case jsonrpc.KindRequest, jsonrpc.KindNotification, jsonrpc.KindResponse, jsonrpc.KindError:
	default:
		return env, false
	}
	env.start = jsonscan.Space(b, 0)
	env.end = env.start + len(bytes.TrimRight(b[env.start:], " \t\r\n"))
	env.valid, env.object = true, true
	env.kind, env.method, env.tool = info.Kind, info.Method, info.Tool
	if len(info.ID) > 0 {
		env.id = info.ID
	}
	return env, true
}

var trackedMembers = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// readEnvelope reads the envelope of one message (not a batch). Bytes that
// are not JSON, or JSON that is not an object, come back with kind
// KindInvalid and no error; an ambiguous envelope is an error, by
// Classify's rule: a member named twice, or also in another letter case.
func readEnvelope(b []byte) (envelope, error) {
	var env envelope
	s, e, err := jsonscan.Document(b)
	if err != nil {
		return env, nil
	}
	env.start, env.end, env.valid = s, e, true
	if b[s] != '{' {
		return env, nil
	}
	env.object = true
	seen := map[string]jsonscan.Member{}
	if _, err := jsonscan.Object(b, s, 0, func(m jsonscan.Member) error {
		k, err := m.Name(b)
		if err != nil {
			return err
		}
		for _, t := range trackedMembers {
			switch _, dup := seen[t]; {
			case k == t && dup:
				return &jsonscan.DuplicateError{Name: t, Offset: m.NameStart}
			case k == t:
				seen[t] = m
			case strings.EqualFold(k, t):
				return &jsonscan.DuplicateError{Name: t, Offset: m.NameStart, Folded: true}
			}
		}
		return nil
	}); err != nil {
		return env, err
	}
	method, hasMethod := seen["method"]
	if hasMethod {
		if b[method.Start] != '"' {
			return env, nil // not JSON-RPC: method must be a string
		}
		if env.method, err = jsonscan.StringValue(b, method.Start); err != nil {
			return env, err
		}
	}
	id, hasID := seen["id"]
	if hasID {
		env.id = b[id.Start:id.End]
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
		if env.method == "tools/call" && b[p.Start] == '{' {
			m, ok, err := jsonscan.Find(b, p.Start, "name")
			if err != nil {
				return env, err
			}
			if ok && b[m.Start] == '"' {
				if env.tool, err = jsonscan.StringValue(b, m.Start); err != nil {
					return env, err
				}
			}
		}
	}
	return env, nil
}
