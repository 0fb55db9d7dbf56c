package respond

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/salience"
)

// goTestLog is a go test -v log of n passing tests with a failing one (and
// a secret in its output) at failAt, n*failAt... in the middle.
func goTestLog(n, failAt int, secret string) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "=== RUN   TestCase%05d\n", i)
		if i == failAt {
			fmt.Fprintf(&b, "    case_test.go:%d: contextd-injected: got 3, want 4 (token %s)\n", 100+i, secret)
			fmt.Fprintf(&b, "--- FAIL: TestCase%05d (0.00s)\n", i)
			continue
		}
		fmt.Fprintf(&b, "--- PASS: TestCase%05d (0.00s)\n", i)
	}
	if failAt >= 0 {
		b.WriteString("FAIL\nFAIL\texample.com/pkg\t0.412s\nFAIL\n")
	} else {
		b.WriteString("PASS\nok  \texample.com/pkg\t0.412s\n")
	}
	return []byte(b.String())
}

// The first page of a long failing log shows the failure from its middle,
// scrubbed, within the budget, with exact tokens; the pages still
// reassemble to the whole output scrubbed, folds or not.
func TestSalientFirstPage(t *testing.T) {
	f := newFixture(t)
	tok := token(t)
	out := goTestLog(20000, 9000, tok)
	for _, chunk := range []int{4 << 10, 256 << 10} {
		got, sum := f.runWith(t, out, 2000, chunk, salience.Default())
		if !sum.Truncated || sum.TokensUsed > 2000 || sum.TokensUsed != f.counter.Count(got) {
			t.Fatalf("summary %+v, counted %d", sum, f.counter.Count(got))
		}
		for _, want := range []string{"--- FAIL: TestCase09000", "contextd-injected: got 3, want 4", "FAIL\texample.com/pkg"} {
			if !bytes.Contains(got, []byte(want)) {
				t.Fatalf("the first page does not show %q:\n%s", want, got)
			}
		}
		if bytes.Contains(got, []byte(tok)) || !bytes.Contains(got, []byte("[REDACTED:github-pat:")) {
			t.Fatalf("the failure block is not scrubbed:\n%s", got)
		}
		var all bytes.Buffer
		for ref := sum.Continue; ref != ""; {
			pg, err := Page(f.store, f.layer, f.counter, "s1", ref, 3000, nil)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(pg.Data)
			ref = pg.Next
		}
		if !bytes.Equal(all.Bytes(), f.layer.Scrub(out)) {
			t.Fatalf("pages reassemble to %d bytes, want %d", all.Len(), len(f.layer.Scrub(out)))
		}
	}
}

// A passing verbose run folds: its first page costs a fraction of the
// budget, and still ends with the verdict.
func TestSalientPassingFolds(t *testing.T) {
	f := newFixture(t)
	out := goTestLog(20000, -1, "")
	plain, psum := f.run(t, out, 2000, 64<<10)
	got, sum := f.runWith(t, out, 2000, 64<<10, salience.Default())
	if sum.TokensUsed*4 > psum.TokensUsed {
		t.Fatalf("folded first page %d tokens, head and tail %d:\n%s", sum.TokensUsed, psum.TokensUsed, got)
	}
	if !bytes.HasSuffix(got, []byte("ok  \texample.com/pkg\t0.412s\n")) || !bytes.HasSuffix(plain, []byte("ok  \texample.com/pkg\t0.412s\n")) {
		t.Fatalf("the verdict is not the page's end:\n%s", got)
	}
	if !bytes.Contains(got, []byte("passing tests")) {
		t.Fatalf("no fold line:\n%s", got)
	}
}

// Without a failure or passing noise the page is head, marker and tail as
// before.
func TestSalientNothingSalient(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "line %d of a plain listing\n", i)
	}
	out := []byte(b.String())
	plain, _ := f.run(t, out, 2000, 64<<10)
	got, _ := f.runWith(t, out, 2000, 64<<10, salience.Default())
	// The same head and tail around the marker line (whose reference and
	// count of lines are the entry's own).
	split := func(b []byte) (head, tail []byte) {
		i := bytes.Index(b, []byte(" left out ... the full output"))
		if i < 0 {
			t.Fatalf("no marker:\n%s", b)
		}
		h := bytes.LastIndexByte(b[:i], '\n')
		e := i + bytes.IndexByte(b[i:], '\n')
		return b[:h+1], b[e+1:]
	}
	ph, pt := split(plain)
	gh, gt := split(got)
	// Today's head is cut while it streams, the page's at the end: the same
	// start and end of the output, within a few lines of each other.
	near := func(a, b []byte) bool {
		return len(a) > 0 && len(b) > 0 && max(len(a), len(b))*10 <= min(len(a), len(b))*11
	}
	if !bytes.HasPrefix(out, gh) || !bytes.HasSuffix(out, gt) || !near(ph, gh) || !near(pt, gt) {
		t.Fatalf("head or tail differ without anything salient: head %d/%d bytes, tail %d/%d bytes:\n%s", len(gh), len(ph), len(gt), len(pt), got)
	}
}

// BenchmarkPipeline10MB is the whole response pipeline (second-layer
// scrub, store, budget, first page) on a 10 MB go test -v log with a few
// failures in the middle, without and with the salience pass, side by
// side in one run.
func BenchmarkPipeline10MB(b *testing.B) {
	var buf bytes.Buffer
	for buf.Len() < 10<<20 {
		buf.Write(goTestLog(5000, 2500, "x"))
	}
	out := buf.Bytes()
	for _, c := range []struct {
		name string
		set  *salience.Set
	}{{"head-tail", nil}, {"salience", salience.Default()}} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b)
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				f.runWith(b, out, 2000, 256<<10, c.set)
			}
		})
	}
}

// With the pass, a response stays within its budget at every size, the
// smallest included (where the marker line is most of it).
func TestSalientWithinBudget(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	for _, out := range [][]byte{[]byte(b.String()), goTestLog(3000, 1500, "x"), goTestLog(3000, -1, "")} {
		for _, tok := range []int{100, 150, 300, 1000, 1500} {
			got, sum := f.runWith(t, out, tok, 64<<10, salience.Default())
			if sum.TokensUsed > tok || sum.TokensUsed != f.counter.Count(got) {
				t.Errorf("budget %d: %d tokens (counted %d):\n%s", tok, sum.TokensUsed, f.counter.Count(got), got)
			}
		}
	}
}
