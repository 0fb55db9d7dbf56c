// Package lite is the proxy's light protocol to the daemon: length-prefixed JSON
// messages on the same Unix socket as gRPC. The proxy starts for every tool call,
// and initialising gRPC and protobuf was most of its start-up (about 9 of 16 ms
// on a 2-CPU VM, mostly page faults); with this protocol it links neither. The
// messages mirror wire/contextd.proto field for field; gRPC stays the typed
// protocol for other clients.
//
// A connection starts with Magic from the client (gRPC starts with the HTTP/2
// preface "PRI * HTTP/2.0", so the daemon tells them apart by the first bytes).
// Then the client sends one Request and the daemon answers with Events: any
// number of Output events and one Result, or one Error (contextd's own failure,
// gRPC's status) and nothing after it. One call per connection.
//
// Each message is a 4-byte big-endian length and that many bytes of JSON.
package lite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/contextd/contextd/catalog"
)

// Magic opens every connection of the light protocol.
const Magic = "CTXD/1\n"

// Request is the one message a client sends after Magic: a Call or a Status.
type Request struct {
	Call   *Call     `json:"call,omitempty"`
	Status *struct{} `json:"status,omitempty"`
}

// Call mirrors wire.CallRequest.
type Call struct {
	Tool     string            `json:"tool"`
	Input    json.RawMessage   `json:"input,omitempty"`
	Session  string            `json:"session,omitempty"`
	Cwd      string            `json:"cwd"`
	Continue string            `json:"continue,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	// MaxTokens asks for a smaller budget than the tool's configured one (0:
	// the configured one; more than it is refused).
	MaxTokens int `json:"max_tokens,omitempty"`
}

// Event is one message from the daemon; exactly one field is set.
type Event struct {
	Output []byte          `json:"output,omitempty"`
	Result *Result         `json:"result,omitempty"`
	Error  *catalog.Detail `json:"error,omitempty"`
	Status *Status         `json:"status,omitempty"`
}

// Result mirrors wire.Result.
type Result struct {
	ExitCode   int             `json:"exit_code"`
	Truncated  bool            `json:"truncated"`
	HasMore    bool            `json:"has_more"`
	TokensUsed int64           `json:"tokens_used"`
	Continue   string          `json:"continue,omitempty"`
	Refs       []string        `json:"refs"`
	Error      *catalog.Detail `json:"error,omitempty"`
	Session    string          `json:"session,omitempty"`
	Workspace  string          `json:"workspace,omitempty"`
	Sandbox    *Sandbox        `json:"sandbox,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
}

// Sandbox mirrors wire.Sandbox.
type Sandbox struct {
	Namespaces bool   `json:"namespaces"`
	Seccomp    string `json:"seccomp,omitempty"`
	Scope      string `json:"scope,omitempty"`
	ScopeNote  string `json:"scope_note,omitempty"`
	Network    bool   `json:"network,omitempty"`
}

// Status mirrors wire.StatusReply.
type Status struct {
	Version         string   `json:"version"`
	PID             int32    `json:"pid"`
	UptimeMS        int64    `json:"uptime_ms"`
	CallsInFlight   int32    `json:"calls_in_flight"`
	SocketActivated bool     `json:"socket_activated"`
	Tools           []string `json:"tools"`
}

// ErrTooLarge is returned by Read for a message over its limit.
var ErrTooLarge = errors.New("lite: message too large")

// Write sends v as one message.
func Write(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("lite: encode: %w", err)
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// Read receives one message into v; max bounds its size. io.EOF means the peer
// closed the connection between messages.
func Read(r io.Reader, v any, max int) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(max) {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("lite: decode: %w", err)
	}
	return nil
}
