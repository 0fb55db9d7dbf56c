package toolsearch

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bagOfWords is a deterministic fake embedder: each word adds one to a
// hashed dimension, so texts sharing words point the same way.
func bagOfWords(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range Words(t) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		out[i] = v
	}
	return out, nil
}

// synonyms embeds like bagOfWords after mapping a word the lexical side
// does not know ("automobile") onto one it indexes ("car").
func synonyms(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	mapped := make([]string, len(texts))
	for i, t := range texts {
		mapped[i] = strings.ReplaceAll(t, "automobile", "car")
	}
	return bagOfWords(ctx, mapped, query)
}

var garage = []Doc{
	{Server: "garage", Name: "park_car", Description: "Park a car in a free bay"},
	{Server: "garage", Name: "wash", Description: "Wash the vehicle with soap"},
	{Server: "garage", Name: "refuel", Description: "Fill the tank with fuel"},
	{Server: "garage", Name: "wash_car", Description: "Clean a car inside and out"},
}

func ids(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func TestSearchContextFusion(t *testing.T) {
	ix := Build(garage)
	ctx := context.Background()

	// No embedder: exactly the lexical ranking.
	hits, note := ix.SearchContext(ctx, "wash the car", 4, nil)
	if note != "" || !slices.Equal(ids(hits), ids(ix.Search("wash the car", 4))) {
		t.Fatalf("nil embedder: %v %q, want Search's ranking", hits, note)
	}

	// A word only the embedder knows finds the tools lexical search
	// cannot, each marked dense.
	hits, note = ix.SearchContext(ctx, "automobile", 2, synonyms)
	if note != "" || len(hits) != 2 {
		t.Fatalf("dense only: %v %q", hits, note)
	}
	for _, h := range hits {
		if !strings.HasSuffix(h.ID, "_car") || !slices.Contains(h.Why, "dense") {
			t.Errorf("dense only: %v, want the two car tools marked dense", hits)
		}
	}

	// Fused scores are reciprocal-rank fusion of the two rankings.
	lex := ids(ix.Search("wash the vehicle", -1))
	hits, _ = ix.SearchContext(ctx, "wash the vehicle", -1, bagOfWords)
	dense, err := ix.denseRank(ctx, "wash the vehicle", bagOfWords)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for r, id := range lex {
		want[id] += 1 / float64(rrfK+r+1)
	}
	for r, i := range dense {
		want[ix.docs[i].ID()] += 1 / float64(rrfK+r+1)
	}
	for i, h := range hits {
		if diff := h.Score - want[h.ID]; diff > 1e-12 || diff < -1e-12 {
			t.Errorf("%s: fused %v, want %v", h.ID, h.Score, want[h.ID])
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("not best first: %v", hits)
		}
	}

	// An exact name stays first, above anything fusion ranks.
	hits, _ = ix.SearchContext(ctx, "refuel", 3, synonyms)
	if hits[0].ID != "garage.refuel" || hits[0].Why[0] != "name:exact" {
		t.Errorf("exact tier: %v", hits)
	}
}

func TestSearchContextCache(t *testing.T) {
	var docCalls, docTexts atomic.Int32
	counting := func(ctx context.Context, texts []string, query bool) ([][]float32, error) {
		if !query {
			docCalls.Add(1)
			docTexts.Add(int32(len(texts)))
		}
		return bagOfWords(ctx, texts, query)
	}
	ix := Build(garage)
	ctx := context.Background()
	ix.SearchContext(ctx, "wash", 3, counting)
	ix.SearchContext(ctx, "park", 3, counting)
	if docCalls.Load() != 1 || docTexts.Load() != int32(len(garage)) {
		t.Fatalf("two searches: %d doc batches of %d texts, want one of %d", docCalls.Load(), docTexts.Load(), len(garage))
	}
	ix.ReplaceServer("tyres", []Doc{{Server: "tyres", Name: "inflate", Description: "Pump up a tyre"}})
	hits, _ := ix.SearchContext(ctx, "pump up the tyre", 1, counting)
	if docCalls.Load() != 2 || docTexts.Load() != int32(len(garage))+1 {
		t.Errorf("after ReplaceServer: %d batches, %d texts; want the new tool alone embedded", docCalls.Load(), docTexts.Load())
	}
	if len(hits) == 0 || hits[0].ID != "tyres.inflate" {
		t.Errorf("after ReplaceServer: %v", hits)
	}
	ix.SearchContext(ctx, "wash", 3, counting)
	if docCalls.Load() != 2 {
		t.Errorf("a third search embedded the tools again")
	}
}

func TestSearchContextFallback(t *testing.T) {
	boom := errors.New("boom")
	ctx := context.Background()
	for _, c := range []struct {
		name string
		e    Embedder
		note string
	}{
		{"error", func(context.Context, []string, bool) ([][]float32, error) { return nil, boom }, "dense: unavailable (boom)"},
		{"short", func(context.Context, []string, bool) ([][]float32, error) { return nil, nil }, "dense: unavailable (embedder answered"},
		{"slow query", func(ctx context.Context, texts []string, query bool) ([][]float32, error) {
			if query {
				time.Sleep(2 * time.Second)
			}
			return bagOfWords(ctx, texts, query)
		}, "dense: unavailable (context deadline exceeded)"},
	} {
		ix := Build(garage)
		start := time.Now()
		hits, note := ix.SearchContext(ctx, "wash the car", 3, c.e)
		if !strings.HasPrefix(note, c.note) {
			t.Errorf("%s: note %q, want %q", c.name, note, c.note)
		}
		if !slices.Equal(ids(hits), ids(ix.Search("wash the car", 3))) {
			t.Errorf("%s: %v, want the lexical ranking", c.name, hits)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: took %v, want the 300ms bound", c.name, d)
		}
	}
}
