package toolsearch

import (
	"math"
	"sort"
	"strings"
)

// Exact is the name-only baseline: a tool whose name equals the query, then
// those whose name contains it, in name order.
func Exact(docs []Doc, q string, k int) []Hit {
	n := normName(q)
	var eq, sub []Hit
	for _, d := range docs {
		switch name := normName(d.Name); {
		case n == "":
		case name == n || normName(d.ID()) == n:
			eq = append(eq, Hit{ID: d.ID(), Score: 2, Why: []string{"name:exact"}})
		case strings.Contains(name, n):
			sub = append(sub, Hit{ID: d.ID(), Score: 1, Why: []string{"name:substring"}})
		}
	}
	sort.Slice(sub, func(i, j int) bool { return sub[i].ID < sub[j].ID })
	return top(append(eq, sub...), k)
}

// normName drops case and separators, so kubectl_scale, kubectl-scale and
// KubectlScale are one name.
func normName(s string) string { return strings.Join(Words(s), "") }

// BM25 is the classic baseline, what Codex's search_tool_bm25 does: Okapi
// BM25 (k1 1.2, b 0.75) over one field, the name split into words plus the
// description, lowercased, with no stemming, stopwords, fields or tiers.
type BM25 struct {
	ids   []string
	tf    []map[string]int
	lens  []float64
	avg   float64
	df    map[string]int
	total float64
}

// NewBM25 indexes docs for the baseline.
func NewBM25(docs []Doc) *BM25 {
	b := &BM25{df: map[string]int{}, total: float64(len(docs))}
	sum := 0.0
	for _, d := range docs {
		ws := Words(d.Name + " " + d.Description)
		tf := map[string]int{}
		for _, w := range ws {
			tf[w]++
		}
		for w := range tf {
			b.df[w]++
		}
		b.ids = append(b.ids, d.ID())
		b.tf = append(b.tf, tf)
		b.lens = append(b.lens, float64(len(ws)))
		sum += float64(len(ws))
	}
	if len(docs) > 0 {
		b.avg = sum / float64(len(docs))
	}
	return b
}

// Search ranks the documents for q.
func (b *BM25) Search(q string, k int) []Hit {
	const k1, bb = 1.2, 0.75
	var hits []Hit
	qw := Words(q)
	for i, tf := range b.tf {
		s := 0.0
		for _, w := range qw {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (b.total-float64(b.df[w])+0.5)/(float64(b.df[w])+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-bb+bb*b.lens[i]/b.avg))
		}
		if s > 0 {
			hits = append(hits, Hit{ID: b.ids[i], Score: s})
		}
	}
	return top(hits, k)
}

// top sorts hits best first, ties by ID so that a ranking is deterministic,
// and keeps k.
func top(hits []Hit, k int) []Hit {
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if k >= 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}
