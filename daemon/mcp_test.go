package daemon

import (
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/record"
)

func mcpService(cfg *config.Config) *service {
	return &service{opts: Options{Config: cfg}, state: &stateStore{cfg: cfg.Store}}
}

// With the embedded state store, the wraps' records and pins live in the
// state file, where contextd has always kept them: the state store and
// mcp/store work on it side by side, and a daemon started later reads what
// both wrote.
func TestMCPStoresInTheStateFile(t *testing.T) {
	ctx := t.Context()
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(t.TempDir(), "state.db")
	s := mcpService(cfg)
	ms, err := s.mcpStores(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.mcpStores(ctx); err != nil || again != ms {
		t.Errorf("a second mcpStores opened another store: %v", err)
	}
	st, err := s.stateStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const n = 50
	wg.Go(func() {
		for i := range n {
			if err := st.PutMemory(ctx, &store.Memory{Project: "/p", Title: "lesson", Confidence: 0.5}); err != nil {
				t.Errorf("memory %d: %v", i, err)
				return
			}
		}
	})
	wg.Go(func() {
		if err := ms.CreateSession(ctx, &record.Session{ID: "w-1", Server: "srv", Started: time.Now()}); err != nil {
			t.Error(err)
			return
		}
		for i := range n {
			e := record.Entry{Seq: uint64(i + 1), Dir: jsonrpc.ClientToServer, Time: time.Now(), Raw: []byte(`{}`)}
			if err := ms.SaveEntries(ctx, "w-1", []record.Entry{e}); err != nil {
				t.Errorf("entry %d: %v", i, err)
				return
			}
		}
		if err := ms.Pins().Put(ctx, "srv", intercept.Pin{Tool: "echo", Hash: "sha256:aa"}); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	s.closeMCP()
	s.state.close()

	db, err := sql.Open("sqlite", "file:"+cfg.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sessions, memories int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM mcp_sessions), (SELECT count(*) FROM memories)`).
		Scan(&sessions, &memories); err != nil || sessions != 1 || memories != n {
		t.Errorf("the state file holds %d sessions and %d memories (%v), want 1 and %d", sessions, memories, err, n)
	}

	s = mcpService(cfg)
	defer s.state.close()
	defer s.closeMCP()
	if ms, err = s.mcpStores(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := ms.LoadSession(ctx, "w-1"); err != nil || len(r.Entries) != n {
		t.Errorf("after a restart: %v, %v", r, err)
	}
	if p, ok, err := ms.Pins().Get(ctx, "srv", "echo"); !ok || err != nil || p.Hash != "sha256:aa" {
		t.Errorf("pin after a restart: %+v %v %v", p, ok, err)
	}
}

// With Qdrant as the state store, records and pins go to mcp.db beside
// where the state file would be, and the Qdrant server is not asked.
func TestMCPStoresBesideQdrant(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	cfg := config.Default()
	cfg.Store.Backend = "qdrant"
	cfg.Store.QdrantHost, cfg.Store.QdrantPort = "127.0.0.1", 1 // nothing listens
	s := mcpService(cfg)
	defer s.closeMCP()
	ms, err := s.mcpStores(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.CreateSession(t.Context(), &record.Session{ID: "q-1", Server: "srv"}); err != nil {
		t.Fatal(err)
	}
	if got, want := ms.(interface{ Path() string }).Path(), filepath.Join(dir, "contextd", "mcp.db"); got != want {
		t.Errorf("records at %s, want %s", got, want)
	}
	if !s.state.tried.IsZero() {
		t.Error("the wrap's store opened the Qdrant state store")
	}
}
