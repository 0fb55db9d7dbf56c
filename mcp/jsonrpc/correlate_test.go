package jsonrpc

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

func TestKey(t *testing.T) {
	same := [][]string{
		{"1", "1.0", "10e-1", "1E0", "0.1e1", " 1 ", "1.000e+0"},
		{"0", "-0", "0.0", "0e5"},
		{"-12", "-1.2e1", "-120e-1"},
		{"12345678901234567890123", "1.2345678901234567890123e22"},
		{`"1"`, `"\u0031"`},
		{`"a/b"`, `"a\/b"`},
	}
	for _, group := range same {
		want := Key(ClientToServer, json.RawMessage(group[0]))
		if want == "" {
			t.Fatalf("Key(%s) is empty", group[0])
		}
		for _, id := range group[1:] {
			if got := Key(ClientToServer, json.RawMessage(id)); got != want {
				t.Errorf("Key(%s) = %q, Key(%s) = %q: want equal", id, got, group[0], want)
			}
		}
	}
	differ := [][2]string{
		{"1", `"1"`},
		{"1", "2"},
		{"1", "-1"},
		{"9007199254740993", "9007199254740992"}, // equal as float64, not as ids
		{"0.1", "1"},
		{`"a"`, `"A"`},
	}
	for _, p := range differ {
		if a, b := Key(ClientToServer, json.RawMessage(p[0])), Key(ClientToServer, json.RawMessage(p[1])); a == b {
			t.Errorf("Key(%s) == Key(%s) == %q", p[0], p[1], a)
		}
	}
	if Key(ClientToServer, json.RawMessage("1")) == Key(ServerToClient, json.RawMessage("1")) {
		t.Error("the two directions' id 1 share a key")
	}
	for _, bad := range []string{"", "null", "{}", "[1]", "true", "01", "1.", `"unterminated`, `"a"x`, "1 2"} {
		if k := Key(ClientToServer, json.RawMessage(bad)); k != "" {
			t.Errorf("Key(%q) = %q, want empty", bad, k)
		}
	}
	if k := Key(Direction(0), json.RawMessage("1")); k != "" {
		t.Errorf("Key with no direction = %q", k)
	}
}

func msg(t *testing.T, dir Direction, seq uint64, raw string) *Message {
	t.Helper()
	info, err := Classify([]byte(raw))
	if err != nil {
		t.Fatalf("Classify(%s): %v", raw, err)
	}
	return &Message{Seq: seq, Dir: dir, Info: info, Raw: []byte(raw)}
}

func TestCorrelator(t *testing.T) {
	var c Correlator // the zero value works
	c.Request(msg(t, ClientToServer, 1, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	c.Request(msg(t, ServerToClient, 2, `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`))
	c.Request(msg(t, ClientToServer, 3, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`))
	if c.Len() != 2 || c.Pending(ClientToServer) != 1 || c.Pending(ServerToClient) != 1 {
		t.Fatalf("Len %d, pending %d/%d", c.Len(), c.Pending(ClientToServer), c.Pending(ServerToClient))
	}

	// The client's answer to the server's request 1 must not be taken for the
	// server's answer to the client's request 1.
	seq, method, ok := c.Response(msg(t, ClientToServer, 4, `{"jsonrpc":"2.0","id":1,"result":{"content":{}}}`))
	if !ok || seq != 2 || method != "sampling/createMessage" {
		t.Fatalf("client response matched %d %q %v, want 2 sampling", seq, method, ok)
	}
	m, ok := c.Answer(ServerToClient, json.RawMessage("1.0"))
	if !ok || m.Seq != 1 || m.Method != "tools/call" || m.Tool != "echo" || string(m.ID) != "1" {
		t.Fatalf("server response matched %+v %v", m, ok)
	}
	if _, _, ok := c.Response(msg(t, ServerToClient, 5, `{"jsonrpc":"2.0","id":1,"result":{}}`)); ok {
		t.Error("a second response matched the same request")
	}
	if c.Len() != 0 {
		t.Errorf("Len %d after all answered", c.Len())
	}
	if _, _, ok := c.Response(msg(t, ServerToClient, 6, `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`)); ok {
		t.Error("a null id matched")
	}
}

func TestCorrelatorCancel(t *testing.T) {
	c := NewCorrelator(3)
	c.Request(msg(t, ClientToServer, 1, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow"}}`))
	c.Request(msg(t, ClientToServer, 2, `{"jsonrpc":"2.0","id":"b","method":"ping"}`))
	// A cancellation from the wrong side names nothing.
	c.Request(msg(t, ServerToClient, 3, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`))
	if c.Pending(ClientToServer) != 2 {
		t.Fatalf("pending %d after a cancellation from the other side", c.Pending(ClientToServer))
	}
	c.Request(msg(t, ClientToServer, 4, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"user"}}`))
	c.Request(msg(t, ClientToServer, 5, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`)) // twice
	if c.Pending(ClientToServer) != 1 || c.Len() != 2 {
		t.Fatalf("pending %d len %d after cancel, want 1 2", c.Pending(ClientToServer), c.Len())
	}
	// A late response to the cancelled request still correlates.
	if m, ok := c.Answer(ServerToClient, json.RawMessage(`"a"`)); !ok || m.Seq != 1 {
		t.Fatalf("late response: %+v %v", m, ok)
	}
	// Cancelled requests are evicted first.
	c.Request(msg(t, ClientToServer, 6, `{"jsonrpc":"2.0","id":"c","method":"ping"}`))
	c.Request(msg(t, ClientToServer, 7, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`))
	c.Request(msg(t, ClientToServer, 8, `{"jsonrpc":"2.0","id":"d","method":"ping"}`))
	c.Request(msg(t, ClientToServer, 9, `{"jsonrpc":"2.0","id":"e","method":"ping"}`))
	if _, ok := c.Answer(ServerToClient, json.RawMessage(`"c"`)); ok {
		t.Error("the cancelled request outlived a live one")
	}
	for _, id := range []string{`"b"`, `"d"`, `"e"`} {
		if _, ok := c.Answer(ServerToClient, json.RawMessage(id)); !ok {
			t.Errorf("request %s was evicted", id)
		}
	}
	if c.Len() != 0 || c.Pending(ClientToServer) != 0 {
		t.Errorf("len %d pending %d at the end", c.Len(), c.Pending(ClientToServer))
	}
}

func TestCorrelatorBound(t *testing.T) {
	c := NewCorrelator(100)
	for i := 1; i <= 1000; i++ {
		c.Request(msg(t, ClientToServer, uint64(i), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)))
	}
	if c.Len() != 100 || c.Pending(ClientToServer) != 100 {
		t.Fatalf("len %d pending %d, want 100", c.Len(), c.Pending(ClientToServer))
	}
	if _, ok := c.Answer(ServerToClient, json.RawMessage("900")); ok {
		t.Error("request 900 should have been evicted")
	}
	if m, ok := c.Answer(ServerToClient, json.RawMessage("901")); !ok || m.Seq != 901 {
		t.Errorf("request 901: %+v %v", m, ok)
	}
	// Reusing an outstanding id replaces the request.
	c.Request(msg(t, ClientToServer, 2000, `{"jsonrpc":"2.0","id":1000,"method":"again"}`))
	if m, ok := c.Answer(ServerToClient, json.RawMessage("1000")); !ok || m.Seq != 2000 || m.Method != "again" {
		t.Errorf("reused id: %+v %v", m, ok)
	}
	if c.Len() != 98 {
		t.Errorf("len %d, want 98", c.Len())
	}
}

func TestCorrelatorBatch(t *testing.T) {
	var c Correlator
	c.Request(msg(t, ClientToServer, 1, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","method":"n"}]`))
	if c.Pending(ClientToServer) != 2 {
		t.Fatalf("pending %d", c.Pending(ClientToServer))
	}
	seq, method, ok := c.Response(msg(t, ServerToClient, 2, `[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}]`))
	if !ok || seq != 1 || method != "b" || c.Len() != 0 {
		t.Errorf("batch response: %d %q %v, len %d", seq, method, ok, c.Len())
	}
}

func TestCorrelatorConcurrent(t *testing.T) {
	c := NewCorrelator(0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := ClientToServer
			if g%2 == 1 {
				dir = ServerToClient
			}
			for i := range 500 {
				id := json.RawMessage(fmt.Sprintf(`"%d-%d"`, g, i))
				m := &Message{Seq: uint64(i + 1), Dir: dir, Info: Info{Kind: KindRequest, ID: id, Method: "m"}}
				c.Request(m)
				r := &Message{Dir: dir.Reverse(), Info: Info{Kind: KindResponse, ID: id}}
				if seq, _, ok := c.Response(r); !ok || seq != uint64(i+1) {
					t.Errorf("goroutine %d request %d: %d %v", g, i, seq, ok)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() != 0 {
		t.Errorf("len %d", c.Len())
	}
}

func TestCorrelatorPendingIDs(t *testing.T) {
	c := NewCorrelator(0)
	if ids := c.PendingIDs(ClientToServer); len(ids) != 0 {
		t.Fatalf("empty correlator: %s", ids)
	}
	c.Request(msg(t, ClientToServer, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	c.Request(msg(t, ServerToClient, 2, `{"jsonrpc":"2.0","id":7,"method":"roots/list"}`))
	c.Request(msg(t, ClientToServer, 3, `[{"jsonrpc":"2.0","id":"b","method":"ping"},{"jsonrpc":"2.0","id":"c","method":"tools/list"}]`))
	c.Request(msg(t, ClientToServer, 4, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`))
	c.Answer(ServerToClient, json.RawMessage(`"c"`))
	str := func(ids []json.RawMessage) string { b, _ := json.Marshal(ids); return string(b) }
	got := str(c.PendingIDs(ClientToServer)) + " " + str(c.PendingIDs(ServerToClient))
	// Not "b" (cancelled) nor "c" (answered); the server's 7 is the other direction's.
	if want := "[1] [7]"; got != want {
		t.Errorf("PendingIDs = %s, want %s", got, want)
	}
}
