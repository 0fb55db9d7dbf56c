package salience

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// failuresOf is what ScanFailures promises to keep of a full scan.
func failuresOf(r *Result) []any {
	return []any{r.Blocks, r.Total, r.DroppedFrom, r.DroppedTo, r.Lines, r.Bytes}
}

func checkSparse(t *testing.T, s *Set, text []byte) {
	t.Helper()
	sc := s.NewScanner()
	sc.Write(text)
	want := failuresOf(sc.Close())
	got := failuresOf(s.ScanFailures(text))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sparse scan differs from the full one on %d bytes:\n%+v\nwant\n%+v", len(text), got, want)
	}
}

// The sparse scan finds the failure blocks a full scan finds, in logs of
// every kind, with failures near each other, at the ends, and none.
func TestSparseMatchesFull(t *testing.T) {
	user, err := Compile([]UserRule{{Name: "u", Pattern: `boom`, Before: 3}, {Name: "v", Pattern: `ok \S+ (x|y)`, After: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !user.sparse.ok {
		t.Fatal("patterns that start with a literal are found by it")
	}
	bare, err := Compile([]UserRule{{Name: "w", Pattern: `\bboom`, Before: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if bare.sparse.ok {
		t.Fatal("a rule that is only a pattern has no literal: the sparse scan must read every line")
	}
	corpora := [][]byte{goLog(30), tenMB()[:2<<20], []byte(strings.Join(diffLines, "\n")), nil, []byte("x"), []byte("\n\n")}
	for _, gap := range []int{0, 1, 19, 20, 21, 40, 41, 42, 60, 61, 62, 100} {
		var b strings.Builder
		for i := range 300 {
			fmt.Fprintf(&b, "=== RUN   TestN%d\n--- PASS: TestN%d (0.00s)\n", i, i)
			if i == 100 || i == 100+gap {
				fmt.Fprintf(&b, "    n_test.go:%d: got 1, want 2\n--- FAIL: TestM%d (0.00s)\n", i, i)
			}
		}
		corpora = append(corpora, []byte(b.String()), []byte("--- FAIL: TestFirst (0.00s)\n"+b.String()+"panic: last"))
	}
	r := rand.New(rand.NewSource(3))
	for range 100 {
		corpora = append(corpora, randomLog(r, 1+r.Intn(400)))
	}
	for i := range 100 {
		// Sparse failures in long passing runs: the windows are apart.
		var b strings.Builder
		for j := range 2000 {
			b.WriteString(diffLines[j%5])
			b.WriteByte('\n')
			if r.Intn(150) == 0 {
				b.WriteString(diffLines[r.Intn(len(diffLines))])
				b.WriteByte('\n')
			}
		}
		if i%2 == 0 {
			b.WriteString("no newline at the end")
		}
		corpora = append(corpora, []byte(b.String()))
	}
	for i := range 40 {
		// Failures with their widest context: plain lines before (no test
		// boundary stops it), stack frames after that extend the block to
		// its bounds, and a next failure at every distance from the last.
		var b strings.Builder
		for j := range 3000 {
			fmt.Fprintf(&b, "step %d of the build went fine\n", j)
			if j%(200+i*7) == 100 {
				b.WriteString([]string{"--- FAIL: TestLong (0.00s)", "Error: boom", "panic: no", "    at nothing"}[j%4])
				b.WriteByte('\n')
				for k := range r.Intn(60) {
					fmt.Fprintf(&b, "    at frame%d (x.js:%d:1)\n", k, k)
				}
			}
		}
		corpora = append(corpora, []byte(b.String()))
	}
	for i := range 6 {
		// Texts long enough to be searched in two halves, with failures
		// spread over them and near where the halves meet.
		var b strings.Builder
		for b.Len() < 1<<20+i*100_000 {
			b.WriteString(diffLines[b.Len()%7])
			b.WriteByte('\n')
			if r.Intn(600) == 0 || (b.Len() > 1<<19+i*50_000-3000 && b.Len() < 1<<19+i*50_000+3000 && r.Intn(10) == 0) {
				b.WriteString(diffLines[r.Intn(len(diffLines))])
				b.WriteByte('\n')
			}
		}
		corpora = append(corpora, []byte(b.String()))
	}
	// Long lines, over segments and halves: minified code, a coloured or
	// redrawn line that never ends, a line of hits that are all turned away.
	for _, l := range []string{`throw new TypeError: "x";`, "ab\x1b[31mcd", "progress 10%\r", "x ... FAIL y", "    a.go:1:1: x "} {
		corpora = append(corpora, []byte(strings.Repeat(l, (parallelFrom+4096)/len(l))), []byte("ok\n"+strings.Repeat(l, 100<<10/len(l))+"\n--- FAIL: T (0.00s)\n"))
	}
	for _, text := range corpora {
		checkSparse(t, Default(), text)
		if len(text) > 256<<10 {
			continue // the user rules' cases are in the small texts
		}
		checkSparse(t, user, text)
		checkSparse(t, bare, text)
	}
}

func FuzzSparseMatchesFull(f *testing.F) {
	f.Add(goLog(2))
	f.Add([]byte(strings.Join(diffLines, "\n")))
	f.Add(randomLog(rand.New(rand.NewSource(4)), 80))
	f.Fuzz(func(t *testing.T, text []byte) {
		checkSparse(t, Default(), text)
	})
}

func BenchmarkScanFailures10MB(b *testing.B) {
	text := tenMB()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if r := Default().ScanFailures(text); r.Total != 3 {
			b.Fatalf("found %d failures", r.Total)
		}
	}
}

// A panic in the goroutine that searches the second half (a fault, when
// the text is a mapping cut short) is raised again in the caller's, after
// both halves have stopped reading the text.
func TestSparseHalfPanics(t *testing.T) {
	text := tenMB()[:2<<20]
	testHookHalf = func() { panic("boom") }
	defer func() { testHookHalf = nil }()
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the other goroutine's panic", r)
		}
	}()
	Default().ScanFailures(text)
	t.Fatal("ScanFailures returned")
}

// BenchmarkScanKinds measures the full and the sparse scan side by side on
// 10 MB of three kinds of text: a go test -v log, an npm install's
// warnings, and Go source (where "fmt.Errorf(" is on every function).
func BenchmarkScanKinds(b *testing.B) {
	var npm, src strings.Builder
	for i := 0; npm.Len() < 10<<20; i++ {
		fmt.Fprintf(&npm, "npm warn deprecated inflight@1.0.%d: This module is not supported, and leaks memory. Do not use it.\n", i)
	}
	for i := 0; src.Len() < 10<<20; i++ {
		fmt.Fprintf(&src, "func handle%d(w http.ResponseWriter, r *http.Request) error {\n\tif err := parse(r); err != nil {\n\t\treturn fmt.Errorf(\"parse: %%w\", err)\n\t}\n\treturn nil\n}\n\n", i)
	}
	for _, k := range []struct {
		name string
		text []byte
	}{{"gotest", tenMB()}, {"npm", []byte(npm.String())}, {"gosource", []byte(src.String())}} {
		b.Run(k.name+"/full", func(b *testing.B) {
			b.SetBytes(int64(len(k.text)))
			for b.Loop() {
				sc := Default().NewScanner()
				sc.Write(k.text)
				sc.Close()
			}
		})
		b.Run(k.name+"/sparse", func(b *testing.B) {
			b.SetBytes(int64(len(k.text)))
			for b.Loop() {
				Default().ScanFailures(k.text)
			}
		})
	}
}
