package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/relay"
	"github.com/contextd/contextd/mcp/store"
)

func openTemp(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(&store.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(seq uint64, dir jsonrpc.Direction, kind jsonrpc.Kind, raw string) record.Entry {
	return record.Entry{Seq: seq, Dir: dir, Time: time.Unix(1700000000, int64(seq)*1000).UTC(), Kind: kind,
		Raw: []byte(raw), Action: relay.Forward}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := store.Open(&store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	sess := &record.Session{ID: "s-1", Server: "npx -y @modelcontextprotocol/server-everything", Started: started}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, sess); !errors.Is(err, record.ErrExists) {
		t.Errorf("second CreateSession: %v, want ErrExists", err)
	}
	if err := s.CreateSession(ctx, &record.Session{}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("CreateSession without id: %v", err)
	}

	req := entry(1, jsonrpc.ClientToServer, jsonrpc.KindRequest, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	req.ID, req.Method, req.Tool, req.Corr = json.RawMessage(`1`), "tools/call", "echo", 1
	resp := entry(2, jsonrpc.ServerToClient, jsonrpc.KindResponse, `{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]"}}`)
	resp.ID, resp.Corr, resp.Action, resp.Rule = json.RawMessage(`1`), 1, relay.Modify, "scrub"
	resp.Original = []byte(`{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]"}}`)
	refused := entry(3, jsonrpc.ClientToServer, jsonrpc.KindRequest, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"rm"}}`)
	refused.ID, refused.Action, refused.Rule = json.RawMessage(`"x"`), relay.Drop, "allowlist"
	refused.Reply = []byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"no"}}`)
	binary := entry(4, jsonrpc.ServerToClient, jsonrpc.KindInvalid, "\xff\xfe not utf-8")
	binary.Error, binary.Action = "malformed", relay.Drop
	note := entry(5, jsonrpc.ServerToClient, jsonrpc.KindNotification, `{"jsonrpc":"2.0","method":"m"}`)

	// Out of order, in two batches, one entry saved twice.
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{resp, binary}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{req, refused, binary, note}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveEntries(ctx, "nope", []record.Entry{req}); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("SaveEntries to an unknown session: %v", err)
	}
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{{}}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("SaveEntries of seq 0: %v", err)
	}
	ended := started.Add(90 * time.Second)
	failure := "CTXD-E034: mcp wrap: the MCP server exited with status 1"
	if err := s.EndSession(ctx, "s-1", ended, failure); err != nil {
		t.Fatal(err)
	}
	if err := s.EndSession(ctx, "nope", ended, ""); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("EndSession of an unknown session: %v", err)
	}
	if err := s.CreateSession(ctx, &record.Session{ID: "s-2", Server: "https://example.test/mcp", Started: ended}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Everything survives a reopen.
	s, err = store.Open(&store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.ListSessions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "s-2" || list[1].ID != "s-1" || list[1].Messages != 5 || list[0].Messages != 0 ||
		!list[1].Ended.Equal(ended) || !list[0].Ended.IsZero() || !list[1].Started.Equal(started) ||
		list[1].Failure != failure || list[0].Failure != "" {
		t.Errorf("ListSessions = %+v", list)
	}
	if one, _ := s.ListSessions(ctx, 1); len(one) != 1 || one[0].ID != "s-2" {
		t.Errorf("ListSessions(1) = %+v", one)
	}

	r, err := s.LoadSession(ctx, "s-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []record.Entry{req, resp, refused, binary, note}
	if len(r.Entries) != len(want) || r.Session.Server != sess.Server || r.Session.Messages != 5 || r.Session.Failure != failure {
		t.Fatalf("LoadSession: %+v", r)
	}
	for i, w := range want {
		g := r.Entries[i]
		if g.Seq != w.Seq || g.Dir != w.Dir || !g.Time.Equal(w.Time) || g.Kind != w.Kind || !bytes.Equal(g.ID, w.ID) ||
			g.Method != w.Method || g.Tool != w.Tool || g.Corr != w.Corr || !bytes.Equal(g.Raw, w.Raw) ||
			!bytes.Equal(g.Original, w.Original) || (g.Original == nil) != (w.Original == nil) || g.Action != w.Action ||
			g.Rule != w.Rule || !bytes.Equal(g.Reply, w.Reply) || (g.Reply == nil) != (w.Reply == nil) || g.Error != w.Error {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if _, err := s.LoadSession(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("LoadSession of an unknown id: %v", err)
	}
}

// The recorder on the store: two forward loops observing at once, a
// tiny buffer so that Observe has to wait for the disk, and nothing lost.
func TestRecorder(t *testing.T) {
	s := openTemp(t)
	rec, err := record.Start(context.Background(), record.Session{Server: "srv"},
		&record.Options{Store: s, BatchSize: 16, MaxBuffered: 32, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var seq struct {
		sync.Mutex
		n uint64
	}
	next := func() uint64 {
		seq.Lock()
		defer seq.Unlock()
		seq.n++
		return seq.n
	}
	const perDir = 500
	var wg sync.WaitGroup
	for _, dir := range []jsonrpc.Direction{jsonrpc.ClientToServer, jsonrpc.ServerToClient} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perDir {
				raw := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":%d}}`, i)
				rec.Observe(&jsonrpc.Message{Seq: next(), Dir: dir, Time: time.Now(), Raw: []byte(raw),
					Info: jsonrpc.Info{Kind: jsonrpc.KindNotification, Method: "notifications/progress"}}, relay.Verdict{}, nil)
			}
		}()
	}
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := s.LoadSession(context.Background(), rec.Session().ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 2*perDir || r.Session.Ended.IsZero() {
		t.Fatalf("%d entries stored, want %d; ended %v", len(r.Entries), 2*perDir, r.Session.Ended)
	}
	for i, e := range r.Entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
}

func TestPins(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	ps := s.Pins()
	if _, ok, err := ps.Get(ctx, "srv", "echo"); ok || err != nil {
		t.Errorf("Get on an empty store: %v %v", ok, err)
	}
	pinned := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, p := range []intercept.Pin{
		{Tool: "echo", Hash: "sha256:aa", Pinned: pinned},
		{Tool: "add", Hash: "sha256:bb", Pending: "sha256:cc", Pinned: pinned, Changed: pinned.Add(time.Hour)},
	} {
		if err := ps.Put(ctx, "srv", p); err != nil {
			t.Fatal(err)
		}
	}
	if err := ps.Put(ctx, "other", intercept.Pin{Tool: "echo", Hash: "sha256:dd"}); err != nil {
		t.Fatal(err)
	}
	p, ok, err := ps.Get(ctx, "srv", "add")
	if err != nil || !ok || p.Server != "srv" || p.Hash != "sha256:bb" || p.Pending != "sha256:cc" ||
		!p.Pinned.Equal(pinned) || !p.Changed.Equal(pinned.Add(time.Hour)) {
		t.Errorf("Get = %+v %v %v", p, ok, err)
	}
	approved, err := intercept.Approve(ctx, ps, "srv", "add")
	if err != nil || approved.Hash != "sha256:cc" || approved.Pending != "" {
		t.Fatalf("Approve = %+v %v", approved, err)
	}
	if p, _, _ := ps.Get(ctx, "srv", "add"); p.Hash != "sha256:cc" || p.Pending != "" || !p.Changed.IsZero() {
		t.Errorf("after Approve: %+v", p)
	}
	list, err := ps.List(ctx, "srv")
	if err != nil || len(list) != 2 || list[0].Tool != "add" || list[1].Tool != "echo" {
		t.Errorf("List(srv) = %+v %v", list, err)
	}
	all, err := ps.List(ctx, "")
	if err != nil || len(all) != 3 || all[0].Server != "other" {
		t.Errorf("List(all) = %+v %v", all, err)
	}
}
