package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// HTTPOptions configures the two HTTP transports. The zero value (or nil)
// means the defaults.
type HTTPOptions struct {
	// Client sends the requests. nil: a client of its own with no overall
	// timeout, since event streams stay open as long as the session.
	Client *http.Client
	// Header is added to every request (an Authorization header from the
	// user's configuration, say).
	Header http.Header
	// MaxMessage is the largest message accepted from the server, in bytes
	// (jsonrpc.DefaultMaxMessage when <= 0).
	MaxMessage int
	// ReconnectDelay is how long to wait before reopening an event stream
	// when the server did not say (its "retry:" field). 0: one second.
	ReconnectDelay time.Duration
	// Logger receives what the transport cannot report through Read or Write:
	// a notification the server refused, a stream that could not be reopened.
	// nil: discarded.
	Logger *slog.Logger
}

func (o *HTTPOptions) withDefaults() HTTPOptions {
	var v HTTPOptions
	if o != nil {
		v = *o
	}
	if v.Client == nil {
		v.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if v.MaxMessage <= 0 {
		v.MaxMessage = jsonrpc.DefaultMaxMessage
	}
	if v.ReconnectDelay <= 0 {
		v.ReconnectDelay = time.Second
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// ErrServer wraps what an HTTP MCP server did wrong or could not do: it could
// not be reached, it refused the session, it broke the protocol.
var ErrServer = fmt.Errorf("mcp transport: the MCP server failed: %w", catalog.ErrIO)

// addHeaders adds the configured headers h to req.
func addHeaders(req *http.Request, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
}

func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp transport: %q is not an http or https URL: %w", raw, catalog.ErrUsage)
	}
	return u, nil
}

// mediaType is a Content-Type without its parameters, lower-cased.
func mediaType(h http.Header) string {
	t, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return t
}

// reachError describes a failed HTTP exchange without the URL: a URL may carry
// a token in its query.
func reachError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// inbox is the queue of messages from the server, shared by the goroutines
// that read response bodies and event streams.
type inbox struct {
	ch   chan []byte
	life context.Context // the connection's; ends with Close
}

// put queues msg, waiting while the reader is behind (backpressure reaches the
// HTTP body), until the connection closes.
func (in *inbox) put(msg []byte) bool {
	select {
	case in.ch <- msg:
		return true
	case <-in.life.Done():
		return false
	}
}

// read returns the next message, or why there is none: the connection's
// close (ErrClosed), ctx's end, or the end of the stream (ended closed, end
// says why). Messages already queued go before an end.
func (in *inbox) read(ctx context.Context, ended <-chan struct{}, end func() error) ([]byte, error) {
	if in.life.Err() != nil {
		return nil, ErrClosed
	}
	select {
	case msg := <-in.ch:
		return msg, nil
	default:
	}
	select {
	case msg := <-in.ch:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-in.life.Done():
		return nil, ErrClosed
	case <-ended:
		select {
		case msg := <-in.ch:
			return msg, nil
		default:
		}
		if in.life.Err() != nil {
			return nil, ErrClosed
		}
		return nil, end()
	}
}

// fail answers each request id with a JSON-RPC error, so that a client never
// waits for an answer the transport knows will not come.
func (in *inbox) fail(ids []json.RawMessage, why string) {
	for _, id := range ids {
		in.put(jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError, "contextd: "+why))
	}
}

// waiting tracks the requests of one POST still unanswered.
type waiting map[string]json.RawMessage

func newWaiting(ids []json.RawMessage) waiting {
	w := make(waiting, len(ids))
	for _, id := range ids {
		w[jsonrpc.Key(jsonrpc.ClientToServer, id)] = id
	}
	return w
}

// answered removes the requests msg answers.
func (w waiting) answered(info jsonrpc.Info) {
	if len(w) == 0 {
		return
	}
	if info.Kind == jsonrpc.KindResponse || info.Kind == jsonrpc.KindError {
		delete(w, jsonrpc.Key(jsonrpc.ClientToServer, info.ID))
	}
	for _, el := range info.Batch {
		w.answered(el)
	}
}

func (w waiting) ids() []json.RawMessage {
	ids := make([]json.RawMessage, 0, len(w))
	for _, id := range w {
		ids = append(ids, id)
	}
	return ids
}

// readBody reads a whole application/json body, up to max bytes.
func readBody(body io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w (limit %d bytes)", jsonrpc.ErrTooLarge, max)
	}
	return bytes.TrimSpace(b), nil
}

// headerValue encodes a value for an Mcp-Name style header the way the MCP
// specification's standard headers do: as is when it is plain printable ASCII,
// else base64 between "=?base64?" and "?=".
func headerValue(s string) string {
	plain := s != "" && s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t' &&
		!(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// validToken reports whether s is fit to send back as a header value the
// server chose (a session id: visible ASCII, per the specification).
func validToken(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validVersion reports whether s looks like an MCP protocol version
// (YYYY-MM-DD), the only form worth echoing in a header.
func validVersion(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i, c := range []byte(s) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// stringAt decodes the string at path in msg, "" when absent or not a string.
func stringAt(msg []byte, path ...string) string {
	v, err := jsonrpc.Lookup(msg, path...)
	if err != nil || len(v) == 0 || v[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// sleep waits d or until ctx ends, reporting whether the wait was complete.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
