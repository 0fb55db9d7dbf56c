package salience

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// scanWith feeds text to a Scanner of s in chunks of size (0: whole), on
// the reference path when slow, skipping some lines at skipAt (a line
// index; -1 for none).
func scanWith(s *Set, text []byte, size int, slow, numbered bool) *Result {
	sc := s.NewScanner()
	sc.slow, sc.Numbered = slow, numbered
	if size <= 0 {
		size = len(text) + 1
	}
	for len(text) > 0 {
		n := min(size, len(text))
		sc.Write(text[:n])
		text = text[n:]
	}
	return sc.Close()
}

// diffLines are lines that exercise every rule, quiet lines, escapes,
// carriage returns and near misses.
var diffLines = []string{
	"=== RUN   TestParse", "=== PAUSE TestX", "=== CONT  TestX", "=== NAME  TestX",
	"--- PASS: TestError (0.00s)", "    --- PASS: TestSub (0.00s)", "--- SKIP: TestFATAL (0.00s)",
	"--- FAIL: TestParse (0.00s)", "    --- FAIL: TestParse/empty (0.00s)",
	"FAIL\texample.com/x\t0.1s", "FAIL", "ok  \texample.com/x\t0.1s", "PASS", "PASS src/a.test.js",
	"panic: runtime error: boom", "goroutine 7 [running]:", "WARNING: DATA RACE",
	"./main.go:3:5: undefined: foo", "    parse_test.go:42: got 1, want 2", "    handler_test.go:7: request served",
	"src/a.c:3:1: error: bad", "fatal error: x.h: No such file or directory", "ld: error: undefined symbol",
	"src/a.ts(3,4): error TS2322: nope", "error[E0308]: mismatched types", "  --> src/main.rs:2:5",
	"main.c:(.text+0x1): undefined reference to `foo'", "test result: FAILED. 1 passed; 1 failed",
	"test a::b ... FAILED", "test a::c ... ok", "---- a::b stdout ----", "thread 'main' panicked at src/main.rs:2:5:",
	"error: could not compile", "  3 passing (12ms)", "  1 failing", "  2 pending", "  1) adds numbers",
	"AssertionError: expected 1", "Test Suites: 1 failed", "Tests: 1 failed", "Test Files  1 failed", "Tests  3 passed",
	"  ● sum › adds", "  ● Console", "FAIL src/a.test.js", "  ✕ adds (3 ms)", "  × adds", "  ✓ adds (1 ms)", "✔ ok",
	"FAILED (failures=1)", "Ran 3 tests in 0.1s", "OK", "OK (skipped=1)", "FAIL: test_x (a.B)", "ERROR: test_y (a.B)",
	"===== 1 failed, 2 passed in 0.1s =====", "FAILED tests/a.py::test_x - assert 1", "ERROR tests/a.py",
	"___________ test_x ___________", "E       assert 1 == 2", "Traceback (most recent call last):",
	"tests/test_a.py::test_x PASSED    [ 10%]", "PASSED", "x PASSED", "a::b PASSED",
	"npm error code E404", "npm ERR! code E1", "npm error 404", "npm ERR! x", " ERR_PNPM_X boom", "error Command failed",
	"make: *** [all] Error 1", "make[1]: *** x", "bash: foo: command not found", "sh: 1: foo: not found",
	"bash: x: No such file or directory", "sh: line 3: ./x: Permission denied",
	"ValueError: bad", "x.Error: y", "an ERROR here", "FATAL boom", "java.lang.NullPointerException: x",
	"Segmentation fault (core dumped)", "Killed", "x: Killed", "exit status 1", "exit status 0", "exit code 2",
	"process exited with code 3", "    at Object.<anonymous> (a.js:1:1)", "at x", "\tat y",
	"", " ", "\t", "plain text line", "2024-05-01 10:00:00 compiling handler.go with -O2 -g",
	"\x1b[31m  ● sum › adds\x1b[0m", "\x1b[32m✓\x1b[0m ok", "Err\x1b[0mor: x", "progress 10%\rprogress 100%\rError: done",
	"FAILURE: Build failed with an exception.", "BUILD FAILED in 3s", "not ok 3 - adds", "  not ok 1 - x", "FAILED: build/x.o",
	"CMake Error at CMakeLists.txt:3 (x):", "E: Unable to locate package foo", "fatal: not a git repository", "  ✗ adds", "✘ x",
	"tests/a.py::test_x FAILED   [ 58%]", "tests/a.py::test_y ERROR", "tests/a.py::test_z PASSED   [ 59%]",
	"Error: x\r", "--- PASS: T (0.00s)\r", "     12\tError: numbered", "  318\ttest a ... FAILED", "a\x00b", "\xe2\x9c", "PASSED x",
}

func randomLog(r *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	for range lines {
		l := diffLines[r.Intn(len(diffLines))]
		switch r.Intn(20) {
		case 0:
			l = strings.Repeat(" ", r.Intn(5)) + l
		case 1:
			l = l + " " + diffLines[r.Intn(len(diffLines))]
		case 2:
			if r.Intn(10) == 0 {
				l = strings.Repeat("y", MaxBlockBytes+r.Intn(MaxMatchLine)) + l
			}
		case 3:
			l += "\r"
		}
		b.WriteString(l)
		if r.Intn(50) != 0 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func checkFastSlow(t *testing.T, s *Set, text []byte, size int, numbered bool) {
	t.Helper()
	want := scanWith(s, text, size, true, numbered)
	got := scanWith(s, text, size, false, numbered)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path differs (chunks of %d, numbered %v):\n%+v\nwant\n%+v", size, numbered, got, want)
	}
}

// The fast path finds what the matcher finds line by line.
func TestFastMatchesSlow(t *testing.T) {
	user, err := Compile([]UserRule{{Name: "u", Pattern: `boom`, Before: 3}})
	if err != nil {
		t.Fatal(err)
	}
	corpora := [][]byte{goLog(30), tenMB()[:1<<20], []byte(strings.Join(diffLines, "\n"))}
	r := rand.New(rand.NewSource(1))
	for range 200 {
		corpora = append(corpora, randomLog(r, 1+r.Intn(300)))
	}
	for i, text := range corpora {
		for _, size := range []int{0, 1, 3, 64, 4096, 32 << 10} {
			if i < 2 && size < 64 {
				continue
			}
			for _, s := range []*Set{Default(), user} {
				checkFastSlow(t, s, text, size, false)
			}
			if i%5 == 0 {
				checkFastSlow(t, Default(), text, size, true)
			}
		}
	}
}

func FuzzFastMatchesSlow(f *testing.F) {
	f.Add(goLog(2), 7)
	f.Add([]byte(strings.Join(diffLines, "\n")), 64)
	f.Add([]byte("a\nError: b\n\tat c\n--- FAIL: x\n  x_test.go:1: y\n"), 1)
	f.Add(randomLog(rand.New(rand.NewSource(2)), 50), 0)
	f.Fuzz(func(t *testing.T, text []byte, size int) {
		size = size % 5000
		if size < 0 {
			size = -size
		}
		checkFastSlow(t, Default(), text, size, false)
	})
}

var _ = fmt.Sprint
