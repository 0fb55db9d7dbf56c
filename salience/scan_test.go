package salience

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// scan feeds text to a Scanner in chunks of size (0: whole).
func scan(s *Set, text []byte, size int) *Result { return scanWith(s, text, size, false, false) }

// goLog is a go test -v log with passing tests around two failures.
func goLog(passing int) []byte {
	var b bytes.Buffer
	for i := range passing {
		fmt.Fprintf(&b, "=== RUN   TestOK%d\n--- PASS: TestOK%d (0.00s)\n", i, i)
	}
	b.WriteString("=== RUN   TestParse\n    parse_test.go:42: got 1, want 2\n--- FAIL: TestParse (0.00s)\n")
	for i := range passing {
		fmt.Fprintf(&b, "=== RUN   TestMore%d\n--- PASS: TestMore%d (0.00s)\n", i, i)
	}
	b.WriteString("=== RUN   TestCrash\npanic: runtime error: invalid memory address or nil pointer dereference [recovered]\n" +
		"goroutine 7 [running]:\ntesting.tRunner.func1.2({0x5c1f00, 0x7a3c40})\n\t/usr/local/go/src/testing/testing.go:1632 +0x230\n" +
		"example.com/x.TestCrash(0xc000104b60)\n\t/src/x/x_test.go:20 +0x1d\n")
	b.WriteString("FAIL\texample.com/x\t0.015s\nFAIL\n")
	return b.Bytes()
}

func TestScannerGoLog(t *testing.T) {
	text := goLog(50)
	r := scan(Default(), text, 0)
	if r.Total != 2 || len(r.Blocks) != 2 {
		t.Fatalf("blocks: %d of %d: %+v", len(r.Blocks), r.Total, r.Blocks)
	}
	b := r.Blocks[0]
	if want := "=== RUN   TestParse\n    parse_test.go:42: got 1, want 2\n--- FAIL: TestParse (0.00s)\n"; string(b.Text) != want {
		t.Errorf("first block %q", b.Text)
	}
	if b.FirstLine != 101 || b.LastLine != 103 || string(text[b.Start:b.End]) != string(b.Text) || b.Family != "go" || b.Name != "test-fail" {
		t.Errorf("first block %+v", b)
	}
	b = r.Blocks[1]
	if !strings.HasPrefix(string(b.Text), "=== RUN   TestCrash\npanic:") || !strings.Contains(string(b.Text), "x_test.go:20") || b.Name != "panic" {
		t.Errorf("second block %q (%s)", b.Text, b.Name)
	}
	if string(text[b.Start:b.End]) != string(b.Text) {
		t.Errorf("second block's offsets do not hold its text")
	}
	if r.Passing != 100 || r.Lines != bytes.Count(text, []byte{'\n'}) || r.Bytes != int64(len(text)) {
		t.Errorf("passing %d lines %d bytes %d", r.Passing, r.Lines, r.Bytes)
	}
	// The package's verdict is a failure line, in the last block.
	if !strings.Contains(string(r.Blocks[1].Text), "FAIL\texample.com") {
		t.Errorf("the package's verdict is not in the last block: %q", r.Blocks[1].Text)
	}
	if len(r.Summary) != 1 || string(r.Summary[0].Text) != "FAIL\n" {
		t.Errorf("summary %+v", r.Summary)
	}
}

func TestScannerKeepsFirstAndLast(t *testing.T) {
	var b bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&b, "step %d\nstep %d\nstep %d\nstep %d\nstep %d\nstep %d done\nsrc/f%d.c:%d:1: error: bad %d\n", i, i, i, i, i, i, i, i+1, i)
	}
	r := scan(Default(), b.Bytes(), 0)
	if r.Total != 30 || len(r.Blocks) != 2*KeepBlocks || r.Dropped() != 30-2*KeepBlocks {
		t.Fatalf("total %d kept %d", r.Total, len(r.Blocks))
	}
	if !bytes.Contains(r.Blocks[0].Text, []byte("bad 0\n")) || !bytes.Contains(r.Blocks[len(r.Blocks)-1].Text, []byte("bad 29\n")) {
		t.Errorf("first/last not kept")
	}
	// Dropped: failures 8..21, each on line 7i+7 with 3 lines after.
	if r.DroppedFrom != 7*8+7 || r.DroppedTo != 7*21+10 {
		t.Errorf("dropped lines %d-%d", r.DroppedFrom, r.DroppedTo)
	}
}

func TestScannerBlockBounds(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("start\n")
	for i := range 200 {
		fmt.Fprintf(&b, "x.c:%d:1: error: e\n", i+1)
	}
	long := strings.Repeat("y", 100<<10)
	b.WriteString("Error: " + long + "\nend\n")
	r := scan(Default(), b.Bytes(), 0)
	for _, bl := range r.Blocks {
		if bl.LastLine-bl.FirstLine+1 > MaxBlockLines || len(bl.Text) > MaxBlockBytes {
			t.Errorf("block %d-%d holds %d bytes", bl.FirstLine, bl.LastLine, len(bl.Text))
		}
		if !bl.Clipped && !bytes.Equal(b.Bytes()[bl.Start:bl.End], bl.Text) {
			t.Errorf("block %d-%d text differs from the output", bl.FirstLine, bl.LastLine)
		}
	}
	last := r.Blocks[len(r.Blocks)-1]
	if !last.Clipped || last.FirstLine != 202 || last.End != int64(b.Len()-len("end\n")) {
		t.Errorf("long line block %+v", last.FirstLine)
	}
}

func TestScannerChunking(t *testing.T) {
	inputs := [][]byte{
		goLog(20),
		[]byte("npm error code E404\nnpm error 404 Not Found\n\x1b[31m  ● sum › adds\x1b[0m\n    expect(x).toBe(3)\nTests: 1 failed\r\nno newline at end: Error: x"),
		append([]byte("Traceback (most recent call last):\n  File \"a.py\", line 1\n"), append(bytes.Repeat([]byte("z"), 70<<10), "\nValueError: bad\n"...)...),
	}
	for i, in := range inputs {
		want := scan(Default(), in, 0)
		for _, size := range []int{1, 7, 4096} {
			if got := scan(Default(), in, size); !reflect.DeepEqual(got, want) {
				t.Errorf("input %d: chunks of %d give\n%+v\nwant\n%+v", i, size, got, want)
			}
		}
	}
}

func FuzzScanner(f *testing.F) {
	f.Add(goLog(2), 3)
	f.Add([]byte("a\nError: b\n\tat c\n--- FAIL: x\n  x_test.go:1: y\n"), 1)
	f.Fuzz(func(t *testing.T, text []byte, size int) {
		size = max(size%64, 1)
		want := scan(Default(), text, 0)
		got := scan(Default(), text, size)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("chunks of %d differ", size)
		}
		for _, b := range got.Blocks {
			if b.Start < 0 || b.End > int64(len(text)) || b.Start > b.End || b.FirstLine > b.LastLine {
				t.Fatalf("block out of range: %+v", b)
			}
			if !b.Clipped && !bytes.Equal(text[b.Start:b.End], b.Text) {
				t.Fatalf("block text is not the output's")
			}
		}
	})
}

// tenMB is a go test -v log of about 10 MB, three failures in its middle.
func tenMB() []byte {
	var b bytes.Buffer
	i := 0
	for b.Len() < 10<<20 {
		fmt.Fprintf(&b, "=== RUN   TestHandler/case_%d\n    handler_test.go:%d: request %d served in 1.2ms\n--- PASS: TestHandler/case_%d (0.00s)\n", i, i%500, i, i)
		if i == 40000 || i == 40500 || i == 41000 {
			fmt.Fprintf(&b, "=== RUN   TestBroken%d\n    broken_test.go:12: got 1, want 2\n--- FAIL: TestBroken%d (0.00s)\n", i, i)
		}
		i++
	}
	b.WriteString("FAIL\nFAIL\texample.com/srv\t12.3s\n")
	return b.Bytes()
}

func BenchmarkScan10MB(b *testing.B) {
	text := tenMB()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		sc := Default().NewScanner()
		for p := text; len(p) > 0; {
			n := min(len(p), 32<<10) // the size a pipe delivers
			sc.Write(p[:n])
			p = p[n:]
		}
		if r := sc.Close(); r.Total != 3 {
			b.Fatalf("found %d failures", r.Total)
		}
	}
}

// BenchmarkScanPlain is plain text lines no rule wants.
func BenchmarkScanPlain(b *testing.B) {
	var buf bytes.Buffer
	for buf.Len() < 10<<20 {
		buf.WriteString("2024-05-01 10:00:00 compiling module internal/server/handler.go with options -O2 -g\n")
	}
	text := buf.Bytes()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		sc := Default().NewScanner()
		sc.Write(text)
		sc.Close()
	}
}

// A skipped part keeps the numbering of what follows, and blocks inserted
// for it take their place in order.
func TestScannerSkipInsert(t *testing.T) {
	sc := Default().NewScanner()
	sc.Write([]byte("one\ntwo\n"))
	sc.Skip(100, 10)
	sc.Insert([]Block{{FirstLine: 5, LastLine: 5, Kind: Failure, Text: []byte("panic: boom\n")}}, 3)
	sc.Write([]byte("--- FAIL: TestX (0.00s)\nok\n"))
	r := sc.Close()
	if r.Lines != 14 || r.Total != 4 || len(r.Blocks) != 2 {
		t.Fatalf("lines %d total %d blocks %+v", r.Lines, r.Total, r.Blocks)
	}
	if r.Blocks[0].FirstLine != 5 || r.Blocks[1].FirstLine != 13 {
		t.Fatalf("blocks at %d and %d, want 5 and 13", r.Blocks[0].FirstLine, r.Blocks[1].FirstLine)
	}
}

// safe_read's numbered lines match as the file's own.
func TestScannerNumbered(t *testing.T) {
	sc := Default().NewScanner()
	sc.Numbered = true
	sc.Write([]byte("     1\tok\n   318\ttest refund_restores_balance ... FAILED\n   319\tok\n"))
	r := sc.Close()
	if r.Total != 1 || r.Blocks[0].MatchLine != 2 || !bytes.HasPrefix(r.Blocks[0].Text, []byte("   318\t")) {
		t.Fatalf("total %d, blocks %+v", r.Total, r.Blocks)
	}
}
