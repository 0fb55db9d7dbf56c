package store_test

import (
	"context"
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
	"github.com/contextd/contextd/mcp/record/recordtest"
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

func TestContract(t *testing.T) {
	recordtest.Run(t, func(t *testing.T) recordtest.Store { return openTemp(t) })
}

// What the contract leaves to each store: this one refuses what it cannot
// key (an empty id, seq 0), keeps a nil Raw as an empty message, and keeps
// everything across a reopen.
func TestSessions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := store.Open(&store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, &record.Session{}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("CreateSession without id: %v", err)
	}
	started := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	if err := s.CreateSession(ctx, &record.Session{ID: "s-1", Server: "srv", Started: started}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{{}}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("SaveEntries of seq 0: %v", err)
	}
	want := recordtest.Entries()
	if err := s.SaveEntries(ctx, "s-1", want); err != nil {
		t.Fatal(err)
	}
	empty := record.Entry{Seq: uint64(len(want) + 1), Dir: jsonrpc.ServerToClient, Time: started, Kind: jsonrpc.KindInvalid}
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{empty}); err != nil {
		t.Fatal(err)
	}
	empty.Raw = []byte{}
	want = append(want, empty)
	failure := "CTXD-E034: mcp wrap: the MCP server exited with status 1"
	if err := s.EndSession(ctx, "s-1", started.Add(time.Minute), failure); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = store.Open(&store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.LoadSession(ctx, "s-1")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Session.Started.Equal(started) || !r.Session.Ended.Equal(started.Add(time.Minute)) || r.Session.Failure != failure {
		t.Errorf("after a reopen: %+v", r.Session)
	}
	recordtest.SameEntries(t, r.Entries, want)
	if r.Entries[len(r.Entries)-1].Raw == nil {
		t.Error("a nil Raw came back nil, not empty")
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
