package toolbench

import (
	"fmt"
	"strings"
	"testing"
)

// TestRetrievalBeatsBM25 prints exact, BM25 and contextd's retrieval side
// by side on every split (go test -run TestRetrievalBeatsBM25 -v), and
// holds contextd to the bar on all queries: the expected tool in
// the first three for at least 85% of tasks, and 25 points more often than
// plain BM25.
func TestRetrievalBeatsBM25(t *testing.T) {
	docs := fixtureDocs(t)
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	rs := Rankers(docs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d tools, %d queries\n%-6s %-9s %s\n", len(docs), len(qs), "split", "ranker", "metrics")
	got := map[string]Metrics{}
	for _, split := range []string{"all", "dev", "test"} {
		sq := Split(qs, split)
		for _, r := range rs {
			m := Evaluate(r.Rank, sq)
			got[split+"/"+r.Name] = m
			fmt.Fprintf(&b, "%-6s %-9s %v  (n=%d)\n", split, r.Name, m, m.N)
		}
	}
	t.Log("\n" + b.String())
	c, bm := got["all/contextd"], got["all/bm25"]
	if c.R3 < 0.85 {
		t.Errorf("contextd R@3 %.3f on all queries, want at least 0.85", c.R3)
	}
	if c.R3-bm.R3 < 0.25 {
		t.Errorf("contextd R@3 %.3f is %.3f above BM25's %.3f, want at least 0.25", c.R3, c.R3-bm.R3, bm.R3)
	}
}
