package toolbench

import (
	"testing"
	"time"

	"github.com/contextd/contextd/toolsearch"
)

func TestReplicate(t *testing.T) {
	docs := fixtureDocs(t)
	big := Replicate(docs, 1000)
	if len(big) != 1000 {
		t.Fatalf("%d tools, want 1000", len(big))
	}
	seen := map[string]bool{}
	for _, d := range big {
		if seen[d.ID()] {
			t.Fatalf("%s twice", d.ID())
		}
		seen[d.ID()] = true
	}
	if big[len(docs)].Server != docs[0].Server+"2" {
		t.Errorf("second copy's server %q", big[len(docs)].Server)
	}
}

// TestSearchLatency1000 holds the hub's budget for a search: a median
// under 5 ms over 200 tasks at a thousand tools. Under -race the
// instrumentation, not the search, would be measured.
func TestSearchLatency1000(t *testing.T) {
	if raceDetector {
		t.Skip("timings under the race detector measure its instrumentation")
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	docs := Replicate(fixtureDocs(t), 1000)
	start := time.Now()
	ix := toolsearch.Build(docs)
	built := time.Since(start)
	start = time.Now()
	var github []toolsearch.Doc
	for _, d := range docs {
		if d.Server == "github" {
			github = append(github, d)
		}
	}
	ix.ReplaceServer("github", github[1:])
	replaced := time.Since(start)
	med, p90 := Latency(func(q string) { ix.Search(q, 5) }, qs, 200)
	t.Logf("1000 tools: Build %v, ReplaceServer %v, Search median %v, p90 %v", built, replaced, med, p90)
	if med >= 5*time.Millisecond {
		t.Errorf("median Search %v at 1000 tools, want under 5ms", med)
	}
}

func BenchmarkSearch1000(b *testing.B) {
	docs := fixtureDocs(b)
	qs, err := Queries()
	if err != nil {
		b.Fatal(err)
	}
	ix := toolsearch.Build(Replicate(docs, 1000))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.Search(qs[i%len(qs)].Q, 5)
	}
}

func BenchmarkBuild1000(b *testing.B) {
	big := Replicate(fixtureDocs(b), 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		toolsearch.Build(big)
	}
}
