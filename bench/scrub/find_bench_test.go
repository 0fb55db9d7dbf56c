package scrubbench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/contextd/contextd/scrub"
)

var (
	findCorpusOnce sync.Once
	findCorpus     *Corpus
	findCorpusErr  error
)

// BenchmarkFind times contextd's Find alone on the comparison's corpus, on one core and
// on all of them, with nothing else in the run: the benchmark to profile
// (-cpuprofile) when working on the scrubber's speed.
func BenchmarkFind(b *testing.B) {
	findCorpusOnce.Do(func() { findCorpus, findCorpusErr = Generate(corpusSize, 1) })
	if findCorpusErr != nil {
		b.Fatal(findCorpusErr)
	}
	text := findCorpus.Text
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			s, err := scrub.New(&scrub.Options{Workers: w})
			if err != nil {
				b.Fatal(err)
			}
			s.Find(text)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Find(text)
			}
		})
	}
}
