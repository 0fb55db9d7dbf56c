package toolbench

import (
	"fmt"
	"strings"
	"testing"
)

// TestRetrievalBeatsBM25 prints exact, BM25 and contextd's retrieval side
// by side for each query set and split (go test -run TestRetrievalBeatsBM25
// -v), and holds contextd to a bar on all queries of each: the expected
// tool in the first three for at least R3 of tasks, and Gain points more
// often than plain BM25. The first set's bar is the issue's; the second's
// holds the index to a set written after it was tuned, over seven servers
// the first never saw; the third was held out of all tuning (R@3 0.663,
// BM25 0.518) until its misses were read, which added general shapes and
// words (an issue's #number, an address without a scheme, an e-mail
// address, coordinates, :emoji:, mkdir and ls, dialogs, discounts, places,
// "what … do I have"; 0.771): its bar, rounded down, is below the first's.
// The fourth, written blind to the index and to the other sets and never
// read for a miss, is the honest measure of how the index carries to
// tasks phrased by other hands (R@3 0.747, BM25 0.535; bar rounded down).
func TestRetrievalBeatsBM25(t *testing.T) {
	bars := []struct{ R3, Gain float64 }{{0.85, 0.25}, {0.80, 0.20}, {0.75, 0.20}, {0.70, 0.20}}
	for i, set := range Sets() {
		t.Run(set.Name, func(t *testing.T) {
			got := benchTable(t, set)
			c, bm := got["all/contextd"], got["all/bm25"]
			if c.R3 < bars[i].R3 {
				t.Errorf("contextd R@3 %.3f on all queries, want at least %.2f", c.R3, bars[i].R3)
			}
			if c.R3-bm.R3 < bars[i].Gain {
				t.Errorf("contextd R@3 %.3f is %.3f above BM25's %.3f, want at least %.2f", c.R3, c.R3-bm.R3, bm.R3, bars[i].Gain)
			}
		})
	}
}

// benchTable logs the set's table and returns its metrics by split/ranker.
func benchTable(t *testing.T, set Set) map[string]Metrics {
	docs := setDocs(t, set)
	qs := setQueries(t, set)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d tools, %d queries\n%-6s %-9s %s\n", set.Name, len(docs), len(qs), "split", "ranker", "metrics")
	got := map[string]Metrics{}
	for _, split := range set.Splits() {
		sq := Split(qs, split)
		for _, r := range Rankers(docs) {
			m := Evaluate(r.Rank, sq)
			got[split+"/"+r.Name] = m
			fmt.Fprintf(&b, "%-6s %-9s %v  (n=%d)\n", split, r.Name, m, m.N)
		}
	}
	t.Log("\n" + b.String())
	return got
}
