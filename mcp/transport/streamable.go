package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// Header names of the Streamable HTTP transport.
const (
	hSession  = "Mcp-Session-Id"
	hVersion  = "Mcp-Protocol-Version"
	hMethod   = "Mcp-Method"
	hName     = "Mcp-Name"
	hLastID   = "Last-Event-ID"
	metaProto = "io.modelcontextprotocol/protocolVersion"
	// Protocol versions from which the client must send Mcp-Method and Mcp-Name.
	standardHeadersFrom = "2026-07-28"
	// How often a POST's broken event stream is resumed before its requests
	// are given up.
	resumeAttempts = 3
)

// Streamable is a client of MCP's Streamable HTTP transport (specification
// 2025-03-26 and later). Each message written is POSTed to the server's URL;
// the server answers with a JSON body or an event stream, whose messages Read
// returns, byte for byte. The session id the server assigns is kept and sent
// with every request, and DELETEd on Close. Once the client's
// notifications/initialized has been accepted, a GET stream is opened for
// messages the server sends on its own, unless the server answers 405.
//
// The official Go SDK's client transports are not used here: they decode each
// message and encode it again, which would lose unknown fields and change
// spellings; the relay forwards bytes exactly. (The SDK's servers are what the
// tests run against.)
//
// When a request's answer cannot come (the server is unreachable, answers an
// HTTP error without a JSON-RPC one, or its stream ends early and cannot be
// resumed), Read returns a JSON-RPC error response for it instead, so the
// client is never left waiting.
type Streamable struct {
	url  string
	opts HTTPOptions
	in   inbox
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	session  string
	version  string // negotiated in initialize
	initKey  string // Key of the initialize request in flight
	listened bool   // the GET stream was started
	fatal    error
	failed   chan struct{} // closed when fatal is set
	closing  sync.Once
}

// NewStreamableHTTP returns a Streamable connection to the MCP endpoint at
// rawURL. Nothing is sent before the first Write.
func NewStreamableHTTP(rawURL string, opts *HTTPOptions) (*Streamable, error) {
	if _, err := parseHTTPURL(rawURL); err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	s := &Streamable{
		url:    rawURL,
		opts:   opts.withDefaults(),
		stop:   stop,
		failed: make(chan struct{}),
	}
	s.in = inbox{ch: make(chan []byte, 64), life: life}
	return s, nil
}

// Read implements Conn. Messages already received are returned before a
// failure of the connection is.
func (s *Streamable) Read(ctx context.Context) ([]byte, error) {
	return s.in.read(ctx, s.failed, s.fatalErr)
}

func (s *Streamable) fatalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

func (s *Streamable) setFatal(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal == nil {
		s.fatal = err
		close(s.failed)
	}
}

// Write implements Conn. It returns once the message is on its way: for a
// message carrying requests, when its body has been sent (the answer may take
// as long as the tool runs, and must not hold up the next message); for the
// initialize request, when the server's answer has begun, so that the
// session id is known before anything else is sent; for notifications and
// responses, when the server has accepted them, which keeps them in order
// with what follows. Failures after that are answered through Read.
func (s *Streamable) Write(ctx context.Context, msg []byte) error {
	return s.WriteClassified(ctx, msg, nil)
}

var _ ClassifiedWriter = (*Streamable)(nil)

// WriteClassified implements ClassifiedWriter: Write, with msg's
// classification when the caller has it.
func (s *Streamable) WriteClassified(ctx context.Context, msg []byte, info *jsonrpc.Info) error {
	if s.in.life.Err() != nil {
		return ErrClosed
	}
	if err := s.fatalErr(); err != nil {
		return err
	}
	if info == nil {
		in, err := jsonrpc.Classify(msg)
		if err != nil {
			return fmt.Errorf("mcp http: refusing to send: %w", err)
		}
		info = &in
	}
	ids := requestIDs(*info)
	initialize := info.Kind == jsonrpc.KindRequest && info.Method == "initialize"
	if initialize {
		s.mu.Lock()
		s.initKey = jsonrpc.Key(jsonrpc.ClientToServer, info.ID)
		s.mu.Unlock()
	}

	sent := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(sent) }) }
	body := &sentReader{r: bytes.NewReader(msg)}
	if !initialize {
		body.onEOF = signal // initialize waits for the answer's headers instead
	}
	// A POST carrying requests lives as long as the connection: its answer
	// may stream for the whole tool call. One without ends when the server
	// has accepted it, or when the caller gives up.
	reqCtx := s.in.life
	if len(ids) == 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithCancel(s.in.life)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, s.url, body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	req.ContentLength = int64(len(msg))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(msg)), nil }
	s.headers(req, msg, *info)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")

	if len(ids) == 0 {
		accepted := s.post(req, nil, signal)
		if accepted && info.Kind == jsonrpc.KindNotification && info.Method == "notifications/initialized" {
			s.listen()
		}
		return nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.post(req, ids, signal)
	}()
	select {
	case <-sent:
	case <-ctx.Done():
	case <-s.in.life.Done():
	}
	return nil
}

// headers sets the session and version headers, and the standard headers
// later protocol versions require.
func (s *Streamable) headers(req *http.Request, msg []byte, info jsonrpc.Info) {
	addHeaders(req, s.opts.Header)
	s.mu.Lock()
	session, version := s.session, s.version
	s.mu.Unlock()
	if session != "" {
		req.Header.Set(hSession, session)
	}
	if info.Kind == jsonrpc.KindRequest {
		// A request may name its version itself; the header must agree.
		if v := stringAt(msg, "params", "_meta", metaProto); validVersion(v) {
			version = v
		}
	}
	if version != "" {
		req.Header.Set(hVersion, version)
	}
	if version < standardHeadersFrom || (info.Kind != jsonrpc.KindRequest && info.Kind != jsonrpc.KindNotification) {
		return
	}
	req.Header.Set(hMethod, headerValue(info.Method))
	name := ""
	switch info.Method {
	case "tools/call":
		name = info.Tool
	case "prompts/get":
		name = stringAt(msg, "params", "name")
	case "resources/read":
		name = stringAt(msg, "params", "uri")
	}
	if name != "" {
		req.Header.Set(hName, headerValue(name))
	}
}

// post sends one POST and delivers what comes back. signal is called once the
// exchange has got far enough for Write to return. It reports whether the
// server accepted the POST (a 2xx status).
func (s *Streamable) post(req *http.Request, ids []json.RawMessage, signal func()) (accepted bool) {
	defer signal()
	resp, err := s.opts.Client.Do(req)
	signal()
	if err != nil {
		if s.in.life.Err() == nil {
			s.opts.Logger.Warn("mcp http: POST failed", "error", reachError(err))
			s.in.fail(ids, "the MCP server could not be reached: "+reachError(err))
		}
		return false
	}
	defer resp.Body.Close()
	accepted = resp.StatusCode/100 == 2
	if sid := resp.Header.Get(hSession); sid != "" {
		s.mu.Lock()
		if s.session == "" && validToken(sid) {
			s.session = sid
		}
		s.mu.Unlock()
	}
	wait := newWaiting(ids)
	ctype := mediaType(resp.Header)
	switch {
	case resp.StatusCode == http.StatusNotFound && req.Header.Get(hSession) != "":
		// The server has ended the session; only a new initialize, which is
		// the client's to send, can start another.
		s.in.fail(ids, "the MCP server ended the session (HTTP 404)")
		s.setFatal(fmt.Errorf("%w: the server ended the session (HTTP 404)", ErrServer))
		return false
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		// Accepted without a body; answers, if any, come on the GET stream.
		return true
	case resp.StatusCode/100 == 2 && ctype == "text/event-stream":
		s.events(resp, wait)
	case ctype == "application/json":
		// JSON-RPC errors come this way too, with an HTTP error status.
		b, err := readBody(resp.Body, s.opts.MaxMessage)
		if err == nil && len(b) > 0 {
			s.deliver(b, wait)
		}
		if resp.StatusCode/100 != 2 {
			s.opts.Logger.Warn("mcp http: POST answered with an error", "status", resp.StatusCode)
		}
	case resp.StatusCode/100 != 2:
		s.opts.Logger.Warn("mcp http: POST answered with an error", "status", resp.StatusCode)
	}
	if len(wait) > 0 {
		why := fmt.Sprintf("the MCP server gave no answer (HTTP %d, %s)", resp.StatusCode, orNone(ctype))
		if resp.StatusCode/100 == 2 && ctype == "text/event-stream" {
			why = "the MCP server's event stream ended before the answer"
		}
		s.in.fail(wait.ids(), why)
	}
	return accepted
}

func orNone(s string) string {
	if s == "" {
		return "no content type"
	}
	return s
}

// deliver queues one message from the server, noting what it answers and,
// for the answer to initialize, the protocol version agreed.
func (s *Streamable) deliver(msg []byte, wait waiting) bool {
	info, err := jsonrpc.Classify(msg)
	if err == nil {
		wait.answered(info)
		if info.Kind == jsonrpc.KindResponse {
			s.mu.Lock()
			if s.initKey != "" && jsonrpc.Key(jsonrpc.ClientToServer, info.ID) == s.initKey {
				s.initKey = ""
				if v := stringAt(msg, "result", "protocolVersion"); validVersion(v) {
					s.version = v
				}
			}
			s.mu.Unlock()
		}
	}
	// A message that does not classify is passed on all the same: refusing
	// it is the relay's decision, and it needs to see it to record it.
	return s.in.put(msg)
}

// events reads a POST's event stream, resuming it with Last-Event-ID from a
// GET when it breaks before every request is answered and the server gave
// event ids.
func (s *Streamable) events(resp *http.Response, wait waiting) {
	sse := newSSEReader(resp.Body, s.opts.MaxMessage)
	err := s.stream(sse, wait)
	for attempt := 1; len(wait) > 0 && sse.lastID != "" && attempt <= resumeAttempts && s.in.life.Err() == nil; attempt++ {
		delay := s.opts.ReconnectDelay
		if sse.retry > 0 {
			delay = sse.retry
		}
		if !sleep(s.in.life, delay) {
			return
		}
		r, gerr := s.get(sse.lastID)
		if gerr != nil {
			err = gerr
			continue
		}
		next := newSSEReader(r.Body, s.opts.MaxMessage)
		next.lastID, next.retry = sse.lastID, sse.retry
		err = s.stream(next, wait)
		r.Body.Close()
		sse = next
	}
	if err != nil && !errors.Is(err, io.EOF) && s.in.life.Err() == nil {
		s.opts.Logger.Warn("mcp http: event stream failed", "error", reachError(err))
	}
}

// stream delivers the message events of one event stream until it ends. A
// server closes a POST's stream after its last answer.
func (s *Streamable) stream(sse *sseReader, wait waiting) error {
	for {
		ev, err := sse.next()
		if err != nil {
			return err
		}
		if msg := bytes.TrimSpace(ev.data); ev.event == "message" && len(msg) > 0 {
			if !s.deliver(msg, wait) {
				return ErrClosed
			}
		}
	}
}

// get opens a GET event stream, resuming after lastID when it is set.
func (s *Streamable) get(lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(s.in.life, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	addHeaders(req, s.opts.Header)
	req.Header.Set("Accept", "text/event-stream")
	s.mu.Lock()
	if s.session != "" {
		req.Header.Set(hSession, s.session)
	}
	if s.version != "" {
		req.Header.Set(hVersion, s.version)
	}
	s.mu.Unlock()
	if lastID != "" {
		req.Header.Set(hLastID, lastID)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, errors.New(reachError(err))
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		resp.Body.Close()
		return nil, &statusError{resp.StatusCode}
	}
	return resp, nil
}

type statusError struct{ code int }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.code) }

// listen starts the GET stream for messages the server sends on its own.
func (s *Streamable) listen() {
	s.mu.Lock()
	started := s.listened
	s.listened = true
	s.mu.Unlock()
	if started {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		delay, lastID := s.opts.ReconnectDelay, ""
		for failures := 0; s.in.life.Err() == nil; {
			resp, err := s.get(lastID)
			var se *statusError
			if errors.As(err, &se) && (se.code == http.StatusMethodNotAllowed || se.code == http.StatusNotFound) {
				return // the server offers no such stream (or the session is gone)
			}
			got := false
			if err == nil {
				sse := newSSEReader(resp.Body, s.opts.MaxMessage)
				_ = s.stream(sse, nil)
				got = sse.dispatched > 0
				resp.Body.Close()
				lastID = sse.lastID
				if sse.retry > 0 {
					delay = sse.retry
				}
			}
			// Reopen after the server's delay when the stream carried
			// something; back off after failures and empty streams, up to
			// half a minute.
			if got {
				failures = 0
			} else {
				failures++
				if failures > 1 && err != nil {
					s.opts.Logger.Warn("mcp http: the server's GET stream keeps failing", "error", err, "attempts", failures)
				}
			}
			wait := delay << min(failures, 5)
			if wait > 30*time.Second {
				wait = 30 * time.Second
			}
			if !sleep(s.in.life, wait) {
				return
			}
		}
	}()
}

// Close implements Conn: it ends every exchange in flight and, when the server
// gave a session id, DELETEs the session.
func (s *Streamable) Close() error {
	s.closing.Do(func() {
		s.stop()
		s.mu.Lock()
		session, version := s.session, s.version
		s.mu.Unlock()
		if session != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
			if err == nil {
				addHeaders(req, s.opts.Header)
				req.Header.Set(hSession, session)
				if version != "" {
					req.Header.Set(hVersion, version)
				}
				if resp, err := s.opts.Client.Do(req); err == nil {
					resp.Body.Close() // 405: the server does not let clients end sessions
				} else {
					s.opts.Logger.Debug("mcp http: DELETE failed", slog.String("error", reachError(err)))
				}
			}
		}
		s.wg.Wait()
	})
	return nil
}

// sentReader calls onEOF once the HTTP client has read the whole body: the
// message has then been handed to the connection.
type sentReader struct {
	r     *bytes.Reader
	onEOF func()
}

func (b *sentReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.onEOF != nil {
		b.onEOF()
	}
	return n, err
}
