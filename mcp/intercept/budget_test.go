package intercept_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/relay"
	"github.com/contextd/contextd/salience"
)

// goTestV is what `go test -v` prints for pkg: before passing tests, then
// middle (a failure, or nothing), then after passing tests, then end.
func goTestV(pkg string, before, after int, middle, end string) string {
	var b strings.Builder
	test := func(name string, i int) {
		fmt.Fprintf(&b, "=== RUN   %s%d\n", name, i)
		if i%7 == 0 {
			fmt.Fprintf(&b, "    %s_test.go:%d: checked %d cases\n", strings.ToLower(name), 20+i%50, i*3)
		}
		fmt.Fprintf(&b, "--- PASS: %s%d (0.%02ds)\n", name, i, i%100)
	}
	for i := range before {
		test("TestParse", i)
	}
	b.WriteString(middle)
	for i := range after {
		test("TestRender", i)
	}
	b.WriteString(end)
	return b.String()
}

const (
	goFail = "=== RUN   TestMiddle\n    middle_test.go:42: Parse(\"a,b\") = 1, want 2\n--- FAIL: TestMiddle (0.00s)\n"
	// A panic ends its package's run: its stack, then the package's FAIL,
	// then the next package (`go test -v ./...`).
	goPanic = "=== RUN   TestMiddle\n" +
		"panic: runtime error: index out of range [3] with length 2 [recovered]\n" +
		"\tpanic: runtime error: index out of range [3] with length 2\n\n" +
		"goroutine 21 [running]:\n" +
		"testing.tRunner.func1.2({0x5c1f00, 0xc0000a2018})\n\t/usr/local/go/src/testing/testing.go:1632 +0x230\n" +
		"example.com/a.split(...)\n\t/src/a/split.go:17\n" +
		"example.com/a.TestMiddle(0xc000104b60)\n\t/src/a/middle_test.go:12 +0x1d\n" +
		"FAIL\texample.com/a\t0.214s\n"
	goOK   = "PASS\nok  \texample.com/a\t1.204s\n"
	goFAIL = "FAIL\nFAIL\texample.com/a\t1.204s\nFAIL\n"
)

// plainLog is a long output with nothing salient in it.
func plainLog(lines int) string {
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "2025-06-01T12:%02d:%02d.000Z INFO request %d served in %d ms\n", i/60%60, i%60, i, i%97)
	}
	return b.String()
}

// fit cuts text with a CounterBudgeter, and returns what the Keep it was
// given stored, and how often it was called.
func fit(t *testing.T, set *salience.Set, tokens int, text string) (out string, kept []byte, keeps int) {
	t.Helper()
	b := &intercept.CounterBudgeter{Counter: budget.Default(), Tokens: tokens, Command: "contextd-proxy safe_read", MCPTool: "safe_read",
		Salience: set,
		Keep: func(_ context.Context, _, _ string, whole []byte) (string, error) {
			keeps++
			kept = bytes.Clone(whole)
			return "cabc123", nil
		}}
	o, cut, err := b.Fit(context.Background(), "srv", "test", []byte(text))
	if err != nil || !cut {
		t.Fatalf("Fit: cut %v, %v", cut, err)
	}
	if n := budget.Default().Count(o); n > tokens {
		t.Errorf("%d tokens, budget %d:\n%s", n, tokens, o)
	}
	return string(o), kept, keeps
}

// TestBudgetSalience: with Salience, a wrapped server's result over budget
// shows its failures wherever they sit, as safe_bash's output does;
// without, its head and tail only. The whole text is kept either way.
func TestBudgetSalience(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		tokens int
		// want is in the page with Salience, in neither end of the page
		// without; "" when nothing is salient.
		want string
		// folded: nothing salient, but passing tests' progress is folded.
		folded bool
	}{
		{"fail", goTestV("a", 3000, 3000, goFail, goFAIL), 300, "--- FAIL: TestMiddle (0.00s)", false},
		{"fail 2000", goTestV("a", 3000, 3000, goFail, goFAIL), 2000, "--- FAIL: TestMiddle (0.00s)", false},
		{"panic", goTestV("a", 2000, 0, goPanic, "") + goTestV("b", 0, 2000, "", strings.ReplaceAll(goOK, "/a", "/b")), 300,
			"panic: runtime error: index out of range [3] with length 2", false},
		{"plain", plainLog(8000), 300, "", false},
		{"plain 2000", plainLog(8000), 2000, "", false},
		{"passing", goTestV("a", 3000, 3000, "", goOK), 300, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plain, plainKept, plainKeeps := fit(t, nil, tc.tokens, tc.text)
			got, kept, keeps := fit(t, salience.Default(), tc.tokens, tc.text)
			if string(kept) != tc.text || string(plainKept) != tc.text || keeps != 1 || plainKeeps != 1 {
				t.Errorf("Keep called %d and %d times; kept the whole text: %v, %v", keeps, plainKeeps, string(kept) == tc.text, string(plainKept) == tc.text)
			}
			marker := func(s string) string {
				for _, l := range strings.Split(s, "\n") {
					if strings.Contains(l, "--continue cabc123") {
						return l
					}
				}
				t.Fatalf("no marker line in:\n%s", s)
				return ""
			}
			switch {
			case tc.want != "":
				if strings.Contains(plain, tc.want) {
					t.Fatalf("the failure is in the head or tail without Salience; move it:\n%s", plain)
				}
				if !strings.Contains(got, tc.want) {
					t.Errorf("the failure is not on the page with Salience:\n%s", got)
				}
				if !strings.Contains(got, " of "+commas(strings.Count(tc.text, "\n"))+" (go: ") {
					t.Errorf("no line naming where the failure is:\n%s", got)
				}
				marker(got)
			case tc.folded:
				if got == plain || !strings.Contains(got, " passing tests (lines ") {
					t.Errorf("passing tests' progress not folded:\n%s", got)
				}
				if marker(got) != marker(plain) {
					t.Errorf("folding changed the marker line: %q, not %q", marker(got), marker(plain))
				}
				if budget.Default().Count([]byte(got)) > budget.Default().Count([]byte(plain)) {
					t.Errorf("the folded page is longer than head and tail")
				}
			default:
				if got != plain {
					t.Errorf("nothing salient, yet the page differs from head and tail:\n%s\n---- without Salience:\n%s", got, plain)
				}
			}
		})
	}
}

// commas writes n as the salience labels do (1,234).
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A result that fits is returned as it is, with or without Salience.
func TestBudgetSalienceFits(t *testing.T) {
	text := goTestV("a", 2, 2, goFail, goFAIL)
	for _, set := range []*salience.Set{nil, salience.Default()} {
		b := &intercept.CounterBudgeter{Tokens: 2000, Salience: set,
			Keep: func(context.Context, string, string, []byte) (string, error) {
				t.Error("Keep called for a result that fits")
				return "", nil
			}}
		out, cut, err := b.Fit(context.Background(), "srv", "test", []byte(text))
		if err != nil || cut || string(out) != text {
			t.Errorf("salience %v: cut %v, %v", set != nil, cut, err)
		}
	}
}

// TestBudgetSalienceSession: a wrapped server's tools/call result with a
// failure in its middle comes back, through the engine, showing it.
func TestBudgetSalienceSession(t *testing.T) {
	var kept []byte
	bud := &intercept.CounterBudgeter{Counter: budget.Default(), Tokens: 400, Command: "contextd-proxy safe_read", MCPTool: "safe_read",
		Salience: salience.Default(),
		Keep: func(_ context.Context, _, _ string, text []byte) (string, error) {
			kept = bytes.Clone(text)
			return "cabc123", nil
		}}
	s := newSession(t, &intercept.Options{Budgeter: bud})
	text := goTestV("a", 3000, 3000, goFail, goFAIL)
	s.send(c2s, call(1, "run_tests", `{}`))
	v := s.send(s2c, textResult(1, text))
	if v.Action != relay.Modify || v.Rule != intercept.RuleBudget {
		t.Fatalf("long result: %+v", v)
	}
	var got struct {
		Result struct{ Content []struct{ Type, Text string } }
	}
	if err := json.Unmarshal(v.Raw, &got); err != nil || len(got.Result.Content) != 1 {
		t.Fatalf("%v: %s", err, v.Raw)
	}
	page := got.Result.Content[0].Text
	if n := budget.Default().Count([]byte(page)); n > 400 {
		t.Errorf("%d tokens, budget 400", n)
	}
	for _, want := range []string{"passing tests (lines 1-", "--- FAIL: TestMiddle (0.00s)\n", "--continue cabc123", "FAIL\texample.com/a\t1.204s\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if string(kept) != text {
		t.Errorf("kept %d bytes, not the whole %d", len(kept), len(text))
	}
}
