package salience

import (
	"strings"
	"testing"
)

// ruleCase is one line and the rule (family/name) it must take, or "" for
// none; prev is the line before it, for Follow rules (a failure line).
type ruleCase struct {
	line, want string
	inBlock    bool
}

func TestRules(t *testing.T) {
	families := map[string][]ruleCase{
		"go": {
			{"--- FAIL: TestParse (0.00s)", "go/test-fail", false},
			{"    --- FAIL: TestParse/empty (0.00s)", "go/test-fail", false},
			{"FAIL\texample.com/x/parse\t0.012s", "go/pkg-fail", false},
			{"FAIL", "go/fail", false},
			{"ok  \texample.com/x/parse\t0.012s", "go/pkg-ok", false},
			{"ok  \texample.com/x/error_test_helpers\t(cached)", "go/pkg-ok", false},
			{"PASS", "go/pass", false},
			{"panic: runtime error: index out of range [3] with length 3", "go/panic", false},
			{"goroutine 7 [running]:", "go/goroutine", false},
			{"./main.go:3:5: undefined: foo", "go/build", false},
			{"parse/lexer.go:120:14: cannot use x (variable of type int) as string value", "go/build", false},
			{"    parse_test.go:42: got 1, want 2", "go/assert", true},
			{"WARNING: DATA RACE", "go/data-race", false},
			// negatives
			{"--- PASS: TestError (0.00s)", "", false},
			{"=== RUN   TestErrorPaths", "", false},
			{"=== RUN   TestPanic: recovered", "", false},
			{"--- SKIP: TestFATAL (0.00s)", "", false},
			{"    parse_test.go:42: got 1, want 1 (log of a passing test)", "", false},
			{"goroutine 7 is fine", "", false},
			{"see main.go for details", "", false},
		},
		"compiler": {
			{"src/main.c:12:5: error: 'x' undeclared (first use in this function)", "compiler/error", false},
			{"src/main.c:1:10: fatal error: foo.h: No such file or directory", "compiler/fatal-error", false},
			{"Main.java:3: error: cannot find symbol", "compiler/error", false},
			{"fatal error: all goroutines are asleep - deadlock!", "compiler/fatal-error", false},
			{"clang: error: linker command failed with exit code 1 (use -v to see invocation)", "compiler/tool-error", false},
			{"collect2: error: ld returned 1 exit status", "compiler/tool-error", false},
			{"src/app.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.", "compiler/tsc", false},
			{"src/app.ts:3:5 - error TS2322: Type 'string' is not assignable to type 'number'.", "compiler/tsc", false},
			{"error[E0308]: mismatched types", "cargo/rust-error", false},
			{"  --> src/main.rs:4:18", "compiler/span", true},
			{"main.c:(.text+0x1a): undefined reference to `foo'", "compiler/undefined-reference", false},
			{"src/main.c:12:5: warning: unused variable 'y' [-Wunused-variable]", "", false},
			{"  --> src/main.rs:4:18", "", false},
			{"errors.go:10: // handles error values", "", false},
		},
		"cargo": {
			{"test tests::adds ... FAILED", "cargo/test-failed", false},
			{"---- tests::adds stdout ----", "cargo/stdout", false},
			{"thread 'tests::adds' panicked at src/lib.rs:10:9:", "cargo/panicked", false},
			{"error: could not compile `demo` (lib) due to 1 previous error", "cargo/error", false},
			{"test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s", "cargo/result", false},
			{"test result: ok. 2 passed; 0 failed; 0 ignored", "cargo/result", false},
			{"test tests::error_path ... ok", "", false},
			{"warning: unused variable: `x`", "", false},
		},
		"mocha": {
			{"  3 passing (12ms)", "mocha/passing", false},
			{"  1 failing", "mocha/failing", false},
			{"  1 pending", "mocha/pending", false},
			{"  1) Array #indexOf() should return -1:", "mocha/failure", false},
			{"      AssertionError [ERR_ASSERTION]: expected -1 to equal 0", "mocha/assertion", false},
			{"  ✔ returns the index", "", false},
			{"  ✓ returns the index (5ms)", "", false},
			{"Error: ENOENT: no such file or directory, open 'x.json'", "generic/error", false},
			{"TypeError: Cannot read properties of undefined (reading 'x')", "generic/error", false},
			{"      at Context.<anonymous> (test/a.spec.js:10:12)", "generic/frame", true},
			{"      at Context.<anonymous> (test/a.spec.js:10:12)", "", false},
		},
		"jest": {
			{"  ● sum › adds 1 + 2 to equal 3", "jest/bullet", false},
			{"\x1b[1m\x1b[31m  ● \x1b[22m\x1b[1msum › adds\x1b[39m\x1b[22m", "jest/bullet", false},
			{"  ● Console", "", false},
			{"FAIL src/sum.test.js", "jest/fail", false},
			{" FAIL  src/sum.test.ts > sum > adds", "jest/fail", false},
			{"    ✕ adds 1 + 2 to equal 3 (5 ms)", "jest/cross", false},
			{"   × adds 1 + 2 4ms", "vitest/cross", false},
			{"Tests:       1 failed, 3 passed, 4 total", "jest/tests", false},
			{"Test Suites: 1 failed, 1 total", "jest/suites", false},
			{" Test Files  1 failed | 2 passed (3)", "vitest/files", false},
			{"      Tests  1 failed | 9 passed (10)", "vitest/tests", false},
			{"PASS src/error.test.js", "", false},
			{"    ✓ handles Error: values (3 ms)", "", false},
		},
		"pytest": {
			{"FAILED tests/test_a.py::test_div - ZeroDivisionError: division by zero", "pytest/failed", false},
			{"ERROR tests/test_b.py - ModuleNotFoundError: No module named 'x'", "pytest/error", false},
			{"E       assert 1 == 2", "pytest/assert", false},
			{"________________________________ test_div ________________________________", "pytest/test", false},
			{"Traceback (most recent call last):", "python/traceback", false},
			{"========================= 1 failed, 2 passed in 0.12s =========================", "pytest/summary", false},
			{"============================== 3 passed in 0.01s ===============================", "pytest/summary", false},
			{"tests/test_a.py::test_error_message PASSED                           [ 50%]", "", false},
			{"============================= test session starts ==============================", "", false},
		},
		"unittest": {
			{"FAIL: test_upper (test_str.TestStr.test_upper)", "unittest/fail", false},
			{"ERROR: test_split (test_str.TestStr.test_split)", "unittest/error", false},
			{"test_upper (test_str.TestStr.test_upper) ... FAIL", "unittest/verbose-fail", false},
			{"test_split (test_str.TestStr.test_split) ... ERROR", "unittest/verbose-error", false},
			{"test_lower (test_str.TestStr.test_lower) ... ok", "", false},
			{"test_upper (test_str.TestStr.test_upper) ... FAILED in 3s", "", false},
			{"FAILED (failures=1, errors=1)", "unittest/summary", false},
			{"Ran 3 tests in 0.001s", "unittest/ran", false},
			{"OK", "unittest/ok", false},
			{"OK (skipped=1)", "unittest/ok", false},
			{"ValueError: invalid literal for int() with base 10: 'x'", "generic/error", false},
		},
		"npm": {
			{"npm error code E404", "npm/code", false},
			{"npm ERR! code ELIFECYCLE", "npm/err-code", false},
			{"npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found", "npm/error", false},
			{"npm ERR! Test failed.  See above for more details.", "npm/err", false},
			{" ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  demo@1.0.0 test: `jest`", "npm/pnpm", false},
			{"error Command failed with exit code 1.", "npm/yarn", false},
			{"npm warn deprecated inflight@1.0.6", "", false},
		},
		"make": {
			{"make: *** [Makefile:12: test] Error 1", "make/stop", false},
			{"make[1]: *** [build] Error 2", "make/stop", false},
			{"make[1]: Entering directory '/src'", "", false},
		},
		"shell": {
			{"bash: foo: command not found", "shell/not-found", false},
			{"zsh: command not found: foo", "shell/not-found", false},
			{"sh: 1: ./x: not found", "shell/sh-not-found", false},
			{"bash: ./run.sh: No such file or directory", "shell/no-such-file", false},
			{"bash: line 1: ./run.sh: Permission denied", "shell/permission", false},
			{"ls: cannot access 'x': No such file or directory", "", false},
		},
		"tools": {
			{"FAILURE: Build failed with an exception.", "gradle/failure", false},
			{"BUILD FAILED in 3s", "gradle/build-failed", false},
			{"BUILD SUCCESSFUL in 3s", "", false},
			{"not ok 3 - adds numbers", "tap/not-ok", false},
			{"    not ok 1 - nested", "tap/not-ok", false},
			{"ok 2 - subtracts", "", false},
			{"not ok yet", "", false},
			{"FAILED: build/x.o", "ninja/failed", false},
			{"CMake Error at CMakeLists.txt:3 (find_package):", "cmake/error", false},
			{"E: Unable to locate package foo", "apt/error", false},
			{"fatal: not a git repository (or any of the parent directories): .git", "generic/fatal", false},
			{"  ✗ adds numbers", "generic/cross", false},
			{"  ✘ adds numbers", "generic/cross", false},
			{"tests/test_a.py::test_x FAILED                                  [ 58%]", "pytest/verbose-failed", false},
			{"tests/test_a.py::TestA::test_y ERROR", "pytest/verbose-error", false},
			{"tests/test_a.py::test_z PASSED                                  [ 59%]", "", false},
		},
		"generic": {
			{"2024-05-01T10:00:00Z ERROR failed to connect", "generic/ERROR", false},
			{"FATAL: password authentication failed", "generic/FATAL", false},
			{"Exception in thread \"main\" java.lang.NullPointerException", "generic/exception", false},
			{"java.lang.IllegalStateException: closed", "generic/exception", false},
			{"Segmentation fault (core dumped)", "generic/segfault", false},
			{"Killed", "generic/killed", false},
			{"bash: line 1:  4242 Killed                  ./big", "generic/killed", false},
			{"exit status 2", "generic/exit-status", false},
			{"Process exited with code 137", "generic/exited", false},
			{"Process completed with exit code 1.", "generic/exit-code", false},
			{"exit status 0", "", false},
			{"exited with code 0", "", false},
			{"Tests: 0 failed", "jest/tests", false},
			{"0 errors, 0 failed", "", false},
			{"ErrorHandler registered", "", false},
			{"see errors.Is for details", "", false},
			{"NoExceptionsHere", "", false},
		},
	}
	s := Default()
	for fam, cases := range families {
		for _, c := range cases {
			got := ""
			if i := s.Match([]byte(c.line), c.inBlock); i >= 0 {
				r := s.Rule(i)
				got = r.Family + "/" + r.Name
			}
			if got != c.want {
				t.Errorf("%s: %q (inBlock %v) matched %q, want %q", fam, c.line, c.inBlock, got, c.want)
			}
		}
	}
}

func TestCompileUserRules(t *testing.T) {
	s, err := Compile([]UserRule{{Name: "deploy", Pattern: `^DEPLOY FAILED\b`, Before: 1, After: 99}, {Name: "done", Pattern: `^all done`, Kind: "summary"}})
	if err != nil {
		t.Fatal(err)
	}
	i := s.Match([]byte("DEPLOY FAILED at step 3"), false)
	if i < 0 || s.Rule(i).Name != "deploy" || s.Rule(i).Kind != Failure {
		t.Fatalf("deploy: %d", i)
	}
	if s.Rule(i).After != maxContext {
		t.Errorf("After not capped: %d", s.rules[i].After)
	}
	if i := s.Match([]byte("all done in 3s"), false); i < 0 || s.Rule(i).Kind != Summary {
		t.Errorf("summary rule: %d", i)
	}
	for _, bad := range []UserRule{
		{Name: "broken", Pattern: `(unclosed`},
		{Name: "kindless", Pattern: `x`, Kind: "warning"},
		{Name: "empty"},
	} {
		_, err := Compile([]UserRule{bad})
		if err == nil || !strings.Contains(err.Error(), bad.Name) {
			t.Errorf("%s: error %v does not name the rule", bad.Name, err)
		}
	}
}
