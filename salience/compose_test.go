package salience

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
)

func testMark(g budget.Gap) string {
	return budget.Marker(g.Lines, g.Bytes(), "c0123456789abcdef0123456789abcdef", "safe_bash")
}

// composeAll runs Compose on text as the pipeline would: windows of its
// ends, and a Scanner's Result.
func composeAll(text []byte, tokens int) (Page, *Result, budget.Cut) {
	c := budget.Default()
	head, tail := ends(text, budget.Window(tokens))
	r := scan(Default(), text, 0)
	nl := int64(bytes.Count(text, []byte{'\n'}))
	cut := c.PlanEnds(head, tail, int64(len(text)), nl, tokens, testMark)
	return Compose(c, tokens, head, tail, int64(len(text)), nl, r, testMark), r, cut
}

func ends(text []byte, w int) (head, tail []byte) {
	if len(text) <= 2*w {
		return text, text
	}
	return text[:w], text[len(text)-w:]
}

// failingBuild is a long log with many compiler errors in its middle.
func failingBuild(errors int) []byte {
	var b bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&b, "[%4d/9000] CC src/module%d/file%d.o\n", i, i%40, i)
		if i >= 1000 && i < 1000+errors*10 && i%10 == 0 {
			fmt.Fprintf(&b, "src/module%d/file%d.c:%d:7: error: use of undeclared identifier 'v%d'\n    int x = v%d;\n            ^\n", i%40, i, i%300, i, i)
		}
	}
	b.WriteString("ninja: build stopped: subcommand failed.\nmake: *** [Makefile:20: all] Error 1\n")
	return b.Bytes()
}

func TestComposeTokenBound(t *testing.T) {
	c := budget.Default()
	texts := map[string][]byte{"go": goLog(2000), "build": failingBuild(30), "one": failingBuild(1), "ten": tenMB()[:2<<20]}
	for name, text := range texts {
		for tokens := 100; tokens <= 4000; tokens += 150 {
			p, _, _ := composeAll(text, tokens)
			if n := c.Count(p.Data); n != p.Tokens || n > tokens {
				t.Fatalf("%s at %d: Tokens %d, counted %d", name, tokens, p.Tokens, n)
			}
			if !p.Truncated {
				t.Fatalf("%s at %d: not truncated", name, tokens)
			}
		}
	}
}

func TestComposeFirstAndLast(t *testing.T) {
	text := failingBuild(30)
	p, r, _ := composeAll(text, 2000)
	if r.Total != 31 { // and make's stop
		t.Fatalf("scanner found %d failures", r.Total)
	}
	s := string(p.Data)
	for _, want := range []string{"error: use of undeclared identifier 'v1000'", "error: use of undeclared identifier 'v1290'", "more failures in lines", "--- lines ", "of 3,092 (compiler: error) ---", "make: *** [Makefile:20: all] Error 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q:\n%s", want, s)
		}
	}
	if p.More == 0 || p.Blocks < 2 || p.Blocks+p.More != 30 { // make's is in the tail
		t.Errorf("blocks %d, more %d", p.Blocks, p.More)
	}
	// The first and last failures are kept at the smallest budgets too.
	for _, tokens := range []int{300, 500, 800} {
		p, _, _ := composeAll(text, tokens)
		s := string(p.Data)
		if !strings.Contains(s, "'v1000'") || !strings.Contains(s, "'v1290'") || !strings.Contains(s, "make: ***") {
			t.Errorf("at %d tokens the first or last failure is missing:\n%s", tokens, s)
		}
	}
}

func TestComposeGoFailure(t *testing.T) {
	p, _, _ := composeAll(goLog(3000), 2000)
	s := string(p.Data)
	for _, want := range []string{"parse_test.go:42: got 1, want 2", "--- FAIL: TestParse", "panic: runtime error", "passing tests (lines", "FAIL\texample.com/x"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q:\n%s", want, s)
		}
	}
	if len(p.Shown) < 3 || p.Shown[0].What != "head" || p.Shown[len(p.Shown)-1].What != "tail" {
		t.Errorf("shown %+v", p.Shown)
	}
}

// Without failures the page is PlanEnds' cut, unless passing tests fill it.
func TestComposeNoSalience(t *testing.T) {
	c := budget.Default()
	var b bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&b, "%d: the quick brown fox jumps over lazy dog number %d\n", i, i*7)
	}
	for _, tokens := range []int{100, 500, 2000, 4000} {
		p, r, cut := composeAll(b.Bytes(), tokens)
		if len(r.Blocks) != 0 {
			t.Fatalf("blocks in plain text: %+v", r.Blocks[0])
		}
		if !bytes.Equal(p.Data, cut.Data) || p.Tokens != cut.Tokens || p.Gap != cut.Gap || p.Folded {
			t.Errorf("at %d: page differs from PlanEnds", tokens)
		}
	}
	// Fits: the whole output.
	small := []byte("ok  \texample.com/x\t0.1s\n")
	p, _, _ := composeAll(small, 2000)
	if !bytes.Equal(p.Data, small) || p.Truncated {
		t.Errorf("small output: %q", p.Data)
	}

	// A passing go test -v: a small fraction of the budget.
	var v bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&v, "=== RUN   TestHandler/case_%d\n--- PASS: TestHandler/case_%d (0.00s)\n", i, i)
	}
	v.WriteString("PASS\nok  \texample.com/srv\t1.234s\n")
	p, _, cut := composeAll(v.Bytes(), 2000)
	if !p.Folded || p.Tokens > 200 || c.Count(p.Data) != p.Tokens || p.Gap != cut.Gap {
		t.Errorf("passing log: %d tokens (folded %v):\n%s", p.Tokens, p.Folded, p.Data)
	}
	for _, want := range []string{"passing tests (lines 1-", "PASS\nok  \texample.com/srv\t1.234s\n", "--continue"} {
		if !strings.Contains(string(p.Data), want) {
			t.Errorf("passing log page lacks %q:\n%s", want, p.Data)
		}
	}
}

// safe_read's numbered lines fold as the command's output does: a passing
// go test -v log read as a file costs a small fraction of the budget too,
// and the lines it shows keep their numbers.
func TestComposeNumberedPassing(t *testing.T) {
	c := budget.Default()
	var v bytes.Buffer
	n := 0
	line := func(format string, a ...any) {
		n++
		fmt.Fprintf(&v, "%6d\t"+format+"\n", append([]any{n}, a...)...)
	}
	for i := range 5000 {
		line("=== RUN   TestHandler/case_%d", i)
		line("    handler_test.go:%d: served in %dms", 10+i%50, i%9)
		line("--- PASS: TestHandler/case_%d (0.00s)", i)
	}
	line("PASS")
	line("ok  \texample.com/srv\t1.234s")
	text := v.Bytes()
	head, tail := ends(text, budget.Window(2000))
	sc := Default().NewScanner()
	sc.Numbered = true
	sc.Write(text)
	r := sc.Close()
	nl := int64(bytes.Count(text, []byte{'\n'}))
	p := Compose(c, 2000, head, tail, int64(len(text)), nl, r, testMark)
	if !p.Folded || p.Tokens > 300 || c.Count(p.Data) != p.Tokens {
		t.Fatalf("numbered passing log: %d tokens (folded %v):\n%s", p.Tokens, p.Folded, p.Data)
	}
	for _, want := range []string{"passing tests (lines 1-", " 15001\tPASS\n", " 15002\tok  \texample.com/srv"} {
		if !strings.Contains(string(p.Data), want) {
			t.Errorf("numbered passing page lacks %q:\n%s", want, p.Data)
		}
	}
	// Read as unnumbered, the same lines are not known for progress: the
	// Scanner's Numbered is what folds them.
	sc = Default().NewScanner()
	sc.Write(text)
	if q := Compose(c, 2000, head, tail, int64(len(text)), nl, sc.Close(), testMark); q.Folded {
		t.Errorf("numbered lines read as unnumbered folded:\n%s", q.Data)
	}
}
