package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/record"
	"github.com/contextd/contextd/mcp/record/recordtest"
	"github.com/contextd/contextd/mcp/store"
)

// oldDatabase builds a state file as contextd made it before this package:
// the state store's schema steps up to step (testdata/state-step*.sql), its
// user_version, and with records, the MCP rows of testdata/records.sql.
func oldDatabase(t *testing.T, step int, records bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db := rawDB(t, path)
	if _, err := db.Exec("PRAGMA journal_mode = WAL"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= step; i++ {
		exec(t, db, fmt.Sprintf("testdata/state-step%d.sql", i))
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", step)); err != nil {
		t.Fatal(err)
	}
	if records {
		exec(t, db, "testdata/records.sql")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(b)); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// userVersion is the file's PRAGMA user_version: the state store's, which
// this package must leave alone.
func userVersion(t *testing.T, path string) int {
	t.Helper()
	var v int
	if err := rawDB(t, path).QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The sessions' and pins' times in testdata/records.sql.
var (
	oldStarted = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	oldPinned  = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
)

// A state file made before this package, at each schema it shipped with MCP
// tables (schema 2 lacks the failure column; schema 3 is every state file
// and every Qdrant user's mcp.db today), keeps its records and pins
// readable and writable after the upgrade, and the state store's version
// is left as it was.
func TestOldDatabaseKeepsItsRecords(t *testing.T) {
	for _, step := range []int{2, 3} {
		t.Run(fmt.Sprintf("schema%d", step), func(t *testing.T) {
			ctx := context.Background()
			path := oldDatabase(t, step, true)
			failure := ""
			if step == 3 {
				// What the old EndSession wrote for a session that failed.
				failure = "CTXD-E034: mcp wrap: the MCP server exited with status 1"
				if _, err := rawDB(t, path).Exec(`UPDATE mcp_sessions SET failure = ? WHERE id = 's-1'`, failure); err != nil {
					t.Fatal(err)
				}
			}

			s, err := store.Open(&store.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			list, err := s.ListSessions(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].ID != "s-2" || list[1].ID != "s-1" || list[1].Messages != 5 || list[0].Messages != 0 ||
				!list[1].Started.Equal(oldStarted) || !list[1].Ended.Equal(oldStarted.Add(90*time.Second)) ||
				!list[0].Ended.IsZero() || list[1].Failure != failure || list[0].Failure != "" ||
				list[1].Server != "everything: npx -y @modelcontextprotocol/server-everything" {
				t.Errorf("ListSessions = %+v", list)
			}
			r, err := s.LoadSession(ctx, "s-1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Session.Messages != 5 || r.Session.Failure != failure {
				t.Errorf("LoadSession: %+v", r.Session)
			}
			recordtest.SameEntries(t, r.Entries, recordtest.Entries())
			pins, err := s.Pins().List(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			want := []intercept.Pin{
				{Server: "everything", Tool: "add", Hash: "sha256:bb", Pending: "sha256:cc", Pinned: oldPinned, Changed: oldPinned.Add(time.Hour)},
				{Server: "everything", Tool: "echo", Hash: "sha256:aa", Pinned: oldPinned},
			}
			if len(pins) != len(want) {
				t.Fatalf("pins = %+v", pins)
			}
			for i, w := range want {
				g := pins[i]
				if g.Server != w.Server || g.Tool != w.Tool || g.Hash != w.Hash || g.Pending != w.Pending ||
					!g.Pinned.Equal(w.Pinned) || !g.Changed.Equal(w.Changed) {
					t.Errorf("pin %d = %+v, want %+v", i, g, w)
				}
			}

			// The adopted tables take new writes: the running session ends
			// with a failure (the column schema 2 lacked), a new one starts.
			if err := s.EndSession(ctx, "s-2", oldStarted.Add(time.Hour), "gone"); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateSession(ctx, &record.Session{ID: "s-3", Server: "new", Started: oldStarted.Add(2 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveEntries(ctx, "s-3", recordtest.Entries()[:1]); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := userVersion(t, path); v != step {
				t.Errorf("user_version = %d after the MCP store opened the file, want %d (the state store's)", v, step)
			}

			// A second open runs no step again and reads the same.
			s, err = store.Open(&store.Options{Path: path})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s.Close()
			list, err = s.ListSessions(ctx, 0)
			if err != nil || len(list) != 3 || list[0].ID != "s-3" || list[0].Messages != 1 || list[1].Failure != "gone" {
				t.Errorf("after reopen: ListSessions = %+v, %v", list, err)
			}
			if r, err := s.LoadSession(ctx, "s-1"); err != nil {
				t.Error(err)
			} else {
				recordtest.SameEntries(t, r.Entries, recordtest.Entries())
			}
		})
	}
}

// A state file from before the MCP tables (schema 1), and an empty file,
// get the tables; the state store's version is not touched.
func TestTablesCreated(t *testing.T) {
	for _, step := range []int{0, 1} {
		t.Run(fmt.Sprintf("schema%d", step), func(t *testing.T) {
			path := oldDatabase(t, step, false)
			s, err := store.Open(&store.Options{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if err := s.CreateSession(ctx, &record.Session{ID: "a", Server: "x"}); err != nil {
				t.Fatal(err)
			}
			if err := s.EndSession(ctx, "a", time.Now(), "why"); err != nil {
				t.Fatal(err)
			}
			if err := s.Pins().Put(ctx, "x", intercept.Pin{Tool: "t", Hash: "sha256:00"}); err != nil {
				t.Fatal(err)
			}
			if v := userVersion(t, path); v != step {
				t.Errorf("user_version = %d, want %d", v, step)
			}
		})
	}
}

// MCP tables from a newer contextd are refused, not misread.
func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := store.Open(&store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := rawDB(t, path).Exec("UPDATE mcp_schema SET version = 99"); err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(&store.Options{Path: path}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of MCP tables at schema 99: %v, want a refusal", err)
		if s != nil {
			s.Close()
		}
	}
}
