package intercept_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

type result struct {
	v   relay.Verdict
	err error
}

// events collects an engine's events and lets a test wait for one.
type events struct {
	mu  sync.Mutex
	got []intercept.Event
	ch  chan struct{}
}

func newEvents() *events { return &events{ch: make(chan struct{}, 100)} }

func (e *events) on(ev intercept.Event) {
	e.mu.Lock()
	e.got = append(e.got, ev)
	e.mu.Unlock()
	e.ch <- struct{}{}
}

// wait returns the n-th event (from 0), waiting for it.
func (e *events) wait(t *testing.T, n int) intercept.Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		e.mu.Lock()
		if len(e.got) > n {
			ev := e.got[n]
			e.mu.Unlock()
			return ev
		}
		e.mu.Unlock()
		select {
		case <-e.ch:
		case <-deadline:
			t.Fatalf("event %d did not come", n)
		}
	}
}

func handleAsync(s *session, ctx context.Context, m *jsonrpc.Message) chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := s.e.Handle(ctx, m)
		ch <- result{v, err}
	}()
	return ch
}

func TestHoldDoesNotBlockTheOtherDirection(t *testing.T) {
	ev := newEvents()
	s := newSession(t, &intercept.Options{OnEvent: ev.on})
	if err := s.e.SetIntercept(true, &intercept.Match{Direction: "client->server", Method: "tools/call"}); err != nil {
		t.Fatal(err)
	}
	held := s.next(c2s, call(1, "echo", `{"message":"hold me"}`))
	done := handleAsync(s, context.Background(), held)
	if e := ev.wait(t, 0); e.Type != intercept.EventHeld || e.Held.Seq != held.Seq || e.Held.Tool != "echo" {
		t.Fatalf("first event: %+v", e)
	}

	// While the call waits, the server's messages keep flowing, and so do
	// client messages the hold does not match.
	start := time.Now()
	for i := range 200 {
		v := s.send(s2c, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":`+itoa(i)+`}}`)
		if v.Action != relay.Forward {
			t.Fatalf("notification %d: %+v", i, v)
		}
	}
	if v := s.send(c2s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); v.Action != relay.Forward {
		t.Errorf("unmatched client message: %+v", v)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the other direction took %v while a message was held", d)
	}
	select {
	case r := <-done:
		t.Fatalf("held message released by itself: %+v", r)
	default:
	}
	if h := s.e.Held(); len(h) != 1 || h[0].Seq != held.Seq || string(h[0].Original) != string(held.Raw) {
		t.Fatalf("Held() = %+v", h)
	}

	if err := s.e.Forward(held.Seq); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.v.Action != relay.Forward {
		t.Errorf("forwarded: %+v", r)
	}
	if e := ev.wait(t, 1); e.Type != intercept.EventReleased || e.Action != relay.Forward || e.By != "user" {
		t.Errorf("release event: %+v", e)
	}
	if err := s.e.Forward(held.Seq); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("forwarding it again: %v", err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestHoldModifyAndDrop(t *testing.T) {
	c := intercept.DefaultConfig()
	c.Allow = map[string][]string{"srv": {"echo"}}
	s := newSession(t, &intercept.Options{Config: c})
	if err := s.e.SetIntercept(true, nil); err != nil {
		t.Fatal(err)
	}
	waitHeld := func(seq uint64) {
		t.Helper()
		for range 500 {
			for _, h := range s.e.Held() {
				if h.Seq == seq {
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("seq %d never held", seq)
	}

	// Modify: the user's edit is what goes on.
	m := s.next(c2s, call(1, "echo", `{"message":"original"}`))
	done := handleAsync(s, context.Background(), m)
	waitHeld(m.Seq)
	if err := s.e.Modify(m.Seq, []byte(`{"jsonrpc":"2.0","id":1,"method":`)); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("invalid edit accepted: %v", err)
	}
	// An edit the relay would refuse (not UTF-8) is refused here, while the
	// user can still fix it, not after it is released.
	if err := s.e.Modify(m.Seq, []byte(call(1, "echo", "{\"message\":\"\xff\"}"))); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("edit in invalid UTF-8 accepted: %v", err)
	}
	edited := call(1, "echo", `{"message":"edited"}`)
	if err := s.e.Modify(m.Seq, []byte(edited)); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.v.Action != relay.Modify || string(r.v.Raw) != edited || !strings.Contains(r.v.Rule, intercept.RuleUser) {
		t.Errorf("modified: %+v %s", r, r.v.Raw)
	}

	// An edit goes through the rules again: a secret typed in is scrubbed,
	// a call to a tool off the allowlist is refused.
	tok := token(3)
	m = s.next(c2s, call(2, "echo", `{"message":"x"}`))
	done = handleAsync(s, context.Background(), m)
	waitHeld(m.Seq)
	s.e.Modify(m.Seq, []byte(call(2, "echo", `{"message":"`+tok+`"}`)))
	if r := <-done; r.v.Action != relay.Modify || strings.Contains(string(r.v.Raw), tok) {
		t.Errorf("edit with a secret: %+v", r)
	}
	m = s.next(c2s, call(3, "echo", `{}`))
	done = handleAsync(s, context.Background(), m)
	waitHeld(m.Seq)
	s.e.Modify(m.Seq, []byte(call(3, "rm", `{}`)))
	if r := <-done; r.v.Action != relay.Drop || r.v.Reply == nil {
		t.Errorf("edit to a refused tool: %+v", r)
	}

	// Drop: a dropped request is answered so its sender does not hang.
	m = s.next(c2s, call(4, "echo", `{}`))
	done = handleAsync(s, context.Background(), m)
	waitHeld(m.Seq)
	if err := s.e.Drop(m.Seq); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.v.Action != relay.Drop || !strings.Contains(string(r.v.Reply), `"id":4`) {
		t.Errorf("dropped: %+v %s", r, r.v.Reply)
	}

	// Refused by the rules already: nothing to hold.
	if v := s.send(c2s, call(5, "rm", `{}`)); v.Action != relay.Drop {
		t.Errorf("refused message held or passed: %+v", v)
	}
}

func TestHoldReleases(t *testing.T) {
	ev := newEvents()
	s := newSession(t, &intercept.Options{OnEvent: ev.on})
	s.e.SetIntercept(true, nil)

	// Switching interception off releases what is held.
	m1 := s.next(c2s, call(1, "echo", `{}`))
	d1 := handleAsync(s, context.Background(), m1)
	ev.wait(t, 0)
	s.e.SetIntercept(false, nil)
	if r := <-d1; r.err != nil || r.v.Action != relay.Forward {
		t.Errorf("released by switching off: %+v", r)
	}
	if e := ev.wait(t, 1); e.By != "intercept off" {
		t.Errorf("release event: %+v", e)
	}

	// The wrap's context ending releases it.
	s.e.SetIntercept(true, nil)
	ctx, cancel := context.WithCancel(context.Background())
	m2 := s.next(s2c, textResult(1, "result"))
	d2 := handleAsync(s, ctx, m2)
	ev.wait(t, 2)
	cancel()
	if r := <-d2; r.err != nil || r.v.Action != relay.Forward {
		t.Errorf("released by cancel: %+v", r)
	}

	// ReleaseAll at shutdown forwards everything held, in both directions,
	// and nothing is held after it.
	m3 := s.next(c2s, call(2, "echo", `{}`))
	m4 := s.next(s2c, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
	d3 := handleAsync(s, context.Background(), m3)
	d4 := handleAsync(s, context.Background(), m4)
	ev.wait(t, 5)
	if n := len(s.e.Held()); n != 2 {
		t.Fatalf("%d held, want 2", n)
	}
	s.e.ReleaseAll()
	for _, d := range []chan result{d3, d4} {
		select {
		case r := <-d:
			if r.err != nil || r.v.Action != relay.Forward {
				t.Errorf("released at shutdown: %+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("ReleaseAll left a message held")
		}
	}
	if v := s.send(c2s, call(3, "echo", `{}`)); v.Action != relay.Forward {
		t.Errorf("after ReleaseAll: %+v", v)
	}
	if err := s.e.SetIntercept(true, nil); !errors.Is(err, catalog.ErrShuttingDown) {
		t.Errorf("intercept on after shutdown: %v", err)
	}
	if s.e.Intercepting() {
		t.Error("still intercepting after shutdown")
	}
}

func TestSetInterceptChecksTheMatch(t *testing.T) {
	s := newSession(t, &intercept.Options{})
	if err := s.e.SetIntercept(true, &intercept.Match{Direction: "sideways"}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("bad direction: %v", err)
	}
	if err := s.e.SetIntercept(true, &intercept.Match{When: []intercept.Condition{{Path: "x", Matches: "y"}}}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("value conditions: %v", err)
	}
}
