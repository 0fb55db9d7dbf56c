package qdrant

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/storetest"
	"github.com/contextd/contextd/internal/ids"
)

// envServer names the Qdrant server the integration tests use, as
// host:port of its gRPC API.
const envServer = "CONTEXTD_TEST_QDRANT"

// testServer returns the host and port of CONTEXTD_TEST_QDRANT, or skips.
func testServer(t *testing.T) (string, int) {
	t.Helper()
	addr := os.Getenv(envServer)
	if addr == "" {
		t.Skip(envServer + " is unset, so the tests against a real Qdrant server are skipped; " +
			"to run them, start one (e.g. `docker run --rm -p 6334:6334 qdrant/qdrant`) and run " +
			"`" + envServer + "=localhost:6334 go test ./daemon/store/qdrant/`")
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s=%q: want host:port: %v", envServer, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s=%q: bad port: %v", envServer, addr, err)
	}
	return host, port
}

// openTemp opens a Store on host:port with collections of its own (a
// random prefix), which are deleted when the test ends.
func openTemp(t *testing.T, host string, port int, o Options) *Store {
	t.Helper()
	o.Host, o.Port = host, port
	o.CollectionPrefix = "contextd_test_" + strings.ReplaceAll(ids.New()[:13], "-", "") + "_"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, &o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { dropCollections(t, host, port, o.CollectionPrefix) })
	return s
}

// dropCollections deletes the collections of prefix through a client of
// its own, since the test may have closed the Store.
func dropCollections(t *testing.T, host string, port int, prefix string) {
	c, err := qc.NewClient(&qc.Config{Host: host, Port: port, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"memories", "checkpoints", "branches"} {
		if err := c.DeleteCollection(ctx, prefix+name); err != nil {
			t.Errorf("cleanup: delete %s: %v", prefix+name, err)
		}
	}
}

// TestContract runs the shared contract suite against a real server.
func TestContract(t *testing.T) {
	host, port := testServer(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, host, port, Options{}) })
}

// TestRetrieval reports recall@3 of the lexical search on the shared
// retrieval set, against a real server.
func TestRetrieval(t *testing.T) {
	host, port := testServer(t)
	s := openTemp(t, host, port, Options{})
	defer s.Close()
	t.Logf("recall@3 = %.3f", storetest.Retrieval(t, s))
}

// TestHybrid checks hybrid (sparse + dense, RRF) search against a real
// server: a memory with no word in common with the query is found through
// its vector, and a vector of the wrong size falls back to lexical search.
func TestHybrid(t *testing.T) {
	host, port := testServer(t)
	testHybrid(t, openTemp(t, host, port, Options{DenseSize: 3}))
}

func testHybrid(t *testing.T, s *Store) {
	defer s.Close()
	ctx := t.Context()
	const proj = "/src/p"
	if s.DenseSize() != 3 {
		t.Fatalf("DenseSize() = %d, want 3", s.DenseSize())
	}
	lex := &store.Memory{Project: proj, Title: "Retry flaky integration tests", Content: "once, then quarantine"}
	sem := &store.Memory{Project: proj, Title: "Intermittent CI failures", Content: "usually a shared fixture"}
	for _, m := range []*store.Memory{lex, sem} {
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetMemoryVector(ctx, lex.ID, proj, []float32{0, 1, 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMemoryVector(ctx, sem.ID, proj, []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMemoryVector(ctx, sem.ID, "/src/other", []float32{1, 0, 0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetMemoryVector in another project: %v, want ErrNotFound", err)
	}
	if err := s.SetMemoryVector(ctx, sem.ID, proj, []float32{1, 0}); err == nil {
		t.Error("SetMemoryVector with the wrong size: no error")
	}

	q := store.MemoryQuery{Text: "flaky tests", Projects: []string{proj}, Vector: []float32{1, 0.1, 0}, Limit: 5}
	hits, err := s.SearchMemories(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got := idsOf(hits)
	if !slices.Contains(got, lex.ID) || !slices.Contains(got, sem.ID) {
		t.Errorf("hybrid search found %q, want both the lexical and the dense match", got)
	}

	q.Vector = []float32{1, 0} // another model's size: lexical only
	if hits, err = s.SearchMemories(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(hits); !slices.Equal(got, []string{lex.ID}) {
		t.Errorf("search with a vector of the wrong size found %q, want the lexical match only", got)
	}

	q.Text, q.Vector = "", []float32{1, 0, 0} // no words: dense only
	if hits, err = s.SearchMemories(ctx, q); err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Memory.ID != sem.ID {
		t.Errorf("dense-only search found %q, want %q first", idsOf(hits), sem.ID)
	}

	// A replace that keeps the text keeps the vector; one that changes it
	// drops the vector.
	sem.Uses++
	if err := s.PutMemory(ctx, sem); err != nil {
		t.Fatal(err)
	}
	if hits, _ = s.SearchMemories(ctx, q); len(hits) == 0 || hits[0].Memory.ID != sem.ID {
		t.Errorf("after a replace with the same text, dense search found %q", idsOf(hits))
	}
	sem.Content = "usually a fixture shared between packages"
	if err := s.PutMemory(ctx, sem); err != nil {
		t.Fatal(err)
	}
	if hits, _ = s.SearchMemories(ctx, q); slices.Contains(idsOf(hits), sem.ID) {
		t.Errorf("after the text changed, dense search still found the memory by its old vector")
	}
}

func idsOf(hits []store.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Memory.ID)
	}
	return out
}

// TestOpenUnreachable: a port nobody listens on fails fast, with
// ErrUnavailable and a message naming the address and what to check. It
// needs no server.
func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	s, err := Open(t.Context(), &Options{Host: "127.0.0.1", Port: 1, Timeout: 5 * time.Second})
	elapsed := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open on 127.0.0.1:1 succeeded")
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open: %v, want an error wrapping ErrUnavailable", err)
	}
	for _, want := range []string{"127.0.0.1:1", "gRPC port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Connection refused is immediate; the timeout is only a ceiling.
	if elapsed > 3*time.Second {
		t.Errorf("Open took %v to fail", elapsed)
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := (*Options)(nil).withDefaults()
	want := Options{Host: "localhost", Port: 6334, CollectionPrefix: "contextd_", Timeout: 10 * time.Second}
	if got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	set := Options{Host: "q", Port: 7000, APIKey: "k", UseTLS: true, CollectionPrefix: "x_", Timeout: time.Second, DenseSize: 8}
	if got := (&set).withDefaults(); got != set {
		t.Errorf("withDefaults changed set fields: %+v", got)
	}
}
