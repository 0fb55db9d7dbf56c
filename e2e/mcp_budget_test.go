//go:build e2e

package e2e

// The MCP firewall's budget covers every message a wrapped server sends
// (issue 25, item 11), not only tools/call results. A real MCP server
// (e2e/mcpservers/flood.mjs, on the official SDK) floods through a text
// resource, a binary resource, a prompt, a completion, log notifications and
// a sampling request of its own; the test checks what the client, the SDK's,
// actually receives.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
)

func TestWrapBudgetEveryMessage(t *testing.T) {
	const lines, limit = 3000, 300
	var flood strings.Builder
	for i := range lines {
		fmt.Fprintf(&flood, "flood line %d of a server that ignores budgets\n", i)
	}
	withConfig(t, fmt.Sprintf("[mcp]\nmax_tokens = %d\n", limit))
	sess := []string{"CONTEXTD_SESSION=e2e-wrap-budget-" + devTag(6)}
	w := startWrap(t, "flood", sess, "node", filepath.Join(wrapServersDir(t), "flood.mjs"), fmt.Sprint(lines))
	raw := func(method string, params map[string]any) wrapAnswer {
		t.Helper()
		return w.do(map[string]any{"op": "raw", "method": method, "params": params})
	}
	// What the client got must be about the budget: the budget, plus the
	// JSON around a cut text and its marker line.
	small := func(what string, a wrapAnswer) {
		t.Helper()
		b, _ := json.Marshal(a.Result)
		if a.Error != nil {
			b, _ = json.Marshal(a.Error)
		}
		if n := budget.Default().Count(b); n > limit+100 {
			t.Errorf("%s: the client got %d tokens, budget %d", what, n, limit)
		}
	}
	withheld := func(what string, a wrapAnswer) {
		t.Helper()
		if a.Error == nil || a.Error.Code != -32041 || !strings.Contains(a.Error.Message, fmt.Sprintf("budget of %d tokens", limit)) {
			t.Errorf("%s: want the JSON-RPC error -32041 naming the budget; got error %+v, result %.300s", what, a.Error, a.Result)
		}
		small(what, a)
	}

	// A text resource: cut, and read whole page by page.
	a := raw("resources/read", map[string]any{"uri": "flood://log"})
	var rr struct {
		Contents []struct{ URI, Text string }
	}
	if a.Error != nil || json.Unmarshal(a.Result, &rr) != nil || len(rr.Contents) != 1 {
		t.Fatalf("resources/read flood://log: %+v %.300s", a.Error, a.Result)
	}
	text := rr.Contents[0].Text
	m := regexp.MustCompile(`contextd-proxy safe_read --continue (c[0-9a-f]+)`).FindStringSubmatch(text)
	if m == nil || !strings.HasPrefix(text, "flood line 0 ") || !strings.HasSuffix(text, fmt.Sprintf("flood line %d of a server that ignores budgets\n", lines-1)) {
		t.Fatalf("the text resource is not head, marker, tail:\n%.600s", text)
	}
	small("resources/read flood://log", a)
	var pages strings.Builder
	for _, p := range pageThrough(t, sess, "safe_read", m[1], 100) {
		if p.Error != nil {
			t.Fatalf("pages of the resource: %+v", p.Error)
		}
		pages.WriteString(p.Data)
	}
	if pages.String() != flood.String() {
		t.Errorf("the resource's pages hold %d bytes, want its %d", pages.Len(), flood.Len())
	}

	// Binary, a prompt, a completion: withheld, each with an error naming
	// the budget.
	withheld("resources/read flood://blob", raw("resources/read", map[string]any{"uri": "flood://blob"}))
	withheld("prompts/get flood", raw("prompts/get", map[string]any{"name": "flood"}))
	withheld("completion/complete", raw("completion/complete", map[string]any{
		"ref": map[string]any{"type": "ref/resource", "uri": "flood://item/{name}"}, "argument": map[string]any{"name": "name", "value": ""}}))

	// Small ones of the same kinds pass whole.
	if a := raw("resources/read", map[string]any{"uri": "flood://small"}); a.Error != nil || !strings.Contains(string(a.Result), `"text":"a small resource"`) {
		t.Errorf("a small resource: %+v %s", a.Error, a.Result)
	}
	if a := raw("prompts/get", map[string]any{"name": "small", "arguments": map[string]any{"topic": "budgets"}}); a.Error != nil || !strings.Contains(string(a.Result), "a short prompt about budgets") {
		t.Errorf("a small prompt: %+v %s", a.Error, a.Result)
	}

	// The server logs a small line and the flood, then asks the client to
	// sample the flood: the client gets the small line only, and no
	// sampling request; the server is told its request was refused.
	r, _ := w.callOK("call", "chatter", map[string]any{})
	if got := r.Text(); !strings.Contains(got, "sampling refused:") || !strings.Contains(got, fmt.Sprintf("budget of %d tokens", limit)) {
		t.Errorf("the server's sampling request over the budget: the server saw %q, want a refusal naming the budget", got)
	}
	st := w.do(map[string]any{"op": "stats"}).Stats
	if st == nil || st.Notifications["notifications/message"] != 1 || st.Requests["sampling/createMessage"] != 0 {
		t.Errorf("the client received %+v: want 1 log notification (the small one) and no sampling request", st)
	}
}
