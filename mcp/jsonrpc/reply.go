package jsonrpc

import (
	"encoding/json"
	"strconv"

	"github.com/contextd/contextd/mcp/jsonscan"
)

// JSON-RPC 2.0 error codes the relay and transports answer with.
const (
	CodeParseError     = -32700 // the message is not JSON
	CodeInvalidRequest = -32600 // JSON, but not a valid request
	CodeInternalError  = -32603 // the request could not be handled
)

// ErrorResponse builds the JSON-RPC error response {"jsonrpc":"2.0","id":id,
// "error":{"code":code,"message":message}}. An empty id becomes null.
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	msg, err := json.Marshal(message)
	if err != nil { // a Go string always marshals; keep the reply well-formed regardless
		msg = []byte(`"error"`)
	}
	b := make([]byte, 0, 64+len(id)+len(msg))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, msg...)
	b = append(b, "}}"...)
	return b
}

// Lookup returns the value at path (a chain of object keys) in the JSON value
// raw, or nil when some key is absent or a value on the way is not an object.
// Like Classify it reads only what it must, validates raw as a whole, and
// refuses a duplicate of, or a letter-case variant of, a key on the path.
func Lookup(raw []byte, path ...string) (json.RawMessage, error) {
	at, end, err := jsonscan.Document(raw)
	if err != nil {
		return nil, invalid(err)
	}
	for _, key := range path {
		if raw[at] != '{' {
			return nil, nil
		}
		m, ok, err := jsonscan.Find(raw, at, key)
		if err != nil || !ok {
			return nil, invalid(err)
		}
		at, end = m.Start, m.End
	}
	return json.RawMessage(raw[at:end:end]), nil
}
