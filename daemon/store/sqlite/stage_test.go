package sqlite

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/storetest"
)

// withCommonDF runs f with the common-term threshold at df, so that small
// stores take the staged paths of lexical that normally only large ones do.
func withCommonDF(t *testing.T, df int, f func()) {
	old := commonDF
	commonDF = df
	defer func() { commonDF = old }()
	f()
}

// TestContractStaged passes the contract suite with every term of every
// query common, and logs the recall of the retrieval set in that mode.
func TestContractStaged(t *testing.T) {
	withCommonDF(t, 1, func() {
		storetest.Run(t, func(t *testing.T) store.Store { return openInternal(t) })
		t.Run("Retrieval", func(t *testing.T) {
			s := openInternal(t)
			defer s.Close()
			storetest.Retrieval(t, s)
		})
	})
}

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(&Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStagedScores: whichever stage finds a memory, its score is its bm25
// for the OR of all the query's terms, and the stages find what they should.
func TestStagedScores(t *testing.T) {
	s := openInternal(t)
	defer s.Close()
	ctx := t.Context()
	put := func(project, title, content string) *store.Memory {
		m := &store.Memory{Project: project, Title: title, Description: "d", Content: content, Confidence: 0.5}
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// "docker" and "cache" are common (in 6 memories each), "buildkit"
	// and "registry" rare.
	for i := range 6 {
		put("/p", fmt.Sprintf("docker cache note %d", i), "layers")
	}
	bk := put("/p", "buildkit mounts", "docker cache with buildkit")
	reg := put("/p", "registry mirror", "pull through a registry")
	put("/q", "buildkit elsewhere", "other project")
	put("/p", "docker only", "nothing else")

	check := func(text string, limit, n int, want ...*store.Memory) {
		t.Helper()
		hits, err := s.SearchMemories(ctx, store.MemoryQuery{Text: text, Projects: []string{"/p"}, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != n {
			t.Errorf("%q (limit %d): %d hits, want %d", text, limit, len(hits), n)
		}
		expr := matchQuery(text)
		for _, h := range hits {
			var r float64
			err := s.r.QueryRowContext(ctx, `SELECT bm25(memories_fts, `+bm25Weights+`) FROM memories_fts
				WHERE memories_fts MATCH ? AND rowid = (SELECT rowid FROM memories WHERE id = ?)`, expr, h.Memory.ID).Scan(&r)
			if err != nil {
				t.Fatalf("%q: bm25 of %q: %v", text, h.Memory.Title, err)
			}
			if math.Abs(-r-h.Score) > 1e-9 {
				t.Errorf("%q: %q scored %v, its bm25 for the OR query is %v", text, h.Memory.Title, h.Score, -r)
			}
		}
		// want are among the hits, in any order.
		for _, w := range want {
			found := false
			for _, h := range hits {
				found = found || h.Memory.ID == w.ID
			}
			if !found {
				var got []string
				for _, h := range hits {
					got = append(got, h.Memory.Title)
				}
				t.Errorf("%q (limit %d): got %q, want %q among them", text, limit, got, w.Title)
			}
		}
	}
	withCommonDF(t, 3, func() {
		// Rare terms decide the candidates; the common ones add to the
		// score of the one holding both.
		check("docker cache buildkit registry", 2, 2, bk, reg)
		// Only common terms: those holding all of them...
		check("docker cache", 3, 3)
		// ... and when they are too few, those holding any.
		check("docker layers", 10, 8)
		// Too few rare hits: filled from the common stages.
		check("buildkit docker", 3, 3, bk)
	})
}
