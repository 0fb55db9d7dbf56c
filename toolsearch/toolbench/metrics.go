package toolbench

import (
	"errors"
	"fmt"

	"github.com/contextd/contextd/toolsearch"
)

// ErrIncomplete is a query without its text or its expected tools, and
// ErrUnknownTool an expected tool no server of the catalogue has.
var (
	ErrIncomplete  = errors.New("query needs q and expect")
	ErrUnknownTool = errors.New("expects a tool no server has")
)

// Metrics is how well a ranking found the expected tools.
type Metrics struct {
	R1, R3, R5, MRR float64
	N               int
}

func (m Metrics) String() string {
	return fmt.Sprintf("R@1 %.3f  R@3 %.3f  R@5 %.3f  MRR %.3f", m.R1, m.R3, m.R5, m.MRR)
}

// Rank returns tool IDs, best first.
type Rank func(q string, k int) []string

// Evaluate scores rank on qs: a query counts as found at k when any of its
// expected tools is among the first k, and its reciprocal rank is that of
// the first expected tool (0 past the first 10).
func Evaluate(rank Rank, qs []Query) Metrics {
	var m Metrics
	for _, q := range qs {
		want := map[string]bool{}
		for _, e := range q.Expect {
			want[e] = true
		}
		for i, id := range rank(q.Q, 10) {
			if !want[id] {
				continue
			}
			m.MRR += 1 / float64(i+1)
			if i < 1 {
				m.R1++
			}
			if i < 3 {
				m.R3++
			}
			if i < 5 {
				m.R5++
			}
			break
		}
	}
	m.N = len(qs)
	if m.N > 0 {
		n := float64(m.N)
		m.R1, m.R3, m.R5, m.MRR = m.R1/n, m.R3/n, m.R5/n, m.MRR/n
	}
	return m
}

// RecallAt is the share of qs whose expected tool rank puts in its first k.
func RecallAt(rank Rank, qs []Query, k int) float64 {
	if len(qs) == 0 {
		return 0
	}
	found := 0
	for _, q := range qs {
		want := map[string]bool{}
		for _, e := range q.Expect {
			want[e] = true
		}
		for _, id := range rank(q.Q, k) {
			if want[id] {
				found++
				break
			}
		}
	}
	return float64(found) / float64(len(qs))
}

// Ranker is a named retrieval the benchmark compares.
type Ranker struct {
	Name string
	Rank Rank
}

// Rankers are the three retrievals compared over docs: exact name, plain
// BM25 (what Codex's search does) and contextd's Index.
func Rankers(docs []toolsearch.Doc) []Ranker {
	ids := func(hs []toolsearch.Hit) []string {
		out := make([]string, len(hs))
		for i, h := range hs {
			out[i] = h.ID
		}
		return out
	}
	bm := toolsearch.NewBM25(docs)
	ix := toolsearch.Build(docs)
	return []Ranker{
		{"exact", func(q string, k int) []string { return ids(toolsearch.Exact(docs, q, k)) }},
		{"bm25", func(q string, k int) []string { return ids(bm.Search(q, k)) }},
		{"contextd", func(q string, k int) []string { return ids(ix.Search(q, k)) }},
	}
}
