package toolbench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/toolsearch"
)

// rankers are the three retrievals the benchmark compares, over docs.
func rankers(docs []toolsearch.Doc) []struct {
	name string
	rank Rank
} {
	ids := func(hs []toolsearch.Hit) []string {
		out := make([]string, len(hs))
		for i, h := range hs {
			out[i] = h.ID
		}
		return out
	}
	bm := toolsearch.NewBM25(docs)
	ix := toolsearch.Build(docs)
	return []struct {
		name string
		rank Rank
	}{
		{"exact", func(q string, k int) []string { return ids(toolsearch.Exact(docs, q, k)) }},
		{"bm25", func(q string, k int) []string { return ids(bm.Search(q, k)) }},
		{"contextd", func(q string, k int) []string { return ids(ix.Search(q, k)) }},
	}
}

// TestBench prints exact, BM25 and contextd's retrieval side by side on
// every split (go test -run TestBench -v), and fails when contextd does not
// beat plain BM25 on the dev split.
func TestBench(t *testing.T) {
	docs := fixtureDocs(t)
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	rs := rankers(docs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools, %d queries\n%-6s %-9s %s\n", len(docs), len(qs), "split", "ranker", "metrics")
	got := map[string]Metrics{}
	for _, split := range []string{"all", "dev", "test"} {
		sq := Split(qs, split)
		for _, r := range rs {
			m := Evaluate(r.rank, sq)
			got[split+"/"+r.name] = m
			fmt.Fprintf(&b, "%-6s %-9s %v  (n=%d)\n", split, r.name, m, m.N)
		}
	}
	t.Log("\n" + b.String())
	if c, bm := got["dev/contextd"], got["dev/bm25"]; c.R3 <= bm.R3 {
		t.Errorf("dev: contextd R@3 %.3f does not beat BM25's %.3f", c.R3, bm.R3)
	}
}
