package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
)

// TestByteExact: what no handler touches arrives byte for byte, unknown
// fields, odd spacing, escapes and number spellings included, both ways; the
// record numbers and correlates it.
func TestByteExact(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	var rec recorder
	corr := jsonrpc.NewCorrelator(0)
	startRelay(t, clientSide, serverSide, &Options{Observer: &rec, Correlator: corr})

	req := ` {"x-first":[1,{"y":null}], "jsonrpc":"2.0","id":1.0,"method":"tools\/call","params":{"name":"echo","arguments":{"s":"\u00e9\"q"}},"x-last":true} `
	send(t, agent, req)
	if got := recv(t, server); got != req {
		t.Fatalf("server got %q\nwant       %q", got, req)
	}
	resp := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"é\"q"}]},"x-server":{"trace":"abc"}}`
	send(t, server, resp)
	if got := recv(t, agent); got != resp {
		t.Fatalf("agent got %q\nwant      %q", got, resp)
	}

	seen := rec.waitFor(t, 2)
	q, a := seen[0], seen[1]
	if q.m.Seq != 1 || q.m.Dir != jsonrpc.ClientToServer || q.m.Info.Kind != jsonrpc.KindRequest || q.m.Info.Tool != "echo" || q.m.Corr != 1 || string(q.m.Raw) != req {
		t.Errorf("request recorded as %+v", q.m)
	}
	if a.m.Seq != 2 || a.m.Dir != jsonrpc.ServerToClient || a.m.Corr != 1 || a.m.ReqMethod != "tools/call" || a.m.ReqTool != "echo" {
		t.Errorf("response recorded as %+v", a.m)
	}
	if q.v.Action != Forward || q.err != nil || a.v.Action != Forward || a.err != nil {
		t.Errorf("verdicts %+v %v, %+v %v", q.v, q.err, a.v, a.err)
	}
	if q.m.Time.IsZero() || a.m.Time.Before(q.m.Time) {
		t.Errorf("times %v, %v", q.m.Time, a.m.Time)
	}
	if corr.Len() != 0 {
		t.Errorf("%d requests still outstanding", corr.Len())
	}
}

func TestBatchesAndNotifications(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	var rec recorder
	corr := jsonrpc.NewCorrelator(0)
	startRelay(t, clientSide, serverSide, &Options{Observer: &rec, Correlator: corr})

	batch := `[{"jsonrpc":"2.0","id":"a","method":"ping"}, {"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`
	send(t, agent, batch)
	if got := recv(t, server); got != batch {
		t.Fatalf("server got %s", got)
	}
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
	send(t, server, note)
	if got := recv(t, agent); got != note {
		t.Fatalf("agent got %s", got)
	}
	answers := `[{"jsonrpc":"2.0","id":"b","result":{"tools":[]}},{"jsonrpc":"2.0","id":"a","result":{}}]`
	send(t, server, answers)
	if got := recv(t, agent); got != answers {
		t.Fatalf("agent got %s", got)
	}
	seen := rec.waitFor(t, 3)
	if b := seen[0].m; b.Info.Kind != jsonrpc.KindBatch || len(b.Info.Batch) != 3 || b.Corr != b.Seq {
		t.Errorf("batch recorded as %+v", b)
	}
	if n := seen[1].m; n.Info.Kind != jsonrpc.KindNotification || n.Corr != 0 {
		t.Errorf("notification recorded as %+v", n)
	}
	if r := seen[2].m; r.Info.Kind != jsonrpc.KindBatch || r.Corr != seen[0].m.Seq {
		t.Errorf("answers recorded as %+v", r)
	}
	if corr.Len() != 0 {
		t.Errorf("%d requests outstanding after the batch answer", corr.Len())
	}
}

// TestServerToClientRequests: a real SDK client and server through the relay;
// the server's sampling, elicitation and roots requests reach the client, and
// the client's answers reach the server, while ids of both sides collide.
func TestServerToClientRequests(t *testing.T) {
	srv := newTestServer()
	clientSide, tr := clientPipes(t)
	var rec recorder
	startRelay(t, clientSide, srv.serve(t), &Options{Observer: &rec})

	opts := &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	}
	//lint:ignore SA1019 sampling is deprecated from 2026-07-28 but still relayed
	opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		//lint:ignore SA1019 sampling is deprecated from 2026-07-28 but still relayed
		return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "four"}}, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-test-client", Version: "1"}, opts)
	//lint:ignore SA1019 roots are deprecated from 2026-07-28 but still relayed
	client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	// 2025-11-25: from 2026-07-28 on, servers ask through the client's next
	// request (SEP-2322) instead of sending requests of their own.
	cs, err := client.Connect(ctxT(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, c := range []struct{ tool, want string }{
		{"echo", "hi"},
		{"ask", "model: four"},
		{"confirm", "user: accept true"},
		{"roots", "file:///work"},
	} {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != c.want || res.IsError {
			t.Errorf("%s = %q (error %v), want %q", c.tool, got, res.IsError, c.want)
		}
	}
	// Every server-to-client request was answered by the client, and the
	// relay linked each answer to its request. The relay shows a message to
	// the Observer after forwarding it, so the last answer's record may come
	// a moment after the tool's result: wait for it.
	want := []string{"sampling/createMessage", "elicitation/create", "roots/list"}
	var methods map[string]bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		methods = map[string]bool{}
		for _, o := range rec.all() {
			if o.m.Dir == jsonrpc.ClientToServer && o.m.Info.Kind == jsonrpc.KindResponse && o.m.ReqMethod != "" {
				methods[o.m.ReqMethod] = true
			}
		}
		if (methods[want[0]] && methods[want[1]] && methods[want[2]]) || time.Now().After(deadline) {
			break
		}
	}
	for _, o := range rec.all() {
		if o.err != nil {
			t.Errorf("message %d: %v", o.m.Seq, o.err)
		}
	}
	for _, m := range want {
		if !methods[m] {
			t.Errorf("no client answer to %s was correlated (saw %v)", m, methods)
		}
	}
}

// TestCancellation: the client cancels a call; the cancellation reaches the
// server, which stops the tool; the relay no longer counts the request as
// pending, and the session goes on.
func TestCancellation(t *testing.T) {
	srv := newTestServer()
	corr := jsonrpc.NewCorrelator(0)
	cs := sdkSession(t, srv, &Options{Correlator: corr})

	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"text": "stop me"}})
		errc <- err
	}()
	// Cancel once the server's handler runs: a cancellation that reached
	// the server before the request did would be ignored by it (it knows
	// no such request yet), and the test would wait on nothing.
	select {
	case <-srv.started:
	case err := <-errc:
		t.Fatalf("the slow call ended before it was cancelled: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call never reached the server")
	}
	if corr.Pending(jsonrpc.ClientToServer) == 0 {
		t.Error("the relay does not count the slow call as pending")
	}
	deadline := time.Now().Add(10 * time.Second)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case got := <-srv.cancelled:
		if got != "stop me" {
			t.Errorf("server cancelled %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the server")
	}
	for corr.Pending(jsonrpc.ClientToServer) != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := corr.Pending(jsonrpc.ClientToServer); n != 0 {
		t.Errorf("%d requests pending after the cancellation", n)
	}
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "still here" {
		t.Fatalf("call after a cancellation: %v", err)
	}
}

// TestBothDirectionsFlow: the server streams 10,000 notifications and, half
// way, waits until the client's concurrent calls have reached it; they must
// (the client-to-server loop is not stuck behind the stream) and their
// answers must come back amid the stream.
func TestBothDirectionsFlow(t *testing.T) {
	const n, calls = 10000, 20
	srv := newTestServer()
	agent, clientSide := link(t)
	startRelay(t, clientSide, srv.serve(t), nil)
	handshake(t, agent)

	var (
		mu         sync.Mutex
		progress   int
		answeredAt []int // progress count when each echo answer arrived
		floodDone  = make(chan string, 1)
	)
	go func() {
		for {
			m, err := agent.Read(context.Background())
			if err != nil {
				return
			}
			info, _ := jsonrpc.Classify(m)
			mu.Lock()
			switch {
			case info.Method == "notifications/progress":
				progress++
			case info.Kind == jsonrpc.KindResponse && strings.HasPrefix(string(info.ID), `"echo-`):
				answeredAt = append(answeredAt, progress)
			case info.Kind == jsonrpc.KindResponse && string(info.ID) == `"flood"`:
				floodDone <- string(m)
			}
			mu.Unlock()
		}
	}()
	send(t, agent, fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood","arguments":{"n":%d,"pause":%d,"echoes":%d},"_meta":{"progressToken":"p"}}}`, n, n/2, calls))
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * time.Millisecond)
			send(t, agent, fmt.Sprintf(`{"jsonrpc":"2.0","id":"echo-%d","method":"tools/call","params":{"name":"echo","arguments":{"text":"%d"}}}`, i, i))
		}()
	}
	wg.Wait()
	select {
	case m := <-floodDone:
		if !strings.Contains(m, fmt.Sprintf("sent %d", n)) {
			t.Fatalf("flood answered %s", m)
		}
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("stuck: %d notifications, %d echo answers", progress, len(answeredAt))
	}
	mu.Lock()
	defer mu.Unlock()
	if progress != n || len(answeredAt) != calls {
		t.Fatalf("%d notifications, %d echo answers; want %d, %d", progress, len(answeredAt), n, calls)
	}
	for _, at := range answeredAt {
		if at >= n {
			t.Errorf("an echo answer came only after the whole stream (at %d)", at)
		}
	}
}

// handshake initializes a session with raw messages.
func handshake(t *testing.T, agent transport.Conn) {
	t.Helper()
	send(t, agent, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if got := recv(t, agent); !strings.Contains(got, `"relay-test"`) {
		t.Fatalf("initialize answered %s", got)
	}
	send(t, agent, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestHandlerVerdicts: drop, modify and reply do what they say, on both
// directions.
func TestHandlerVerdicts(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	var rec recorder
	h := handlerFunc(func(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
		switch {
		case m.Info.Method == "drop/me":
			return Verdict{Action: Drop, Rule: "drop-rule"}, nil
		case m.Info.Tool == "rename":
			return Verdict{Action: Modify, Raw: []byte(strings.Replace(string(m.Raw), `"rename"`, `"renamed"`, 1)), Rule: "mod-rule"}, nil
		case m.Info.Tool == "refuse":
			return Verdict{Action: Drop, Reply: jsonrpc.ErrorResponse(m.Info.ID, -32001, "refused by test"), Rule: "refuse-rule"}, nil
		case m.Dir == jsonrpc.ServerToClient && m.Info.Method == "roots/list":
			return Verdict{Action: Drop, Reply: []byte(`{"jsonrpc":"2.0","id":` + string(m.Info.ID) + `,"result":{"roots":[]}}`)}, nil
		case m.Dir == jsonrpc.ServerToClient && m.ReqTool == "renamed":
			return Verdict{Action: Modify, Raw: []byte(`{"jsonrpc":"2.0","id":` + string(m.Info.ID) + `,"result":{"redacted":true}}`)}, nil
		}
		return Verdict{Action: Forward}, nil
	})
	startRelay(t, clientSide, serverSide, &Options{Handler: h, Observer: &rec})

	send(t, agent, `{"jsonrpc":"2.0","method":"drop/me"}`)
	send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refuse"}}`)
	if got := recv(t, agent); got != `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"refused by test"}}` {
		t.Errorf("refusal answered %s", got)
	}
	send(t, agent, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rename"}}`)
	if got := recv(t, server); got != `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"renamed"}}` {
		t.Errorf("server got %s", got) // and not the dropped notification before it
	}
	send(t, server, `{"jsonrpc":"2.0","id":2,"result":{"secret":"s3cr3t"}}`)
	if got := recv(t, agent); got != `{"jsonrpc":"2.0","id":2,"result":{"redacted":true}}` {
		t.Errorf("agent got %s", got)
	}
	nothing(t, server)
	// A reply to the server's request goes back to the server, not on.
	send(t, server, `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`)
	if got := recv(t, server); got != `{"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}` {
		t.Errorf("server got %s", got)
	}
	nothing(t, agent)

	seen := rec.waitFor(t, 5)
	if seen[0].v.Action != Drop || seen[0].v.Rule != "drop-rule" || seen[1].v.Rule != "refuse-rule" ||
		seen[2].v.Action != Modify || seen[2].v.Rule != "mod-rule" || seen[3].v.Action != Modify {
		t.Errorf("verdicts recorded: %+v", seen)
	}
	if string(seen[3].m.Raw) != `{"jsonrpc":"2.0","id":2,"result":{"secret":"s3cr3t"}}` {
		t.Errorf("the record lost the original: %s", seen[3].m.Raw)
	}
}

// TestFailClosed: a failing handler, an unusable verdict, or a message that
// does not classify: nothing of it is passed on, requests are answered with
// an error, responses are replaced by one.
func TestFailClosed(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	var rec recorder
	boom := fmt.Errorf("scrubber unavailable: %w", catalog.ErrPolicy)
	h := handlerFunc(func(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
		switch {
		case m.Info.Method == "fail" || m.Info.Method == "notifications/fail":
			return Verdict{Rule: "failing-rule"}, boom
		case m.Info.Method == "badmodify":
			return Verdict{Action: Modify, Raw: []byte(`{"jsonrpc":"2.0","id":5,"method":"x","method":"y"}`)}, nil
		case m.Info.Method == "badreply":
			return Verdict{Action: Drop, Reply: []byte(`not json`)}, nil
		case m.Info.Method == "badaction":
			return Verdict{Action: Action(9)}, nil
		case m.Dir == jsonrpc.ServerToClient && m.ReqMethod == "tools/call":
			return Verdict{}, boom
		case m.Dir == jsonrpc.ClientToServer && m.ReqMethod == "sampling/createMessage":
			return Verdict{}, boom
		}
		return Verdict{Action: Forward}, nil
	})
	startRelay(t, clientSide, serverSide, &Options{Handler: h, Observer: &rec})

	expectError := func(got string, id string, code int, parts ...string) {
		t.Helper()
		var e struct {
			ID    json.RawMessage
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal([]byte(got), &e); err != nil || string(e.ID) != id || e.Error.Code != code {
			t.Fatalf("got %s, want error %d for id %s", got, code, id)
		}
		for _, p := range parts {
			if !strings.Contains(e.Error.Message, p) {
				t.Errorf("error message %q lacks %q", e.Error.Message, p)
			}
		}
	}

	send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"fail"}`)
	expectError(recv(t, agent), "1", jsonrpc.CodeInternalError, "CTXD-E051", "scrubber unavailable")
	send(t, agent, `{"jsonrpc":"2.0","method":"notifications/fail"}`)
	send(t, agent, `{"jsonrpc":"2.0","id":2,"method":"badmodify"}`)
	expectError(recv(t, agent), "2", jsonrpc.CodeInternalError, "replacement message is invalid")
	send(t, agent, `{"jsonrpc":"2.0","id":3,"method":"badreply"}`)
	expectError(recv(t, agent), "3", jsonrpc.CodeInternalError, "reply is invalid")
	send(t, agent, `{"jsonrpc":"2.0","id":4,"method":"badaction"}`)
	expectError(recv(t, agent), "4", jsonrpc.CodeInternalError, "unknown action")
	// Invalid messages: a duplicate method, a tools/call without a name.
	send(t, agent, `{"jsonrpc":"2.0","id":6,"method":"tools/list","method":"tools/call"}`)
	expectError(recv(t, agent), "6", jsonrpc.CodeInvalidRequest, "duplicate key method", "CTXD-E002")
	send(t, agent, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`)
	expectError(recv(t, agent), "7", jsonrpc.CodeInvalidRequest, "params.name")
	send(t, agent, `{"jsonrpc":"2.0", broken`)
	nothing(t, agent) // no id to answer
	nothing(t, server)

	// A blocked response: the client gets an error for its request instead.
	send(t, agent, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}`)
	if got := recv(t, server); !strings.Contains(got, `"id":8`) {
		t.Fatalf("server got %s", got)
	}
	send(t, server, `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"AKIA…"}]}}`)
	expectError(recv(t, agent), "8", jsonrpc.CodeInternalError, "blocked")
	// An invalid answer to a pending request is replaced too.
	send(t, agent, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	recv(t, server)
	send(t, server, `{"jsonrpc":"2.0","id":9,"result":{},"error":{"code":1,"message":"both"}}`)
	expectError(recv(t, agent), "9", jsonrpc.CodeInvalidRequest, "both result and error")
	// The server's requests fail closed the same way, toward the server.
	send(t, server, `{"jsonrpc":"2.0","id":"s0","method":"fail"}`)
	expectError(recv(t, server), `"s0"`, jsonrpc.CodeInternalError, "scrubber unavailable")
	// A client's answer to the server's request, blocked: the server gets an
	// error for its request.
	send(t, server, `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`)
	if got := recv(t, agent); !strings.Contains(got, `"s1"`) {
		t.Fatalf("agent got %s", got)
	}
	send(t, agent, `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}}`)
	expectError(recv(t, server), `"s1"`, jsonrpc.CodeInternalError, "blocked")
	// But an invalid message naming no pending request is answered to no one.
	send(t, server, `{"jsonrpc":"2.0","id":99,"result":{},"error":{}}`)
	nothing(t, agent)
	nothing(t, server)

	for _, o := range rec.all() {
		if o.err == nil && o.v.Action != Forward {
			t.Errorf("message %d (%s) was %v without an error", o.m.Seq, o.m.Raw, o.v.Action)
		}
		if o.err != nil && o.v.Action == Forward {
			t.Errorf("message %d (%s) failed with %v but was forwarded", o.m.Seq, o.m.Raw, o.err)
		}
	}
	if errs := countErrs(rec.all()); errs != 13 {
		t.Errorf("%d messages observed with an error, want 13", errs)
	}
}

func countErrs(seen []observed) int {
	n := 0
	for _, o := range seen {
		if o.err != nil {
			n++
		}
	}
	return n
}

// TestHeldMessageBlocksOnlyItsDirection: while the handler holds a client
// message, the server's messages keep reaching the client.
func TestHeldMessageBlocksOnlyItsDirection(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	release := make(chan struct{})
	h := handlerFunc(func(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
		if m.Info.Method == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
				return Verdict{}, ctx.Err()
			}
		}
		return Verdict{Action: Forward}, nil
	})
	startRelay(t, clientSide, serverSide, &Options{Handler: h})
	send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	for i := range 100 {
		note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`, i)
		send(t, server, note)
		if got := recv(t, agent); got != note {
			t.Fatalf("agent got %s", got)
		}
	}
	nothing(t, server)
	close(release)
	if got := recv(t, server); got != `{"jsonrpc":"2.0","id":1,"method":"hold"}` {
		t.Fatalf("server got %s", got)
	}
}

func TestTooLargeIsObserved(t *testing.T) {
	serverSide, server := link(t)
	// The relay's client side reads with a 64-byte limit.
	r, w := osPipe(t)
	_, out := osPipe(t)
	clientSide := transport.NewStdio(r, out, &transport.StdioOptions{MaxMessage: 64})
	var rec recorder
	startRelay(t, clientSide, serverSide, &Options{Observer: &rec})
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","method":"x","params":{"pad":"` + strings.Repeat("p", 100) + `"}}` + "\n" + `{"jsonrpc":"2.0","method":"ok"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, server); got != `{"jsonrpc":"2.0","method":"ok"}` {
		t.Fatalf("server got %s", got)
	}
	seen := rec.waitFor(t, 2)
	if !errors.Is(seen[0].err, jsonrpc.ErrTooLarge) || seen[0].v.Action != Drop || seen[0].m.Seq != 1 || seen[1].m.Seq != 2 {
		t.Errorf("observed %+v", seen)
	}
}

// TestEnds: how a run ends.
func TestEnds(t *testing.T) {
	t.Run("client ends, answers still delivered", func(t *testing.T) {
		agent, clientSide := link(t)
		serverSide, server := link(t)
		done := startRelay(t, clientSide, serverSide, nil)
		send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"slow"}`)
		recv(t, server)
		agent.out.Close() // the client's end of input; it still reads
		time.Sleep(50 * time.Millisecond)
		send(t, server, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
		send(t, server, `{"jsonrpc":"2.0","id":1,"result":{"late":true}}`)
		recv(t, agent)
		if got := recv(t, agent); got != `{"jsonrpc":"2.0","id":1,"result":{"late":true}}` {
			t.Fatalf("agent got %s", got)
		}
		if err := waitRun(t, done); err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
	t.Run("client ends, drain times out", func(t *testing.T) {
		agent, clientSide := link(t)
		serverSide, server := link(t)
		done := startRelay(t, clientSide, serverSide, &Options{DrainTimeout: 100 * time.Millisecond})
		send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"never"}`)
		recv(t, server)
		start := time.Now()
		agent.out.Close()
		if err := waitRun(t, done); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
			t.Errorf("drain took %v", d)
		}
	})
	t.Run("server ends", func(t *testing.T) {
		agent, clientSide := link(t)
		serverSide, server := link(t)
		done := startRelay(t, clientSide, serverSide, nil)
		send(t, server, `{"jsonrpc":"2.0","method":"bye"}`)
		server.out.Close()
		if got := recv(t, agent); got != `{"jsonrpc":"2.0","method":"bye"}` {
			t.Fatalf("agent got %s", got)
		}
		if err := waitRun(t, done); err != nil {
			t.Fatalf("Run: %v", err)
		}
		// Run closed both connections: the agent sees its end of input.
		if _, err := agent.Read(ctxT(t)); err == nil {
			t.Error("the agent's side is still open")
		}
	})
	t.Run("context ends", func(t *testing.T) {
		_, clientSide := link(t)
		serverSide, _ := link(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, clientSide, serverSide, nil) }()
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := waitRun(t, done); !errors.Is(err, catalog.ErrInterrupted) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	})
	t.Run("handler holding at the end", func(t *testing.T) {
		agent, clientSide := link(t)
		serverSide, _ := link(t)
		held := make(chan struct{})
		h := handlerFunc(func(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
			close(held)
			<-ctx.Done()
			return Verdict{}, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, clientSide, serverSide, &Options{Handler: h}) }()
		send(t, agent, `{"jsonrpc":"2.0","method":"x"}`)
		<-held
		cancel()
		if err := waitRun(t, done); !errors.Is(err, catalog.ErrInterrupted) {
			t.Fatalf("Run: %v", err)
		}
	})
}

// classifiedConn is a connection that takes the relay's classification
// with what it writes, and keeps both.
type classifiedConn struct {
	transport.Conn
	mu     sync.Mutex
	writes []classifiedWrite
}

type classifiedWrite struct {
	msg  string
	info *jsonrpc.Info
}

func (c *classifiedConn) WriteClassified(ctx context.Context, msg []byte, info *jsonrpc.Info) error {
	c.mu.Lock()
	c.writes = append(c.writes, classifiedWrite{string(msg), info})
	c.mu.Unlock()
	return c.Conn.Write(ctx, msg)
}

// TestWritesCarryTheClassification: what the relay classified goes to the
// connection with its classification, so that the connection need not scan
// it again: a forwarded message with its own, a Modify with its
// replacement's; a stand-in the relay built itself goes without one.
func TestWritesCarryTheClassification(t *testing.T) {
	agent, clientSide := link(t)
	serverSide, server := link(t)
	conn := &classifiedConn{Conn: serverSide}
	h := handlerFunc(func(ctx context.Context, m *jsonrpc.Message) (Verdict, error) {
		switch {
		case m.Info.Method == "b":
			return Verdict{Action: Modify, Raw: []byte(`{"jsonrpc":"2.0","id":2,"method":"b2"}`)}, nil
		case m.Dir == jsonrpc.ClientToServer && m.Info.Kind == jsonrpc.KindResponse:
			return Verdict{}, errors.New("refused by test")
		}
		return Verdict{Action: Forward}, nil
	})
	startRelay(t, clientSide, conn, &Options{Handler: h})

	send(t, agent, `{"jsonrpc":"2.0","id":1,"method":"a"}`)
	recv(t, server)
	send(t, agent, `{"jsonrpc":"2.0","id":2,"method":"b"}`)
	recv(t, server)
	send(t, server, `{"jsonrpc":"2.0","id":"s1","method":"ping"}`)
	recv(t, agent)
	send(t, agent, `{"jsonrpc":"2.0","id":"s1","result":{}}`)
	if got := recv(t, server); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":"s1","error":`) {
		t.Fatalf("server got %s", got)
	}

	conn.mu.Lock()
	defer conn.mu.Unlock()
	if len(conn.writes) != 3 {
		t.Fatalf("%d writes: %+v", len(conn.writes), conn.writes)
	}
	for i, method := range []string{"a", "b2"} {
		w := conn.writes[i]
		want, err := jsonrpc.Classify([]byte(w.msg))
		if err != nil || w.info == nil || w.info.Method != method || w.info.Kind != want.Kind || string(w.info.ID) != string(want.ID) {
			t.Errorf("write %d %s came with %+v", i, w.msg, w.info)
		}
	}
	if w := conn.writes[2]; w.info != nil {
		t.Errorf("the relay's own stand-in %s came with a classification %+v", w.msg, w.info)
	}
}
