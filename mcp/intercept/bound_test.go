package intercept_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/relay"
)

// A server cannot get past the budget by sending its flood as something other
// than a tools/call result: a resources/read result's text is cut and kept
// for pages; a prompt, a completion, a template list or an error over the
// budget reaches the client as an error naming the budget; a notification
// (logging, progress) is dropped; a request of the server's (sampling) is
// refused back to it. What the client receives is checked, token by token.
func TestBudgetEveryServerMessage(t *testing.T) {
	const limit = 200
	kept := map[string][]byte{}
	bud := &intercept.CounterBudgeter{Counter: budget.Default(), Tokens: limit, Command: "contextd-proxy safe_read",
		Keep: func(_ context.Context, server, tool string, text []byte) (string, error) {
			kept[tool] = text
			return "ref-9", nil
		}}
	s := newSession(t, &intercept.Options{Budgeter: bud})
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "flood line %d of a server that ignores budgets\n", i)
	}
	flood := b.String()
	q := func(v string) string { j, _ := json.Marshal(v); return string(j) }
	fits := func(what string, raw []byte) {
		t.Helper()
		if n := budget.Default().Count(raw); n > limit+60 { // the envelope and the marker line around a cut
			t.Errorf("%s: the client gets %d tokens, budget %d", what, n, limit)
		}
	}
	withheld := func(what string, v relay.Verdict, id int) {
		t.Helper()
		var got struct {
			ID    int
			Error *struct {
				Code    int
				Message string
			}
		}
		if v.Action != relay.Modify || v.Rule != intercept.RuleBudget || json.Unmarshal(v.Raw, &got) != nil || got.Error == nil ||
			got.ID != id || got.Error.Code != intercept.ErrCodeRefused || !strings.Contains(got.Error.Message, "budget of 200 tokens") {
			t.Errorf("%s: want an error naming the budget in its place; got %+v %s", what, v, v.Raw)
		}
		fits(what, v.Raw)
	}

	// resources/read: text contents cut, the rest kept; a blob stays.
	s.send(c2s, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///big.log"}}`)
	v := s.send(s2c, `{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"file:///big.log","mimeType":"text/plain","text":`+q(flood)+`},{"uri":"file:///b.bin","blob":"AAAA"}]}}`)
	var rr struct {
		Result struct {
			Contents []struct{ URI, Text, Blob string }
		}
	}
	if v.Action != relay.Modify || v.Rule != intercept.RuleBudget || json.Unmarshal(v.Raw, &rr) != nil || len(rr.Result.Contents) != 2 {
		t.Fatalf("resources/read: %+v %.300s", v, v.Raw)
	}
	if c := rr.Result.Contents[0]; !strings.HasPrefix(c.Text, "flood line 0 ") || !strings.Contains(c.Text, "--continue ref-9") || rr.Result.Contents[1].Blob != "AAAA" {
		t.Errorf("resources/read after the cut: %.500s", v.Raw)
	}
	fits("resources/read", v.Raw)
	if string(kept["resources/read"]) != flood {
		t.Errorf("the whole text of the resource was not kept for pages (%d bytes)", len(kept["resources/read"]))
	}

	// A resource over the budget in binary: withheld.
	s.send(c2s, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///big.bin"}}`)
	withheld("a binary resource", s.send(s2c, `{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"file:///big.bin","blob":`+q(strings.Repeat("QUJD", 20000))+`}]}}`), 2)

	// prompts/get, completion/complete, resources/templates/list: withheld.
	s.send(c2s, `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}`)
	withheld("prompts/get", s.send(s2c, `{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","content":{"type":"text","text":`+q(flood)+`}}]}}`), 3)
	s.send(c2s, `{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{}}`)
	withheld("completion/complete", s.send(s2c, `{"jsonrpc":"2.0","id":4,"result":{"completion":{"values":[`+q(flood)+`]}}}`), 4)
	s.send(c2s, `{"jsonrpc":"2.0","id":5,"method":"resources/templates/list","params":{}}`)
	withheld("resources/templates/list", s.send(s2c, `{"jsonrpc":"2.0","id":5,"result":{"resourceTemplates":[{"uriTemplate":"x://{a}","name":"t","description":`+q(flood)+`}]}}`), 5)
	// An error whose message is the flood.
	s.send(c2s, call(6, "t", `{}`))
	withheld("an error", s.send(s2c, `{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":`+q(flood)+`}}`), 6)

	// A tools/call result: its text is cut and its structuredContent goes
	// with the cut; an image passes as it is; an embedded resource as long
	// as the flood has no text to cut, and withholds the result.
	s.send(c2s, call(8, "shot", `{}`))
	img := strings.Repeat("iVBO", 5000)
	v = s.send(s2c, `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":`+q(flood)+`},{"type":"image","mimeType":"image/png","data":"`+img+`"}],"structuredContent":{"log":`+q(flood)+`}}}`)
	if v.Action != relay.Modify || v.Rule != intercept.RuleBudget || !strings.Contains(string(v.Raw), img) || strings.Contains(string(v.Raw), "structuredContent") {
		t.Errorf("tools/call with text, an image and structuredContent: %+v %.300s", v, v.Raw)
	}
	s.send(c2s, call(9, "embed", `{}`))
	withheld("tools/call with a flooding embedded resource", s.send(s2c, `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"see the resource"},{"type":"resource","resource":{"uri":"x://r","text":`+q(flood)+`}}]}}`), 9)

	// Notifications: dropped.
	for _, n := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + q(flood) + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"message":` + q(flood) + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":` + q(flood) + `}}`,
	} {
		if v := s.send(s2c, n); v.Action != relay.Drop || v.Rule != intercept.RuleBudget || v.Reply != nil {
			t.Errorf("a flooding notification: %+v (%.60s)", v, n)
		}
	}

	// The server's request: refused, the error back to the server.
	v = s.send(s2c, `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":`+q(flood)+`}}],"maxTokens":10}}`)
	if v.Action != relay.Drop || v.Rule != intercept.RuleBudget || !strings.Contains(string(v.Reply), `"id":"s1"`) ||
		!strings.Contains(string(v.Reply), "budget of 200 tokens") {
		t.Errorf("a flooding sampling request: %+v %s", v, v.Reply)
	}

	// Small messages of every kind pass untouched.
	s.send(c2s, `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p"}}`)
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"started"}}`,
		`{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}`,
	} {
		if v := s.send(s2c, m); v.Action != relay.Forward {
			t.Errorf("a small message was touched: %+v (%s)", v, m)
		}
	}
}

// BenchmarkLogNotification measures what the engine does with a log
// notification of about 6 KB, over the budget's byte count (so it is
// counted) but well under its tokens: scrubbed, counted, passed on.
func BenchmarkLogNotification(b *testing.B) {
	s := newSession(b, &intercept.Options{Budgeter: &intercept.CounterBudgeter{Counter: budget.Default(), Tokens: 2000}})
	var data strings.Builder
	for i := range 100 {
		fmt.Fprintf(&data, "step %d of the build: compiled package %d of 100\n", i, i)
	}
	j, _ := json.Marshal(data.String())
	n := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + string(j) + `}}`
	if v := s.send(s2c, n); v.Action != relay.Forward {
		b.Fatalf("the notification was touched: %+v", v)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.e.Handle(ctx, s.next(s2c, n)); err != nil {
			b.Fatal(err)
		}
	}
}
