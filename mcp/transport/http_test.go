package transport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// seen records the requests a real server received, to check the headers the
// transport sends. It observes only; the SDK handler answers.
type seen struct {
	mu   sync.Mutex
	reqs []http.Request
	gets chan struct{}
}

func (s *seen) wrap(h http.Handler) http.Handler {
	s.gets = make(chan struct{}, 16)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, http.Request{Method: r.Method, Header: r.Header.Clone()})
		s.mu.Unlock()
		if r.Method == http.MethodGet {
			select {
			case s.gets <- struct{}{}:
			default:
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (s *seen) all() []http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Request(nil), s.reqs...)
}

func TestStreamableHTTP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    *mcp.StreamableHTTPOptions
		version string
	}{
		{"sse answers", nil, "2025-06-18"},
		{"json answers", &mcp.StreamableHTTPOptions{JSONResponse: true}, "2025-06-18"},
		{"2025-03-26", nil, "2025-03-26"},
		{"2025-11-25", nil, "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newSDKServer()
			var rec seen
			ts := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, tc.opts)))
			defer ts.Close()

			c, err := NewStreamableHTTP(ts.URL, &HTTPOptions{Header: http.Header{"X-Test": {"yes"}}, ReconnectDelay: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() // before ts.Close, which waits for the open GET stream
			session(t, c, tc.version, tc.opts == nil)

			// The GET stream carries what the server sends on its own.
			select {
			case <-rec.gets:
			case <-time.After(10 * time.Second):
				t.Fatal("no GET stream was opened after initialized")
			}
			time.Sleep(50 * time.Millisecond) // let the handler attach the stream
			server.AddTool(&mcp.Tool{Name: "late", Description: "Added later.", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			readKind(t, c, jsonrpc.KindNotification, "notifications/tools/list_changed")

			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := c.Read(context.Background()); !errors.Is(err, ErrClosed) {
				t.Errorf("Read after Close: %v", err)
			}
			if err := c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"x"}`)); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close: %v", err)
			}

			reqs := rec.all()
			var session string
			deleted := false
			for i, r := range reqs {
				if r.Header.Get("X-Test") != "yes" {
					t.Errorf("request %d (%s) lacks the configured header", i, r.Method)
				}
				if i == 0 {
					if r.Header.Get(hSession) != "" {
						t.Errorf("initialize sent a session id")
					}
					continue
				}
				if session == "" {
					session = r.Header.Get(hSession)
				}
				if got := r.Header.Get(hSession); got == "" || got != session {
					t.Errorf("request %d (%s): session %q, want %q", i, r.Method, got, session)
				}
				if got := r.Header.Get(hVersion); got != tc.version {
					t.Errorf("request %d (%s): protocol version header %q, want %q", i, r.Method, got, tc.version)
				}
				deleted = deleted || r.Method == http.MethodDelete
			}
			if session == "" || !deleted {
				t.Errorf("session %q, DELETE sent: %v", session, deleted)
			}
		})
	}
}

// TestStreamableResume: the server closes a call's event stream before the
// answer (as it may, since 2025-11-25); the transport resumes it with
// Last-Event-ID and the answer still arrives.
func TestStreamableResume(t *testing.T) {
	server := newSDKServer()
	var rec seen
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	ts := httptest.NewServer(rec.wrap(h))
	defer ts.Close()
	c, err := NewStreamableHTTP(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write(t, c, initializeMsg(1, "2025-11-25"))
	readID(t, c, "1", nil)
	write(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(t, c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hangup","arguments":{"text":"resuming"}}}`)
	res := readID(t, c, "9", nil)
	mustContain(t, res, `"after resuming"`)
	resumed := false
	for _, r := range rec.all() {
		resumed = resumed || r.Method == http.MethodGet && r.Header.Get(hLastID) != ""
	}
	if !resumed {
		t.Error("the answer came without a GET carrying Last-Event-ID")
	}
}

// TestStreamableFailures: when the answer cannot come, the client gets a
// JSON-RPC error for its request instead of waiting for ever.
func TestStreamableFailures(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		ts := httptest.NewServer(http.NotFoundHandler())
		url := ts.URL
		ts.Close() // nothing listens there any more
		c, err := NewStreamableHTTP(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		write(t, c, initializeMsg(7, "2025-06-18"))
		mustContain(t, readID(t, c, "7", nil), `"error"`, `"code":-32603`, "could not be reached")
	})
	t.Run("session ended", func(t *testing.T) {
		server := newSDKServer()
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
		defer ts.Close()
		c, err := NewStreamableHTTP(ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		write(t, c, initializeMsg(1, "2025-06-18"))
		readID(t, c, "1", nil)
		// The session ends behind the client's back.
		c.mu.Lock()
		sid := c.session
		c.mu.Unlock()
		req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
		req.Header.Set(hSession, sid)
		if resp, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		write(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		mustContain(t, readID(t, c, "2", nil), `"error"`, "ended the session")
		_, err = c.Read(readCtx(t))
		if !errors.Is(err, ErrServer) || !errors.Is(err, catalog.ErrIO) {
			t.Errorf("Read after the session ended: %v", err)
		}
		if err := c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)); !errors.Is(err, ErrServer) {
			t.Errorf("Write after the session ended: %v", err)
		}
	})
	t.Run("invalid message", func(t *testing.T) {
		c, err := NewStreamableHTTP("http://127.0.0.1:1/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Write(context.Background(), []byte(`{"id":1}`)); !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("Write of an invalid message: %v", err)
		}
	})
	t.Run("bad url", func(t *testing.T) {
		for _, u := range []string{"", "ftp://x/", "localhost:80", "http://"} {
			if _, err := NewStreamableHTTP(u, nil); !errors.Is(err, catalog.ErrUsage) {
				t.Errorf("NewStreamableHTTP(%q): %v", u, err)
			}
		}
	})
}

func TestReadHonoursContext(t *testing.T) {
	c, err := NewStreamableHTTP("http://127.0.0.1:1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read: %v", err)
	}
}

func TestLegacySSE(t *testing.T) {
	server := newSDKServer()
	var rec seen
	ts := httptest.NewServer(rec.wrap(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	defer ts.Close()

	c, err := NewSSE(readCtx(t), ts.URL, &HTTPOptions{Header: http.Header{"X-Test": {"yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !strings.HasPrefix(c.Endpoint(), ts.URL) {
		t.Errorf("endpoint %q is not under %q", c.Endpoint(), ts.URL)
	}
	session(t, c, "2024-11-05", true)
	for i, r := range rec.all() {
		if r.Header.Get("X-Test") != "yes" {
			t.Errorf("request %d (%s) lacks the configured header", i, r.Method)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// When the server ends the session (here: the whole server goes away), Read
// reports the end of the stream after any message already received.
func TestLegacySSEEnd(t *testing.T) {
	server := newSDKServer()
	ts := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	c, err := NewSSE(readCtx(t), ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write(t, c, initializeMsg(1, "2024-11-05"))
	readID(t, c, "1", nil)
	ts.CloseClientConnections()
	ts.Close()
	for {
		_, err := c.Read(readCtx(t))
		if err == nil {
			continue
		}
		if !IsClosed(err) && !errors.Is(err, ErrServer) {
			t.Errorf("Read at the end of the stream: %v", err)
		}
		break
	}
	// Writing now cannot reach the server; the request is answered anyway.
	write(t, c, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	msg, err := c.Read(readCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, msg, `"id":2`, `"error"`)
}

func TestLegacySSERefusesForeignEndpoint(t *testing.T) {
	// A server that names an endpoint on another origin: the SDK's handler
	// never does, so this one is written by hand.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("event: endpoint\ndata: http://evil.example/steal\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts.Close()
	if _, err := NewSSE(readCtx(t), ts.URL, nil); !errors.Is(err, ErrServer) {
		t.Errorf("NewSSE with a foreign endpoint: %v", err)
	}
	// No endpoint at all: the wait ends with ctx.
	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer ts2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := NewSSE(ctx, ts2.URL, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("NewSSE without an endpoint: %v", err)
	}
}

// TestStreamableStateless: a server without sessions; its GET answers 405,
// and the transport stops asking.
func TestStreamableStateless(t *testing.T) {
	server := newSDKServer()
	var rec seen
	ts := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true})))
	defer ts.Close()
	c, err := NewStreamableHTTP(ts.URL, &HTTPOptions{ReconnectDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	session(t, c, "2025-06-18", false)
	time.Sleep(200 * time.Millisecond) // room for retries, were there any
	gets := 0
	for _, r := range rec.all() {
		if r.Method == http.MethodGet {
			gets++
		}
		if r.Header.Get(hSession) != "" {
			t.Errorf("%s sent a session id to a server that gave none", r.Method)
		}
	}
	if gets != 1 {
		t.Errorf("%d GETs, want 1 (answered 405)", gets)
	}
}
