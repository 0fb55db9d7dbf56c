package toolbench

import (
	"fmt"
	"slices"
	"time"

	"github.com/contextd/contextd/toolsearch"
)

// Replicate makes a catalogue of n tools from docs by repeating them under
// renamed servers (github, github2, github3, …): the size a hub with many
// servers reaches, with the vocabulary of real ones.
func Replicate(docs []toolsearch.Doc, n int) []toolsearch.Doc {
	out := make([]toolsearch.Doc, 0, n)
	for copyN := 1; len(out) < n && len(docs) > 0; copyN++ {
		for _, d := range docs {
			if len(out) == n {
				break
			}
			if copyN > 1 {
				d.Server = fmt.Sprintf("%s%d", d.Server, copyN)
			}
			out = append(out, d)
		}
	}
	return out
}

// Latency runs search once per query, n queries in all (cycling through
// qs), and returns the median and 90th percentile of their durations.
func Latency(search func(q string), qs []Query, n int) (median, p90 time.Duration) {
	if len(qs) == 0 || n <= 0 {
		return 0, 0
	}
	ds := make([]time.Duration, n)
	for i := range ds {
		q := qs[i%len(qs)].Q
		start := time.Now()
		search(q)
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return ds[n/2], ds[n*9/10]
}
