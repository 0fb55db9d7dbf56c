package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

// SSE is a client of MCP's older HTTP+SSE transport (specification
// 2024-11-05): a GET event stream carries the server's messages, after an
// "endpoint" event naming the URL the client POSTs its messages to. The
// session ends with the stream: Read then returns io.EOF.
type SSE struct {
	endpoint string
	opts     HTTPOptions
	in       inbox
	stop     context.CancelFunc
	wg       sync.WaitGroup
	closing  sync.Once

	ended  chan struct{} // closed when the event stream has ended
	endErr error         // why, set before ended is closed
}

// NewSSE opens the event stream at rawURL and waits, as long as ctx allows,
// for the endpoint event. An endpoint on another origin than rawURL is
// refused: it would send the session's messages, and any credentials in
// HTTPOptions.Header, to a third party.
func NewSSE(ctx context.Context, rawURL string, opts *HTTPOptions) (*SSE, error) {
	base, err := parseHTTPURL(rawURL)
	if err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	s := &SSE{opts: opts.withDefaults(), stop: stop, ended: make(chan struct{})}
	s.in = inbox{ch: make(chan []byte, 64), life: life}
	fail := func(err error) (*SSE, error) {
		stop()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
		return nil, err
	}
	// Until the endpoint is known, ctx bounds the wait; after, the stream
	// lives as long as the connection.
	detach := context.AfterFunc(ctx, stop)

	req, err := http.NewRequestWithContext(life, http.MethodGet, rawURL, nil)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrServer, err))
	}
	s.addHeaders(req)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return fail(fmt.Errorf("%w: opening the event stream: %s", ErrServer, reachError(err)))
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		resp.Body.Close()
		return fail(fmt.Errorf("%w: opening the event stream: HTTP %d, %s", ErrServer, resp.StatusCode, orNone(mediaType(resp.Header))))
	}
	sse := newSSEReader(resp.Body, s.opts.MaxMessage)
	var early [][]byte // messages sent before the endpoint, which is unusual but harmless
	for {
		ev, err := sse.next()
		if err != nil {
			resp.Body.Close()
			return fail(fmt.Errorf("%w: the event stream ended before the endpoint event: %s", ErrServer, reachError(err)))
		}
		if ev.event == "message" && len(early) < cap(s.in.ch) {
			early = append(early, bytes.TrimSpace(ev.data))
			continue
		}
		if ev.event != "endpoint" {
			continue
		}
		u, err := base.Parse(string(bytes.TrimSpace(ev.data)))
		if err != nil || u.Scheme != base.Scheme || u.Host != base.Host {
			resp.Body.Close()
			return fail(fmt.Errorf("%w: the endpoint event names another origin or no URL", ErrServer))
		}
		s.endpoint = u.String()
		break
	}
	if !detach() {
		resp.Body.Close()
		return fail(fmt.Errorf("%w: gave up waiting for the endpoint", ErrServer))
	}
	for _, m := range early {
		if len(m) > 0 {
			s.in.ch <- m // fits: early is no longer than the channel's capacity
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer resp.Body.Close()
		var err error
		for {
			var ev sseEvent
			if ev, err = sse.next(); err != nil {
				break
			}
			if msg := bytes.TrimSpace(ev.data); ev.event == "message" && len(msg) > 0 && !s.in.put(msg) {
				break
			}
		}
		if err == nil || errors.Is(err, io.EOF) || life.Err() != nil {
			s.endErr = io.EOF
		} else {
			s.endErr = fmt.Errorf("%w: event stream: %s", ErrServer, reachError(err))
		}
		close(s.ended)
	}()
	return s, nil
}

// Endpoint is the URL messages are POSTed to, as the server named it.
func (s *SSE) Endpoint() string { return s.endpoint }

func (s *SSE) addHeaders(req *http.Request) { addHeaders(req, s.opts.Header) }

// Read implements Conn. Messages already received are returned before the
// end of the stream is.
func (s *SSE) Read(ctx context.Context) ([]byte, error) {
	return s.in.read(ctx, s.ended, func() error { return s.endErr })
}

// Write implements Conn: it POSTs msg to the endpoint. The server answers on
// the event stream; when the POST itself fails, Read returns a JSON-RPC error
// for each request msg carried.
func (s *SSE) Write(ctx context.Context, msg []byte) error {
	return s.WriteClassified(ctx, msg, nil)
}

var _ ClassifiedWriter = (*SSE)(nil)

// WriteClassified implements ClassifiedWriter: Write, with msg's
// classification when the caller has it.
func (s *SSE) WriteClassified(ctx context.Context, msg []byte, info *jsonrpc.Info) error {
	if s.in.life.Err() != nil {
		return ErrClosed
	}
	if info == nil {
		in, err := jsonrpc.Classify(msg)
		if err != nil {
			return fmt.Errorf("mcp sse: refusing to send: %w", err)
		}
		info = &in
	}
	ids := requestIDs(*info)
	reqCtx, cancel := context.WithCancel(s.in.life)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, s.endpoint, bytes.NewReader(msg))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
	s.addHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		if s.in.life.Err() != nil {
			return ErrClosed
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.in.fail(ids, "the MCP server could not be reached: "+reachError(err))
		return nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		s.opts.Logger.Warn("mcp sse: POST answered with an error", "status", resp.StatusCode)
		s.in.fail(ids, fmt.Sprintf("the MCP server refused the message (HTTP %d)", resp.StatusCode))
	}
	return nil
}

// Close implements Conn: it ends the event stream, which ends the session.
func (s *SSE) Close() error {
	s.closing.Do(func() {
		s.stop()
		s.wg.Wait()
	})
	return nil
}
