package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
)

// peer is one end of a link: a stdio connection, and the pipe it writes to,
// which can be closed alone to end the other end's input.
type peer struct {
	*transport.Stdio
	out *os.File
}

// link returns two stdio connections joined by two OS pipes, the kind the
// relay meets in production (the agent's stdio, a server process's stdio):
// what one writes, the other reads.
func link(t testing.TB) (a, b *peer) {
	t.Helper()
	r1, w1 := osPipe(t)
	r2, w2 := osPipe(t)
	a = &peer{transport.NewStdio(r1, w2, nil), w2}
	b = &peer{transport.NewStdio(r2, w1, nil), w1}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func osPipe(t testing.TB) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// clientPipes returns the relay's client side and the transport a real SDK
// client uses to reach it.
func clientPipes(t testing.TB) (transport.Conn, *mcp.IOTransport) {
	t.Helper()
	r1, w1 := osPipe(t)
	r2, w2 := osPipe(t)
	side := transport.NewStdio(r1, w2, nil)
	t.Cleanup(func() { side.Close() })
	return side, &mcp.IOTransport{Reader: r2, Writer: w1}
}

// sdkSession runs a relay between a real SDK client and srv, and returns the
// client's session.
func sdkSession(t testing.TB, srv *testServer, opts *Options) *mcp.ClientSession {
	t.Helper()
	side, tr := clientPipes(t)
	startRelay(t, side, srv.serve(t), opts)
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctxT(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startRelay runs Run in the background; the channel yields its result.
// Cleanup cancels the run and waits for it.
func startRelay(t testing.TB, client, server transport.Conn, opts *Options) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	finished := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(finished)
		done <- Run(ctx, client, server, opts)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return done
}

func waitRun(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not end")
		return nil
	}
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func send(t testing.TB, c transport.Conn, msg string) {
	t.Helper()
	if err := c.Write(ctxT(t), []byte(msg)); err != nil {
		t.Fatalf("Write(%.80s): %v", msg, err)
	}
}

func recv(t testing.TB, c transport.Conn) string {
	t.Helper()
	m, err := c.Read(ctxT(t))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return string(m)
}

// nothing checks that no message arrives for a while.
func nothing(t *testing.T, c transport.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if m, err := c.Read(ctx); err == nil {
		t.Fatalf("unexpected message %s", m)
	}
}

type observed struct {
	m   jsonrpc.Message
	v   Verdict
	err error
}

// recorder is an Observer keeping everything it sees.
type recorder struct {
	mu   sync.Mutex
	seen []observed
}

func (r *recorder) Observe(m *jsonrpc.Message, v Verdict, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, observed{*m, v, err})
}

// all returns what was observed, in the order the relay read the messages
// (Seq): its two directions are observed by two goroutines, each after
// forwarding, so the order of the calls to Observe is not that order.
func (r *recorder) all() []observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]observed(nil), r.seen...)
	slices.SortFunc(out, func(a, b observed) int { return cmp.Compare(a.m.Seq, b.m.Seq) })
	return out
}

// waitFor polls the recorder until n messages were observed.
func (r *recorder) waitFor(t *testing.T, n int) []observed {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s := r.all(); len(s) >= n {
			return s
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("observed %d messages, want %d", len(r.all()), n)
	return nil
}

type handlerFunc func(ctx context.Context, m *jsonrpc.Message) (Verdict, error)

func (f handlerFunc) Handle(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
	return f(ctx, m)
}

type textIn struct {
	Text string `json:"text"`
}

// testServer is a real MCP server from the official Go SDK. Its tools cover
// what the relay must carry: plain calls, server-to-client requests
// (sampling, elicitation, roots), cancellation, and a long stream of progress
// notifications.
type testServer struct {
	*mcp.Server
	cancelled chan string   // the text of each slow call whose context ended
	started   chan string   // the text of each slow call its handler began
	echoes    chan struct{} // one per echo call, for flood to wait on
}

func newTestServer() *testServer {
	ts := &testServer{
		Server:    mcp.NewServer(&mcp.Implementation{Name: "relay-test", Version: "1.0.0"}, nil),
		cancelled: make(chan string, 16),
		started:   make(chan string, 16),
		echoes:    make(chan struct{}, 1024),
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			select {
			case ts.echoes <- struct{}{}:
			default:
			}
			return text(in.Text), nil, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "ask", Description: "Asks the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 sampling is deprecated from 2026-07-28 but still relayed
			msgs := []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}
			//lint:ignore SA1019 sampling is deprecated from 2026-07-28 but still relayed
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: msgs})
			if err != nil {
				return nil, nil, err
			}
			tc, _ := res.Content.(*mcp.TextContent)
			if tc == nil {
				return nil, nil, errors.New("no text from the model")
			}
			return text("model: " + tc.Text), nil, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "confirm", Description: "Asks the user."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         in.Text,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
			})
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("user: %s %v", res.Action, res.Content["ok"])), nil, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "roots", Description: "Lists the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 roots are deprecated from 2026-07-28 but still relayed
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, ",")), nil, nil
		})
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "slow", Description: "Waits to be cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			select {
			case ts.started <- in.Text:
			default:
			}
			select {
			case <-ctx.Done():
				ts.cancelled <- in.Text
				return nil, nil, ctx.Err()
			case <-time.After(20 * time.Second):
				return text("not cancelled"), nil, nil
			}
		})
	type floodIn struct {
		N      int `json:"n"`
		Pause  int `json:"pause"` // after this many, wait for Echoes echo calls
		Echoes int `json:"echoes"`
	}
	mcp.AddTool(ts.Server, &mcp.Tool{Name: "flood", Description: "Streams progress notifications."},
		func(ctx context.Context, req *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := range in.N {
				if i == in.Pause {
					for range in.Echoes {
						select {
						case <-ts.echoes:
						case <-ctx.Done():
							return nil, nil, ctx.Err()
						}
					}
				}
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(in.N)}); err != nil {
					return nil, nil, err
				}
			}
			return text(fmt.Sprintf("sent %d", in.N)), nil, nil
		})
	return ts
}

// serve runs the server on a fresh pipe link and returns the relay's end.
func (ts *testServer) serve(t testing.TB) transport.Conn {
	t.Helper()
	r1, w1 := osPipe(t)
	r2, w2 := osPipe(t)
	relayEnd := transport.NewStdio(r2, w1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ts.Server.Run(ctx, &mcp.IOTransport{Reader: r1, Writer: w2})
	}()
	t.Cleanup(func() {
		cancel()
		relayEnd.Close()
		r1.Close()
		w2.Close()
		<-done
	})
	return relayEnd
}
