// Package recordtest is the contract suite every record.Store and record.Loader passes.
package recordtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/relay"
)

// Store is what a wrap keeps its records in.
type Store interface {
	record.Store
	record.Loader
}

// Run checks the contract on a fresh, empty store from open for each case.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Run("RoundTrip", func(t *testing.T) { roundTrip(t, open(t)) })
	t.Run("Unknown", func(t *testing.T) { unknown(t, open(t)) })
	t.Run("List", func(t *testing.T) { list(t, open(t)) })
}

func entry(seq uint64, dir jsonrpc.Direction, kind jsonrpc.Kind, raw string) record.Entry {
	return record.Entry{Seq: seq, Dir: dir, Time: time.Unix(1700000000, int64(seq)*1000).UTC(), Kind: kind,
		Raw: []byte(raw), Action: relay.Forward}
}

// Entries returns one entry of each shape a session holds, in Seq order
// from 1: a request, a response the engine modified, a request refused
// with a reply, a message that is not valid UTF-8 nor JSON, a notification.
func Entries() []record.Entry {
	req := entry(1, jsonrpc.ClientToServer, jsonrpc.KindRequest, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)
	req.ID, req.Method, req.Tool, req.Corr = json.RawMessage(`1`), "tools/call", "echo", 1
	resp := entry(2, jsonrpc.ServerToClient, jsonrpc.KindResponse, `{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]"}}`)
	resp.ID, resp.Method, resp.Tool, resp.Corr, resp.Action, resp.Rule = json.RawMessage(`1`), "tools/call", "echo", 1, relay.Modify, "scrub"
	resp.Original = []byte(`{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]","more":"cut by the budget"}}`)
	refused := entry(3, jsonrpc.ClientToServer, jsonrpc.KindRequest, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"rm"}}`)
	refused.ID, refused.Method, refused.Tool, refused.Corr = json.RawMessage(`"x"`), "tools/call", "rm", 3
	refused.Action, refused.Rule = relay.Drop, "allowlist"
	refused.Reply = []byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"no"}}`)
	binary := entry(4, jsonrpc.ServerToClient, jsonrpc.KindInvalid, "\xff\xfe not utf-8")
	binary.Error, binary.Action = "malformed", relay.Drop
	note := entry(5, jsonrpc.ServerToClient, jsonrpc.KindNotification, `{"jsonrpc":"2.0","method":"m"}`)
	note.Method = "m"
	return []record.Entry{req, resp, refused, binary, note}
}

// SameEntries fails t unless got holds want's entries field for field,
// telling a nil ID, Original or Reply from an empty one.
func SameEntries(t *testing.T, got, want []record.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Seq != w.Seq || g.Dir != w.Dir || !g.Time.Equal(w.Time) || g.Kind != w.Kind ||
			!bytes.Equal(g.ID, w.ID) || (g.ID == nil) != (w.ID == nil) || g.Method != w.Method || g.Tool != w.Tool ||
			g.Corr != w.Corr || !bytes.Equal(g.Raw, w.Raw) || !bytes.Equal(g.Original, w.Original) ||
			(g.Original == nil) != (w.Original == nil) || g.Action != w.Action || g.Rule != w.Rule ||
			!bytes.Equal(g.Reply, w.Reply) || (g.Reply == nil) != (w.Reply == nil) || g.Error != w.Error {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// A session comes back as saved: entries saved out of order and in several
// batches, one of them twice (a retried batch), come back once each in Seq
// order; the end time and failure are kept.
func roundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	started := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	sess := &record.Session{ID: "s-1", Server: "everything: npx -y @modelcontextprotocol/server-everything", Started: started}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, sess); !errors.Is(err, record.ErrExists) {
		t.Errorf("second CreateSession: %v, want ErrExists", err)
	}
	e := Entries()
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{e[1], e[3]}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveEntries(ctx, "s-1", nil); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
	if err := s.SaveEntries(ctx, "s-1", []record.Entry{e[0], e[2], e[3], e[4]}); err != nil {
		t.Fatal(err)
	}
	r, err := s.LoadSession(ctx, "s-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.ID != "s-1" || r.Session.Server != sess.Server || !r.Session.Started.Equal(started) ||
		!r.Session.Ended.IsZero() || r.Session.Failure != "" || r.Session.Messages != len(e) {
		t.Errorf("a running session: %+v", r.Session)
	}
	SameEntries(t, r.Entries, e)

	ended := started.Add(90 * time.Second)
	failure := "CTXD-E034: mcp wrap: the MCP server exited with status 1"
	if err := s.EndSession(ctx, "s-1", ended, failure); err != nil {
		t.Fatal(err)
	}
	if r, err = s.LoadSession(ctx, "s-1"); err != nil {
		t.Fatal(err)
	}
	if !r.Session.Ended.Equal(ended) || r.Session.Failure != failure || r.Session.Messages != len(e) {
		t.Errorf("an ended session: %+v", r.Session)
	}
	SameEntries(t, r.Entries, e)
}

// An unknown session id wraps record.ErrNotFound, whatever is asked.
func unknown(t *testing.T, s Store) {
	ctx := context.Background()
	if err := s.CreateSession(ctx, &record.Session{ID: "known", Server: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveEntries(ctx, "nope", Entries()[:1]); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("SaveEntries: %v", err)
	}
	if err := s.EndSession(ctx, "nope", time.Now(), ""); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("EndSession: %v", err)
	}
	if _, err := s.LoadSession(ctx, "nope"); !errors.Is(err, record.ErrNotFound) {
		t.Errorf("LoadSession: %v", err)
	}
	if r, err := s.LoadSession(ctx, "known"); err != nil || len(r.Entries) != 0 || r.Session.Messages != 0 {
		t.Errorf("the session next to them: %+v, %v", r, err)
	}
}

// ListSessions: newest first, with message counts, at most limit, 20 for a
// limit <= 0.
func list(t *testing.T, s Store) {
	ctx := context.Background()
	if l, err := s.ListSessions(ctx, 0); err != nil || len(l) != 0 {
		t.Errorf("ListSessions of an empty store: %+v, %v", l, err)
	}
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	const n = 25
	for i := range n {
		id := fmt.Sprintf("s-%02d", i)
		if err := s.CreateSession(ctx, &record.Session{ID: id, Server: "srv", Started: start.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveEntries(ctx, id, Entries()[:i%3]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndSession(ctx, "s-24", start.Add(time.Hour), "why"); err != nil {
		t.Fatal(err)
	}
	l, err := s.ListSessions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 20 {
		t.Fatalf("ListSessions(0) returned %d sessions, want 20", len(l))
	}
	for k, sess := range l {
		i := n - 1 - k
		if sess.ID != fmt.Sprintf("s-%02d", i) || sess.Messages != i%3 || !sess.Started.Equal(start.Add(time.Duration(i)*time.Minute)) {
			t.Errorf("session %d of the list: %+v", k, sess)
		}
	}
	if !l[0].Ended.Equal(start.Add(time.Hour)) || l[0].Failure != "why" || !l[1].Ended.IsZero() {
		t.Errorf("ended and running sessions in the list: %+v, %+v", l[0], l[1])
	}
	if l, err := s.ListSessions(ctx, 3); err != nil || len(l) != 3 || l[2].ID != "s-22" {
		t.Errorf("ListSessions(3) = %+v, %v", l, err)
	}
	if l, err := s.ListSessions(ctx, 100); err != nil || len(l) != n {
		t.Errorf("ListSessions(100) returned %d sessions, %v; want %d", len(l), err, n)
	}
}
