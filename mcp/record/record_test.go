package record_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/relay"
	"github.com/contextd/contextd/mcp/store"
	"github.com/contextd/contextd/scrub"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(&store.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func token(seed uint64) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(seed, 13))
	b := make([]byte, 36)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return "ghp_" + string(b)
}

// wrap plays a relay: each message is classified, decided by a real
// intercept engine and observed by the recorder, as the forward loops do.
type wrap struct {
	t    *testing.T
	e    *intercept.Engine
	rec  *record.Recorder
	seq  uint64
	now  time.Time
	corr jsonrpc.Correlator
}

func newWrap(t *testing.T, st record.Store, cfg *intercept.Config) *wrap {
	t.Helper()
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := intercept.New(&intercept.Options{Server: "everything", Config: cfg,
		Scrubber: &intercept.VaultScrubber{Scrubber: sc, Vault: scrub.NewVault(), Source: "mcp:everything"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Start(context.Background(), record.Session{Server: "npx -y @modelcontextprotocol/server-everything"},
		&record.Options{Store: st, Redact: e.Redact, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	return &wrap{t: t, e: e, rec: rec, now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
}

func (w *wrap) send(dir jsonrpc.Direction, raw string) relay.Verdict {
	w.t.Helper()
	w.seq++
	w.now = w.now.Add(1500 * time.Microsecond)
	info, _ := jsonrpc.Classify([]byte(raw))
	m := &jsonrpc.Message{Seq: w.seq, Dir: dir, Time: w.now, Info: info, Raw: []byte(raw)}
	w.corr.Match(m) // the relay's correlation, which the engine and the recorder read
	v, err := w.e.Handle(context.Background(), m)
	if err == nil && v.Action != relay.Drop {
		w.corr.Request(m)
	}
	w.rec.Observe(m, v, err)
	return v
}

const c2s, s2c = jsonrpc.ClientToServer, jsonrpc.ServerToClient

// recordSession runs a small session through the engine and the recorder
// into st and returns its id and the token planted in it.
func recordSession(t *testing.T, st record.Store) (string, string) {
	cfg := intercept.DefaultConfig()
	cfg.Allow = map[string][]string{"everything": {"echo", "add"}}
	w := newWrap(t, st, cfg)
	tok := token(1)
	w.send(c2s, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	w.send(s2c, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"everything","version":"1"}}}`)
	w.send(c2s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(c2s, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	w.send(s2c, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echoes","inputSchema":{"type":"object"}},{"name":"printEnv","description":"Env","inputSchema":{"type":"object"}}]}}`)
	w.send(c2s, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"`+tok+`"}}}`)
	w.send(s2c, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`)
	w.send(s2c, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Echo: `+tok+`"}]}}`)
	w.send(c2s, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"printEnv","arguments":{}}}`)
	w.send(c2s, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`)
	w.send(s2c, `{"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"3"}]}}`)
	w.send(c2s, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if err := w.rec.Close(); err != nil {
		t.Fatal(err)
	}
	return w.rec.Session().ID, tok
}

func TestRecordedSession(t *testing.T) {
	st := openStore(t)
	id, tok := recordSession(t, st)
	r, err := st.LoadSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 12 || r.Session.Ended.IsZero() {
		t.Fatalf("%d entries, ended %v", len(r.Entries), r.Session.Ended)
	}
	for i, e := range r.Entries {
		if e.Seq != uint64(i+1) {
			t.Errorf("entry %d has seq %d", i, e.Seq)
		}
		// Nothing stored holds the secret: not what was passed on, not the
		// originals.
		for _, b := range [][]byte{e.Raw, e.Original, e.Reply} {
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("entry %d stores the secret: %s", e.Seq, b)
			}
		}
	}
	byseq := func(s uint64) record.Entry { return r.Entries[s-1] }
	// Correlation: each response points to its request, and carries its
	// method and tool.
	for resp, req := range map[uint64]uint64{2: 1, 5: 4, 8: 6, 11: 10} {
		if e := byseq(resp); e.Corr != req {
			t.Errorf("entry %d: corr %d, want %d", resp, e.Corr, req)
		}
	}
	if e := byseq(8); e.Method != "tools/call" || e.Tool != "echo" || e.Action != relay.Modify || e.Rule != "scrub" ||
		e.Original == nil {
		t.Errorf("scrubbed response: %+v", e)
	}
	if e := byseq(5); e.Action != relay.Modify || !strings.Contains(e.Rule, "allowlist") || bytes.Contains(e.Raw, []byte("printEnv")) ||
		!bytes.Contains(e.Original, []byte("printEnv")) {
		t.Errorf("filtered list: %+v", e)
	}
	if e := byseq(9); e.Action != relay.Drop || e.Rule != "allowlist" || e.Reply == nil || e.Tool != "printEnv" {
		t.Errorf("refused call: %+v", e)
	}
	if e := byseq(7); e.Kind != jsonrpc.KindNotification || e.Corr != 0 {
		t.Errorf("notification: %+v", e)
	}
}

func TestRecorderLosesNothingAtClose(t *testing.T) {
	var ms record.MemoryStore
	rec, err := record.Start(context.Background(), record.Session{ID: "m", Server: "x"},
		&record.Options{Store: &ms, BatchSize: 1000, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 777 {
		rec.Observe(&jsonrpc.Message{Seq: uint64(i + 1), Dir: s2c, Raw: []byte(`{}`)}, relay.Verdict{}, nil)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ := ms.LoadSession(context.Background(), "m")
	if len(r.Entries) != 777 || r.Session.Ended.IsZero() {
		t.Errorf("%d entries after Close, want 777 (ended %v)", len(r.Entries), r.Session.Ended)
	}
	// Observed after Close: reported, not silently gone.
	rec.Observe(&jsonrpc.Message{Seq: 778, Dir: s2c, Raw: []byte(`{}`)}, relay.Verdict{}, nil)
	if err := rec.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A store that stops working (here: the database closed under the
// recorder) makes Close report how many messages were not saved, and does
// not stop the relay's Observe calls.
func TestRecorderStoreFailure(t *testing.T) {
	st, err := store.Open(&store.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Start(context.Background(), record.Session{Server: "x"},
		&record.Options{Store: st, BatchSize: 4, MaxBuffered: 8, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	done := make(chan struct{})
	go func() {
		for i := range 100 {
			rec.Observe(&jsonrpc.Message{Seq: uint64(i + 1), Dir: c2s, Raw: []byte(`{}`)}, relay.Verdict{}, nil)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Observe blocked on a failing store")
	}
	err = rec.Close()
	if err == nil || !strings.Contains(err.Error(), "not saved") {
		t.Errorf("Close after store failure: %v", err)
	}
}

func TestRecorderNeedsAStore(t *testing.T) {
	if _, err := record.Start(context.Background(), record.Session{}, nil); !errors.Is(err, catalog.ErrInternal) {
		t.Errorf("Start without a store: %v", err)
	}
}

// sample is a record with every kind of entry, written by hand.
func sample() *record.Record {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 500, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	return &record.Record{
		Session: record.Session{ID: "sess-1", Server: "npx server-everything", Started: t0, Ended: at(1000)},
		Entries: []record.Entry{
			{Seq: 1, Dir: c2s, Time: at(0), Kind: jsonrpc.KindRequest, ID: json.RawMessage(`1`), Method: "tools/call", Tool: "echo",
				Corr: 1, Raw: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"<hi> & ` + "```" + `"}}}`)},
			{Seq: 2, Dir: s2c, Time: at(3), Kind: jsonrpc.KindNotification, Method: "notifications/progress",
				Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)},
			{Seq: 3, Dir: s2c, Time: at(7), Kind: jsonrpc.KindResponse, ID: json.RawMessage(`1`), Method: "tools/call", Tool: "echo", Corr: 1,
				Raw:      []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: [REDACTED:github-pat:1]"}]}}`),
				Original: []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: [REDACTED:github-pat:1]"}]}}`),
				Action:   relay.Modify, Rule: "scrub"},
			{Seq: 4, Dir: c2s, Time: at(10), Kind: jsonrpc.KindRequest, ID: json.RawMessage(`"r"`), Method: "tools/call", Tool: "rm", Corr: 4,
				Raw:    []byte(`{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"rm"}}`),
				Action: relay.Drop, Rule: "allowlist",
				Reply: []byte(`{"jsonrpc":"2.0","id":"r","error":{"code":-32001,"message":"refused"}}`)},
			{Seq: 5, Dir: s2c, Time: at(12), Kind: jsonrpc.KindRequest, ID: json.RawMessage(`"s1"`), Method: "sampling/createMessage", Corr: 5,
				Raw: []byte(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)},
			{Seq: 6, Dir: c2s, Time: at(20), Kind: jsonrpc.KindError, ID: json.RawMessage(`"s1"`), Method: "sampling/createMessage", Corr: 5,
				Raw: []byte(`{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}`)},
			{Seq: 7, Dir: c2s, Time: at(30), Kind: jsonrpc.KindRequest, ID: json.RawMessage(`2`), Method: "ping", Corr: 7,
				Raw: []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)},
			{Seq: 8, Dir: s2c, Time: at(31), Kind: jsonrpc.KindResponse, ID: json.RawMessage(`99`),
				Raw: []byte(`{"jsonrpc":"2.0","id":99,"result":{}}`)},
			{Seq: 9, Dir: s2c, Time: at(32), Kind: jsonrpc.KindInvalid, Action: relay.Drop, Error: "malformed JSON",
				Raw: []byte("\xff\xfenot utf-8")},
		},
	}
}

func equalRecords(t *testing.T, got, want *record.Record) {
	t.Helper()
	gs, ws := got.Session, want.Session
	if gs.ID != ws.ID || gs.Server != ws.Server || !gs.Started.Equal(ws.Started) || !gs.Ended.Equal(ws.Ended) {
		t.Errorf("session %+v, want %+v", gs, ws)
	}
	if len(got.Entries) != len(want.Entries) {
		t.Fatalf("%d entries, want %d", len(got.Entries), len(want.Entries))
	}
	for i := range want.Entries {
		g, w := got.Entries[i], want.Entries[i]
		if g.Seq != w.Seq || g.Dir != w.Dir || !g.Time.Equal(w.Time) || g.Kind != w.Kind || !bytes.Equal(g.ID, w.ID) ||
			g.Method != w.Method || g.Tool != w.Tool || g.Corr != w.Corr || !bytes.Equal(g.Raw, w.Raw) ||
			!bytes.Equal(g.Original, w.Original) || g.Action != w.Action || g.Rule != w.Rule ||
			!bytes.Equal(g.Reply, w.Reply) || g.Error != w.Error {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	r := sample()
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, *record.Record) error
		read  func(*bytes.Buffer) (*record.Record, error)
	}{
		{"json", func(b *bytes.Buffer, r *record.Record) error { return record.WriteJSON(b, r) },
			func(b *bytes.Buffer) (*record.Record, error) { return record.ReadJSON(b) }},
		{"jsonl", func(b *bytes.Buffer, r *record.Record) error { return record.WriteJSONL(b, r) },
			func(b *bytes.Buffer) (*record.Record, error) { return record.ReadJSONL(b) }},
		{"json via Load", func(b *bytes.Buffer, r *record.Record) error { return record.WriteJSON(b, r) },
			func(b *bytes.Buffer) (*record.Record, error) { return record.Load(b) }},
		{"jsonl via Load", func(b *bytes.Buffer, r *record.Record) error { return record.WriteJSONL(b, r) },
			func(b *bytes.Buffer) (*record.Record, error) { return record.Load(b) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, r); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tc.name, "jsonl") {
				if n := strings.Count(b.String(), "\n"); n != len(r.Entries)+1 {
					t.Errorf("%d lines, want one per entry and the session's", n)
				}
			}
			got, err := tc.read(&b)
			if err != nil {
				t.Fatal(err)
			}
			equalRecords(t, got, r)
		})
	}
}

func TestReadErrors(t *testing.T) {
	var good bytes.Buffer
	record.WriteJSONL(&good, sample())
	lines := strings.SplitAfter(good.String(), "\n")
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no session line"},
		{"entry first", lines[1], "before the session"},
		{"two sessions", lines[0] + lines[0], "a second session"},
		{"out of order", lines[0] + lines[2] + lines[1], "does not follow"},
		{"bad dir", lines[0] + strings.Replace(lines[1], `"dir":"client->server"`, `"dir":"up"`, 1), `direction "up"`},
		{"no raw", lines[0] + `{"type":"entry","seq":1,"dir":"client->server","time":"2025-01-01T00:00:00Z","kind":"request","action":"forward"}` + "\n", "raw is missing"},
		{"unknown type", lines[0] + `{"type":"x"}` + "\n", `type "x"`},
		{"wrong format", `{"type":"session","format":"other","version":1}` + "\n", "format"},
		{"not json", lines[0] + "{{\n", "line 2"},
	} {
		_, err := record.ReadJSONL(strings.NewReader(tc.in))
		if !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadInput saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := record.ReadJSON(strings.NewReader(`{"format":"contextd-mcp-session","version":2}`)); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("ReadJSON of version 2: %v", err)
	}
}

// FuzzLoad loads untrusted bytes in either format: no panic, and every
// error is classified.
func FuzzLoad(f *testing.F) {
	var b bytes.Buffer
	record.WriteJSON(&b, sample())
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":"contextd-mcp-session","version":1,"session":{},"entries":[{"seq":1}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := record.Load(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("error not classified: %v", err)
			}
			return
		}
		for i := 1; i < len(r.Entries); i++ {
			if r.Entries[i].Seq <= r.Entries[i-1].Seq {
				t.Fatalf("loaded entries out of order")
			}
		}
	})
}

// FuzzReadJSONL loads untrusted JSON Lines: no panic, and whatever loads
// writes back and loads again the same.
func FuzzReadJSONL(f *testing.F) {
	var b bytes.Buffer
	record.WriteJSONL(&b, sample())
	f.Add(b.Bytes())
	f.Add([]byte(`{"type":"session","format":"contextd-mcp-session","version":1,"id":"x","server":"s","started":"2025-01-01T00:00:00Z"}` + "\n" +
		`{"type":"entry","seq":1,"dir":"server->client","time":"2025-01-01T00:00:00Z","kind":"response","action":"modify","raw_base64":"/w=="}`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := record.ReadJSONL(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("error not classified: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := record.WriteJSONL(&out, r); err != nil {
			t.Fatal(err)
		}
		again, err := record.ReadJSONL(&out)
		if err != nil {
			t.Fatalf("written record does not load: %v\n%s", err, out.Bytes())
		}
		if len(again.Entries) != len(r.Entries) {
			t.Fatalf("%d entries, then %d", len(r.Entries), len(again.Entries))
		}
		for i := range r.Entries {
			if !bytes.Equal(again.Entries[i].Raw, r.Entries[i].Raw) || again.Entries[i].Seq != r.Entries[i].Seq {
				t.Fatalf("entry %d changed in a round trip", i)
			}
		}
	})
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := record.WriteMarkdown(&b, sample()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	// Request, then its response right under it, before the notification
	// that came between them on the wire? No: in order of first message,
	// so the notification (seq 2) follows the whole first exchange.
	order := []string{"## #1 → tools/call `echo`", "**← response** #3", "## #2 ← notifications/progress",
		"## #4 → tools/call `rm`", "**Answered by contextd**", "## #5 ← sampling/createMessage", "**→ error** #6",
		"## #7 → ping", "_No response recorded._", "## #8 ← response without a recorded request", "**Blocked**: malformed JSON"}
	pos := 0
	for _, s := range order {
		i := strings.Index(md[pos:], s)
		if i < 0 {
			t.Fatalf("transcript lacks %q after offset %d:\n%s", s, pos, md)
		}
		pos += i + len(s)
	}
	// The message holding ``` is fenced with four backticks.
	if !strings.Contains(md, "````json\n") {
		t.Errorf("no longer fence around a message with backticks:\n%s", md)
	}
	if !strings.Contains(md, "Modified by rule `scrub`") || !strings.Contains(md, "As it came:") {
		t.Errorf("modification not described:\n%s", md)
	}
}

func TestClientMessages(t *testing.T) {
	got := record.ClientMessages(sample())
	want := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"<hi> & ` + "```" + `"}}}`,
		`{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d client messages, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("message %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestDiff(t *testing.T) {
	old := sample()
	if d := record.Diff(old, sample()); d != nil {
		t.Errorf("a record differs from itself: %v", d)
	}

	// A replay numbers its requests differently and answers one of them
	// otherwise.
	n := sample()
	for i := range n.Entries {
		e := &n.Entries[i]
		e.Raw = bytes.ReplaceAll(e.Raw, []byte(`"id":1`), []byte(`"id":101`))
		e.ID = bytes.ReplaceAll(e.ID, []byte(`1`), []byte(`101`))
	}
	n.Entries[2].Raw = []byte(`{"id":101,"jsonrpc":"2.0","result":{"content":[{"text":"Echo: something else","type":"text"}],"isError":false}}`)
	n.Entries[6].Raw = []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	d := record.Diff(old, n)
	if len(d) != 2 {
		t.Fatalf("Diff = %v, want 2 differences", d)
	}
	if d[0].Path != "result.content[0].text" || d[0].What != "values differ" || d[0].Request != 0 || d[0].Tool != "echo" ||
		!strings.Contains(d[0].Old, "REDACTED") || !strings.Contains(d[0].New, "something else") {
		t.Errorf("first difference: %+v", d[0])
	}
	if d[1].Path != "result.isError" || d[1].What != "only in the new response" {
		t.Errorf("second difference: %+v", d[1])
	}

	// A request without an answer in the new run, and one more request.
	n = sample()
	n.Entries = append(n.Entries[:2], n.Entries[3:]...) // drop the echo response
	n.Entries = append(n.Entries, record.Entry{Seq: 10, Dir: c2s, Kind: jsonrpc.KindRequest, ID: json.RawMessage(`3`),
		Method: "tools/list", Corr: 10, Raw: []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)})
	d = record.Diff(old, n)
	if len(d) != 2 || d[0].What != "no response in the new run" || d[1].What != "request only in the new run" || d[1].Method != "tools/list" {
		t.Errorf("Diff = %v", d)
	}
	for _, x := range d {
		if x.String() == "" {
			t.Error("empty description")
		}
	}

	// Numbers compare by value.
	a, b := sample(), sample()
	a.Entries[2].Raw = []byte(`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`)
	b.Entries[2].Raw = []byte(`{"jsonrpc":"2.0","id":1,"result":{"n":1.0}}`)
	if d := record.Diff(a, b); d != nil {
		t.Errorf("1 and 1.0 differ: %v", d)
	}
	_ = fmt.Sprint(d)
}

// A session that ended early keeps why, in the store and in its exports; the
// first cause given is the one kept.
func TestRecorderFailure(t *testing.T) {
	var ms record.MemoryStore
	rec, err := record.Start(context.Background(), record.Session{ID: "f", Server: "x"}, &record.Options{Store: &ms})
	if err != nil {
		t.Fatal(err)
	}
	const why = "CTXD-E033: mcp wrap: the MCP server could not be started: /opt/x is not visible in the sandbox"
	rec.SetFailure(why)
	rec.SetFailure("CTXD-E034: a consequence")
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ms.LoadSession(context.Background(), "f")
	if err != nil || r.Session.Failure != why || r.Session.Ended.IsZero() {
		t.Fatalf("stored session %+v, %v; want failure %q", r, err, why)
	}
	var js, md bytes.Buffer
	if err := record.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	back, err := record.ReadJSON(&js)
	if err != nil || back.Session.Failure != why {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}
	if err := record.WriteMarkdown(&md, r); err != nil || !strings.Contains(md.String(), "\n- Failed: "+why+"\n") {
		t.Errorf("Markdown:\n%s", md.String())
	}
	// A normal end has none.
	ok, _ := record.Start(context.Background(), record.Session{ID: "ok", Server: "x"}, &record.Options{Store: &ms})
	ok.Close()
	if r, _ := ms.LoadSession(context.Background(), "ok"); r.Session.Failure != "" {
		t.Errorf("normal end: failure %q", r.Session.Failure)
	}
}
