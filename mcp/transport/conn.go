// Package transport carries raw MCP messages, one whole JSON-RPC message per
// Read or Write, over stdio, Streamable HTTP and the legacy HTTP+SSE transport.
package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// Conn is a message-level connection to one MCP peer. Messages are raw bytes,
// passed on exactly as they came: a transport never re-encodes one.
type Conn interface {
	// Read returns the next message from the peer; the slice is the caller's.
	// It returns io.EOF once the peer has ended the connection, ctx's error
	// when ctx ends first, and ErrClosed after Close. An oversized message
	// yields an error wrapping jsonrpc.ErrTooLarge, and reading can go on.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one whole message. Writes from several goroutines do not
	// interleave.
	Write(ctx context.Context, msg []byte) error
	// Close ends the connection and unblocks Read. Calling it again does
	// nothing.
	Close() error
}

// ClassifiedWriter is a Conn that can be told what a message is. A
// connection that must know (which requests a message carries, to answer
// them should it fail to deliver it) classifies what it is given to write;
// the relay, which has classified every message it passes on, gives its
// classification instead, so that the message is not scanned again.
type ClassifiedWriter interface {
	Conn
	// WriteClassified is Write with info, msg's classification by
	// jsonrpc.Classify (the whole of msg, as it is written); nil when there
	// is none, and the connection classifies msg itself.
	WriteClassified(ctx context.Context, msg []byte, info *jsonrpc.Info) error
}

// WriteClassified writes msg to c, passing on info, msg's classification
// (or nil), when c takes it.
func WriteClassified(ctx context.Context, c Conn, msg []byte, info *jsonrpc.Info) error {
	if w, ok := c.(ClassifiedWriter); ok {
		return w.WriteClassified(ctx, msg, info)
	}
	return c.Write(ctx, msg)
}

// ErrClosed is returned by Read and Write after Close.
var ErrClosed = fmt.Errorf("mcp transport: connection closed: %w", catalog.ErrIO)

// IsClosed reports whether err says the connection or its underlying pipe,
// file or socket is closed: the end of a peer, not a fault in the relay.
func IsClosed(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNRESET)
}

// requestIDs lists the ids of the requests in a classified message (one, or a
// batch's): those that need an answer if the message cannot be delivered.
func requestIDs(info jsonrpc.Info) []json.RawMessage {
	if info.Kind == jsonrpc.KindRequest {
		return []json.RawMessage{info.ID}
	}
	var ids []json.RawMessage
	for _, el := range info.Batch {
		if el.Kind == jsonrpc.KindRequest {
			ids = append(ids, el.ID)
		}
	}
	return ids
}
