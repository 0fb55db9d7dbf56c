// Package jsonrpc reads, classifies and correlates raw JSON-RPC 2.0 messages as
// MCP carries them, without decoding more of a message than its envelope.
package jsonrpc

import (
	"encoding/json"
	"time"
)

// Direction is which way a message travels through a relay.
type Direction uint8

const (
	// ClientToServer: from the agent (MCP client) toward the MCP server.
	ClientToServer Direction = iota + 1
	// ServerToClient: from the MCP server toward the agent.
	ServerToClient
)

func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "client->server"
	case ServerToClient:
		return "server->client"
	}
	return "unknown"
}

// Reverse is the other direction.
func (d Direction) Reverse() Direction {
	if d == ClientToServer {
		return ServerToClient
	}
	return ClientToServer
}

// Kind is what a JSON-RPC message is, read from its envelope alone.
type Kind uint8

const (
	KindInvalid      Kind = iota // not a JSON-RPC 2.0 message we can classify
	KindRequest                  // has method and id
	KindNotification             // has method, no id
	KindResponse                 // has id and result
	KindError                    // has id (possibly null) and error
	KindBatch                    // a JSON array of messages
)

func (k Kind) String() string {
	return [...]string{"invalid", "request", "notification", "response", "error", "batch"}[k]
}

// Info is a message's envelope: enough to route, correlate and match rules.
type Info struct {
	Kind Kind
	// ID is the id exactly as it appeared (a JSON string or number, or null),
	// empty for notifications. Compare ids with Key, not byte equality.
	ID json.RawMessage
	// Method is set for requests and notifications.
	Method string
	// Tool is params.name of a "tools/call" request, or of a "tools/call"
	// notification that names one, else empty.
	Tool string
	// Batch holds the elements' envelopes when Kind is KindBatch.
	Batch []Info
	// CancelID is params.requestId of a "notifications/cancelled" notification
	// (a JSON string or number), else empty. The cancelled request travelled the
	// same way as the notification.
	CancelID json.RawMessage
}

// Message is one raw message on its way through a relay, with the relay's
// metadata. Raw is never re-encoded unless a rule modifies the message.
type Message struct {
	Seq  uint64    // position in the session, from 1, over both directions
	Dir  Direction // which way it travels
	Time time.Time // when the relay read it
	Info Info
	// Corr is, for a response or error, the Seq of the request it answers (0 when
	// none is known); for a request, its own Seq.
	Corr uint64
	// ReqMethod and ReqTool are, for a response or error the relay matched to
	// its request, that request's Method and Tool: what a rule needs to tell a
	// tools/list result from a tools/call result, or one tool's result from
	// another's. Empty when no request is known.
	ReqMethod string
	ReqTool   string
	// Answers is, for a batch, the request each element answers, indexed as
	// Info.Batch: a zero Match (Seq 0) for an element that answers none
	// known. Nil for a message that is not a batch.
	Answers []Match
	Raw     []byte
}
