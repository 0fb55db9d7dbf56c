package salience

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func joinLines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

func TestFoldRedraw(t *testing.T) {
	text := joinLines("downloading", "  10%\r  50%\r100% done", "windows line\r", "next")
	got := string(Join(Fold(text, 1)))
	want := "downloading\n100% done\nwindows line\r\nnext\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFoldSimilar(t *testing.T) {
	text := joinLines(
		"build started",
		"Downloading github.com/a/b v1.2.3 (12 kB) in 35ms",
		"Downloading github.com/c/d v0.4.0 (7 kB) in 120ms",
		"Downloading github.com/e/f v2.0.1 (130 kB) in 2ms",
		"Downloading github.com/g/h v1.0.0 (1 kB) in 9ms",
		"commit 3f2a9c1d done",
		"commit 9ab8c7d0 done",
		"build finished")
	got := string(Join(Fold(text, 10)))
	want := "build started\n" +
		"Downloading github.com/a/b v1.2.3 (12 kB) in 35ms\n" +
		"... 3 similar lines (lines 12-14)\n" +
		"commit 3f2a9c1d done\ncommit 9ab8c7d0 done\n" + // two are not a run
		"build finished\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFoldSimilarNeverFailures(t *testing.T) {
	text := joinLines("a.go:3:5: undefined: x", "a.go:4:5: undefined: x", "b.go:9:2: undefined: x")
	if got := Join(Fold(text, 1)); !bytes.Equal(got, text) {
		t.Errorf("folded failures:\n%s", got)
	}
}

func TestFoldPassing(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "=== RUN   TestA%d\n    a_test.go:%d: log line\n--- PASS: TestA%d (0.00s)\n", i, i, i)
	}
	b.WriteString("=== RUN   TestError\n    e_test.go:9: got 1, want 2\n--- FAIL: TestError (0.00s)\n")
	for i := range 10 {
		fmt.Fprintf(&b, "=== RUN   TestB%d\n--- PASS: TestB%d (0.00s)\n", i, i)
	}
	b.WriteString("FAIL\nFAIL\texample.com/a\t0.1s\n")
	got := string(Join(Fold([]byte(b.String()), 1)))
	want := "... 300 passing tests (lines 1-900)\n" +
		"=== RUN   TestError\n    e_test.go:9: got 1, want 2\n--- FAIL: TestError (0.00s)\n" +
		"... 10 passing tests (lines 904-923)\n" +
		"FAIL\nFAIL\texample.com/a\t0.1s\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFoldPassingOtherRunners(t *testing.T) {
	cases := map[string]struct {
		text, want string
	}{
		"mocha": {
			"  Array\n    ✔ one\n    ✔ two\n    ✔ three\n    1) four\n\n  3 passing (5ms)\n",
			"  Array\n... 3 passing tests (lines 2-4)\n    1) four\n\n  3 passing (5ms)\n",
		},
		"jest": {
			"PASS src/a.test.js\n  ✓ a (1 ms)\n  ✓ b\nTests: 3 passed\n",
			"... 3 passing tests (lines 1-3)\nTests: 3 passed\n",
		},
		"pytest": {
			"tests/a.py::test_a PASSED [ 33%]\ntests/a.py::test_b PASSED [ 66%]\ntests/a.py::test_c FAILED [100%]\n",
			"... 2 passing tests (lines 1-2)\ntests/a.py::test_c FAILED [100%]\n",
		},
		"cargo": {
			"running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... FAILED\n",
			"running 3 tests\n... 2 passing tests (lines 2-3)\ntest c ... FAILED\n",
		},
		"single": {
			"--- PASS: TestA (0.00s)\nok  \tx\t0.1s\n",
			"--- PASS: TestA (0.00s)\nok  \tx\t0.1s\n",
		},
	}
	for name, c := range cases {
		if got := string(Join(Fold([]byte(c.text), 1))); got != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got, c.want)
		}
	}
}

// A failing test's subtests that passed stay: they are part of its block.
func TestFoldKeepsFailingBlock(t *testing.T) {
	text := joinLines(
		"--- FAIL: TestA (0.00s)",
		"    --- PASS: TestA/one (0.00s)",
		"    --- PASS: TestA/two (0.00s)",
		"    --- FAIL: TestA/three (0.00s)",
		"        a_test.go:12: boom",
	)
	if got := Join(Fold(text, 1)); !bytes.Equal(got, text) {
		t.Errorf("got\n%s", got)
	}
}

// checkFold checks Fold's invariants on text.
func checkFold(t *testing.T, text []byte, first int) {
	t.Helper()
	lines := splitLines(text)
	pieces := Fold(text, first)
	next := 0 // index of the next input line a piece may stand for
	kept := 0
	for _, p := range pieces {
		if p.First < first || p.Last > first+len(lines)-1 || p.First > p.Last {
			t.Fatalf("piece %+v outside lines %d-%d", p, first, first+len(lines)-1)
		}
		if p.First-first < next {
			t.Fatalf("piece %+v out of order", p)
		}
		orig := lines[p.First-first]
		switch p.Kind {
		case Kept:
			if !bytes.Equal(p.Text, orig) {
				t.Fatalf("kept line changed: %q -> %q", orig, p.Text)
			}
			kept += len(p.Text) + 1
		case Redrawn:
			found := false
			for _, seg := range bytes.Split(orig, []byte{'\r'}) {
				found = found || bytes.Equal(seg, p.Text)
			}
			if !found {
				t.Fatalf("redrawn %q is not a state of %q", p.Text, orig)
			}
			kept += len(p.Text) + 1
		}
		next = p.Last - first + 1
	}
	if kept > len(text)+1 {
		t.Fatalf("kept %d bytes of %d", kept, len(text))
	}
}

func FuzzFold(f *testing.F) {
	f.Add([]byte("=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB\n"), 1)
	f.Add([]byte("a 1\na 2\na 3\na 4\r5\nb\n"), 7)
	f.Add([]byte("\n\n\n\r\r\n"), 1)
	f.Add([]byte("    x_test.go:1: a\n  ✓ b\n  ✓ c\nError: boom\n    at f (x.js:1:2)\n"), 100)
	f.Fuzz(func(t *testing.T, text []byte, first int) {
		if first < 1 || first > 1<<30 {
			first = 1
		}
		checkFold(t, text, first)
	})
}
