package budget

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// goSource returns about size bytes of Go's own source: real code, offline.
func goSource(b testing.TB, size int) []byte {
	b.Helper()
	root, err := goroot()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "src", "net", "http", "*.go"))
	var buf bytes.Buffer
	for buf.Len() < size && len(files) > 0 {
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(src)
			if buf.Len() >= size {
				break
			}
		}
	}
	if buf.Len() < size {
		b.Skip("no Go source under GOROOT")
	}
	return buf.Bytes()[:size]
}

// goroot asks the go command once per test process.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// BenchmarkCount counts 1 MB of Go source and 1 MB of numbered log lines
// (safe_read's output) with Count and, side by side, with the library alone,
// reporting bytes and allocations per byte; the ratio of the two MB/s is what
// the splitter gains.
func BenchmarkCount(b *testing.B) {
	var logs strings.Builder
	for i := 1; logs.Len() < 1<<20; i++ {
		fmt.Fprintf(&logs, "%6d\t%08d GET /api/v1/items/%d 200 in %d ms\n", i, i, i%977, i%89)
	}
	codec, err := Default().codec()
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		text []byte
	}{{"go", goSource(b, 1<<20)}, {"log", []byte(logs.String())}} {
		b.Run(in.name+"/contextd", func(b *testing.B) {
			c := Default()
			c.Count(in.text) // the piece cache warm, as in a running daemon
			b.SetBytes(int64(len(in.text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(in.text)
			}
		})
		b.Run(in.name+"/library", func(b *testing.B) {
			b.SetBytes(int64(len(in.text)))
			b.ReportAllocs()
			for b.Loop() {
				codec.Count(string(in.text))
			}
		})
	}
}

// BenchmarkHead shows Head's cost does not grow with the text.
func BenchmarkHead(b *testing.B) {
	c := Default()
	text := goSource(b, 10<<20)
	c.Count(text[:100])
	for _, size := range []int{100 << 10, 1 << 20, 10 << 20} {
		for _, budget := range []int{500, 2000} {
			b.Run(fmt.Sprintf("%dkB/budget=%d", size>>10, budget), func(b *testing.B) {
				for b.Loop() {
					c.Head(text[:size], budget)
				}
			})
		}
	}
}

func BenchmarkTail(b *testing.B) {
	c := Default()
	text := goSource(b, 10<<20)
	c.Count(text[:100])
	for b.Loop() {
		c.Tail(text, 2000)
	}
}

func BenchmarkPlan(b *testing.B) {
	c := Default()
	text := goSource(b, 10<<20)
	oneLine := bytes.ReplaceAll(text, []byte{'\n'}, []byte{' '})
	c.Count(text[:100])
	for name, t := range map[string][]byte{"10MB": text, "10MB one line": oneLine} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c.Plan(t, 2000, mark)
			}
		})
	}
}

// BenchmarkLoad measures loading the vocabulary, which happens once per
// process, so each round runs a fresh process (TestLoadChild).
func BenchmarkLoad(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$")
		cmd.Env = append(os.Environ(), "BUDGET_LOAD_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		line, _, _ := strings.Cut(string(out), "\n")
		ns, err := strconv.ParseInt(strings.TrimPrefix(line, "load-ns "), 10, 64)
		if err != nil {
			b.Fatalf("child said %q", out)
		}
		total += time.Duration(ns)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/load")
}

func TestLoadChild(t *testing.T) {
	if os.Getenv("BUDGET_LOAD_CHILD") == "" {
		t.Skip("run by BenchmarkLoad")
	}
	start := time.Now()
	if err := New(Encoding).Load(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("load-ns %d\n", time.Since(start).Nanoseconds())
}
