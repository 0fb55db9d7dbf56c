package intercept_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
	"github.com/contextd/contextd/mcp/transport"
)

// observations keeps what the relay's Observer saw.
type observations struct {
	mu   sync.Mutex
	seen []relay.Verdict
	errs []error
}

func (o *observations) Observe(_ *jsonrpc.Message, v relay.Verdict, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, v)
	o.errs = append(o.errs, err)
}

// pipeConns returns two stdio connections joined by OS pipes.
func pipeConns(t *testing.T) (a, b transport.Conn) {
	t.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a, b = transport.NewStdio(r1, w2, nil), transport.NewStdio(r2, w1, nil)
	t.Cleanup(func() {
		a.Close()
		b.Close()
		r1.Close()
		w1.Close()
		r2.Close()
		w2.Close()
	})
	return a, b
}

// TestDepthLimitAtTheRelay passes messages nested just under and just over
// jsonrpc.MaxDepth through a relay running the engine: the one under is
// forwarded (and its result scrubbed: the engine reads it whole), the one
// over is refused by the relay itself, failing closed, in both directions.
func TestDepthLimitAtTheRelay(t *testing.T) {
	eng, err := intercept.New(&intercept.Options{Server: "srv", Scrubber: newScrubber(t)})
	if err != nil {
		t.Fatal(err)
	}
	agent, clientSide := pipeConns(t)
	serverSide, server := pipeConns(t)
	obs := &observations{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, clientSide, serverSide, &relay.Options{Handler: eng, Observer: obs})
	}()
	defer func() { cancel(); <-done }()
	write := func(c transport.Conn, msg string) {
		t.Helper()
		if err := c.Write(ctx, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c transport.Conn) string {
		t.Helper()
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(m)
	}
	// nest wraps v in n arrays; the envelope's object (and params') count
	// too, as Classify counts them.
	nest := func(n int, v string) string { return strings.Repeat("[", n) + v + strings.Repeat("]", n) }
	secret := token(7)

	// Under: the envelope's object, params, arguments and MaxDepth-3 arrays.
	under := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":` + nest(jsonrpc.MaxDepth-3, "1") + `}}}`
	write(agent, under)
	if got := read(server); got != under {
		t.Fatalf("the message under the limit was not forwarded as it was: %.100s", got)
	}
	// Its result, as deep, is read whole by the engine: its secret is scrubbed.
	result := `{"jsonrpc":"2.0","id":1,"result":{"content":` + nest(jsonrpc.MaxDepth-2, `"`+secret+`"`) + `}}`
	write(server, result)
	if got := read(agent); strings.Contains(got, secret) || got == result {
		t.Fatalf("the result under the limit was not scrubbed: %.100s", got)
	}

	// Over, from the client: refused, answered, not passed on.
	over := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"a":` + nest(jsonrpc.MaxDepth-2, "1") + `}}}`
	write(agent, over)
	got := read(agent)
	if !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"code":-32600`) {
		t.Fatalf("the request over the limit: got %.200s, want an invalid-request error for id 2", got)
	}
	// Over, from the server, answering a real request: the agent gets an
	// error for it instead.
	write(agent, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	read(server)
	write(server, `{"jsonrpc":"2.0","id":3,"result":{"content":`+nest(jsonrpc.MaxDepth-1, `"`+secret+`"`)+`}}`)
	got = read(agent)
	if strings.Contains(got, secret) || !strings.Contains(got, `"id":3`) || !strings.Contains(got, `"code":-32600`) {
		t.Fatalf("the response over the limit: got %.200s, want an invalid-request error for id 3", got)
	}
	// Nothing of the refused request reached the server: the next thing it
	// reads is what the agent sends next.
	write(agent, `{"jsonrpc":"2.0","method":"notifications/x"}`)
	if got := read(server); got != `{"jsonrpc":"2.0","method":"notifications/x"}` {
		t.Fatalf("the server read %.100s", got)
	}

	// Six messages: the relay observes each after delivering it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		obs.mu.Lock()
		n := len(obs.seen)
		obs.mu.Unlock()
		if n >= 6 || time.Now().After(deadline) {
			break
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	refused := 0
	for i, v := range obs.seen {
		if v.Rule == relay.RuleInvalid {
			refused++
			if obs.errs[i] == nil || !strings.Contains(obs.errs[i].Error(), "nested too deep") {
				t.Errorf("refusal %d: %v, want nested too deep", i, obs.errs[i])
			}
		}
	}
	if refused != 2 {
		t.Errorf("%d of %d messages refused as invalid, want 2", refused, len(obs.seen))
	}
}
