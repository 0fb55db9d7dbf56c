// Package relay moves raw MCP messages between a client and a server, one
// forward loop per direction, passing each through a Handler and an Observer.
package relay

import (
	"context"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// Action is what happens to a message.
type Action uint8

const (
	Forward Action = iota // pass Raw on unchanged (byte-exact)
	Modify                // pass Verdict.Raw on instead
	Drop                  // pass nothing on
)

func (a Action) String() string { return [...]string{"forward", "modify", "drop"}[a] }

// Verdict is a Handler's decision on one message.
type Verdict struct {
	Action Action
	// Raw replaces the message when Action is Modify.
	Raw []byte
	// Reply, when set, is sent back toward the message's sender (e.g. a JSON-RPC
	// error answering a refused request), whatever Action is.
	Reply []byte
	// Rule names the rule that decided, for the record ("" for none).
	Rule string
}

// Handler decides the fate of every message. It may block (a message held for
// the user); it must return when ctx is done. An error blocks the message: the
// relay drops it and, for a request, answers the sender with a JSON-RPC error
// (fail closed); a response is replaced by a JSON-RPC error response to the
// requester. The error's text goes into that JSON-RPC error, so it must not
// quote the message's content. A Modify's Raw and a Reply must be valid
// JSON-RPC: the relay checks them, and fails closed when they are not.
type Handler interface {
	Handle(ctx context.Context, m *jsonrpc.Message) (Verdict, error)
}

// Observer sees every message after its verdict, in Seq order per direction,
// and a response after the request it answers. It must not block for long: it
// runs on the forward loop.
type Observer interface {
	Observe(m *jsonrpc.Message, v Verdict, err error)
}
