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
// Each message is a 4-byte big-endian length and that many bytes of JSON, with
// one exception: a client that sets Request.RawOutput gets its call's output
// as raw frames, whose length has the top bit (rawFrame) set and whose bytes
// are the output itself. Output is most of what a call sends, and as JSON it
// is base64 inside a document: measured on a 2-CPU VM, an 8 KiB piece took
// about 180 µs to encode and decode that way and 4 µs raw (BenchmarkOutput).
// The flag travels in the request, not in Magic, so that either side may be a
// version older than the other: an older daemon ignores the member and sends
// JSON, which ReadEvent still reads; an older proxy never asks.
package lite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/sandboxinfo"
)

// Magic opens every connection of the light protocol.
const Magic = "CTXD/1\n"

// Request is the one message a client sends after Magic: a Call, a Status, a
// Wrap, an Inspect or an Admin request.
type Request struct {
	Call    *Call     `json:"call,omitempty"`
	Status  *struct{} `json:"status,omitempty"`
	Wrap    *Wrap     `json:"wrap,omitempty"`
	Inspect *Inspect  `json:"inspect,omitempty"`
	Admin   *Admin    `json:"admin,omitempty"`
	// RawOutput asks for a Call's Output events as raw frames (WriteOutput,
	// ReadEvent) instead of JSON.
	RawOutput bool `json:"raw_output,omitempty"`
}

// Wrap asks the daemon to stand between the caller, an MCP client, and an MCP
// server: one it launches sandboxed (Command) or one it reaches at URL. The
// daemon answers with one Event: WrapReady, or Error. After WrapReady the
// connection is no longer framed: it carries the MCP conversation itself,
// newline-delimited JSON-RPC messages in both directions, until either side
// closes it (the client half-closes when its stdin ends).
type Wrap struct {
	// Name identifies the server: its [mcp.servers.NAME] configuration, its
	// pinned tool descriptions and its session records.
	Name    string   `json:"name"`
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// SSE selects the older HTTP+SSE transport for URL (Streamable HTTP
	// otherwise).
	SSE     bool              `json:"sse,omitempty"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env,omitempty"`
	Session string            `json:"session,omitempty"`
	// Replay marks the connection of `contextd mcp replay` (recorded as such).
	Replay string `json:"replay,omitempty"`
	// Configured asks for the server [mcp.servers.Name] names with its
	// command or url (Command and URL stay empty): the caller, contextd-
	// proxy mcp, never reads the daemon's configuration itself.
	Configured bool `json:"configured,omitempty"`
}

// WrapReady says the server is up and the conversation may start.
type WrapReady struct {
	// Record is the id of the session record being written.
	Record   string              `json:"record"`
	Session  string              `json:"session"`
	Sandbox  *sandboxinfo.Layers `json:"sandbox,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
}

// Inspect attaches to a live wrap session (Record id; "" for the newest).
// The daemon then sends InspectEvents and reads InspectCommands, both framed,
// until either side closes.
type Inspect struct {
	Record string `json:"record,omitempty"`
}

// Admin is a request of contextd's own command line (sessions, approvals);
// the answer is one Event with Admin set, or Error.
type Admin struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// OpWrapEnd is the Admin operation `contextd-proxy mcp wrap` sends once its
// conversation has ended, to learn why (WrapEndArgs -> WrapEnd): the wrap
// only copies bytes, and a server that could not start or exited early is
// known to the daemon alone.
const OpWrapEnd = "mcp.wrap_end"

// WrapEndArgs names the wrap session (WrapReady.Record).
type WrapEndArgs struct {
	Record string `json:"record"`
}

// WrapEnd is the answer to OpWrapEnd.
type WrapEnd struct {
	// Failure is why the session ended early: the server could not be
	// started, or exited while the client still talked to it. nil for a
	// normal end, or when the daemon does not know (any more).
	Failure *catalog.Detail `json:"failure,omitempty"`
}

// OpMCPHub is the Admin operation contextd-proxy mcp sends at start, to
// learn which servers it serves and how (no arguments -> MCPHub).
const OpMCPHub = "mcp.hub"

// MCPHub is [mcp]'s part that contextd-proxy mcp needs.
type MCPHub struct {
	// Search is "auto", "on", "off" or "defer" ([mcp] search).
	Search       string        `json:"search"`
	Threshold    int           `json:"threshold"`
	Results      int           `json:"results"`
	StartWait    time.Duration `json:"start_wait"`
	StartTimeout time.Duration `json:"start_timeout"`
	// Dense says tool_search asks OpEmbed for similarity: [mcp]
	// search_dense, and an embedding endpoint is configured.
	Dense   bool           `json:"dense"`
	Servers []MCPHubServer `json:"servers"`
}

// MCPHubServer is one served server.
type MCPHubServer struct {
	Name string `json:"name"`
	// Target is what it runs or reaches, secrets redacted.
	Target string `json:"target"`
	// Pinned is how many of its tools are pinned: what the last session
	// saw, known before the server starts.
	Pinned int `json:"pinned"`
}

// OpEmbed is the Admin operation that embeds texts with the user's
// embedding endpoint ([store] embed_api) for tool_search, the key staying
// in the daemon (EmbedArgs -> Embeddings).
const OpEmbed = "embed"

// EmbedArgs are texts to embed; Query marks a search query (some models
// embed a query and a document differently).
type EmbedArgs struct {
	Texts []string `json:"texts"`
	Query bool     `json:"query,omitempty"`
}

// Embeddings are the vectors of EmbedArgs.Texts, in order.
type Embeddings struct {
	Model   string      `json:"model"`
	Vectors [][]float32 `json:"vectors"`
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
	Wrap   *WrapReady      `json:"wrap,omitempty"`
	Admin  json.RawMessage `json:"admin,omitempty"`
}

// Result mirrors wire.Result.
type Result struct {
	ExitCode  int  `json:"exit_code"`
	Truncated bool `json:"truncated"`
	// HasMore repeats Truncated for proxies of before 2026-11-26, which
	// print the --continue hint from it; the current proxy reads Truncated.
	HasMore    bool                `json:"has_more"`
	TokensUsed int64               `json:"tokens_used"`
	Continue   string              `json:"continue,omitempty"`
	Error      *catalog.Detail     `json:"error,omitempty"`
	Session    string              `json:"session,omitempty"`
	Workspace  string              `json:"workspace,omitempty"`
	Sandbox    *sandboxinfo.Layers `json:"sandbox,omitempty"`
	Warnings   []string            `json:"warnings,omitempty"`
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

// rawFrame marks a length prefix whose bytes are raw output, not JSON. No
// JSON message comes near 2 GiB (every reader's limit is far below), so the
// bit is free.
const rawFrame = 1 << 31

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

// WriteOutput sends b as one raw output frame: an Output event, for a client
// that asked for them (Request.RawOutput).
func WriteOutput(w io.Writer, b []byte) error {
	if uint64(len(b)) >= rawFrame {
		return fmt.Errorf("lite: output frame of %d bytes: %w", len(b), ErrTooLarge)
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b))|rawFrame)
	_, err := w.Write(append(buf, b...))
	return err
}

// Read receives one JSON message into v; max bounds its size. io.EOF means
// the peer closed the connection between messages.
func Read(r io.Reader, v any, max int) error {
	body, raw, err := readFrame(r, max)
	if err != nil {
		return err
	}
	if raw {
		return errors.New("lite: decode: a raw output frame where a JSON message belongs")
	}
	return decode(body, v)
}

// ReadEvent receives one Event of a call: a raw output frame or a JSON
// message. max bounds its size.
func ReadEvent(r io.Reader, ev *Event, max int) error {
	body, raw, err := readFrame(r, max)
	if err != nil {
		return err
	}
	if raw {
		*ev = Event{Output: body}
		return nil
	}
	return decode(body, ev)
}

// readFrame reads one length-prefixed frame and says whether it is raw.
func readFrame(r io.Reader, max int) (body []byte, raw bool, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, false, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	raw = n&rawFrame != 0
	n &^= rawFrame
	if uint64(n) > uint64(max) {
		return nil, false, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	return body, raw, nil
}

func decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("lite: decode: %w", err)
	}
	return nil
}

// InspectEvent is one message from the daemon to an attached inspector
// (`contextd inspect`); exactly one field is set. At attach the daemon sends
// Hello, then every message recorded so far, then each new one as it passes.
type InspectEvent struct {
	Hello   *InspectHello   `json:"hello,omitempty"`
	Message *InspectMessage `json:"message,omitempty"`
	// Decided is the Seq of a held message that was forwarded, modified or
	// dropped (by this inspector, another one, or the wrap shutting down).
	Decided uint64 `json:"decided,omitempty"`
	// Intercept reports the intercept switch after it changed.
	Intercept *bool `json:"intercept,omitempty"`
	// Ended: the wrap session is over (the connection closes after it).
	Ended bool            `json:"ended,omitempty"`
	Error *catalog.Detail `json:"error,omitempty"`
}

// InspectHello describes the session an inspector attached to.
type InspectHello struct {
	Record    string `json:"record"`
	Server    string `json:"server"` // its name
	Target    string `json:"target"` // command line or URL
	Intercept bool   `json:"intercept"`
}

// InspectMessage is one message of the session as recorded.
type InspectMessage struct {
	Seq    uint64    `json:"seq"`
	Dir    string    `json:"dir"` // "client->server" or "server->client"
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"` // request, notification, response, error, batch, invalid
	ID     string    `json:"id,omitempty"`
	Method string    `json:"method,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	// Corr is the Seq of the request a response answers (0: unknown).
	Corr uint64          `json:"corr,omitempty"`
	Raw  json.RawMessage `json:"raw"`
	// Original is the message as received, when a rule or the user changed it.
	Original json.RawMessage `json:"original,omitempty"`
	Action   string          `json:"action"` // forward, modify, drop, held
	Rule     string          `json:"rule,omitempty"`
}

// InspectCommand is one message from an inspector; exactly one field is set.
type InspectCommand struct {
	// Intercept switches holding on or off. Off releases (forwards) every
	// held message.
	Intercept *bool `json:"intercept,omitempty"`
	// Forward, Drop: decide a held message by Seq.
	Forward uint64 `json:"forward,omitempty"`
	Drop    uint64 `json:"drop,omitempty"`
	// Modify forwards a held message with new content (one JSON-RPC message).
	Modify *InspectModify `json:"modify,omitempty"`
	// Replay sends the client request with this Seq to the server again, as
	// a new request (new id); its response is recorded, not sent to the client.
	Replay uint64 `json:"replay,omitempty"`
}

// InspectModify is a held message's replacement.
type InspectModify struct {
	Seq uint64          `json:"seq"`
	Raw json.RawMessage `json:"raw"`
}
