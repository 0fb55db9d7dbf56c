//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The default budget, as a new user gets it: no max_tokens in the
// configuration. A long output's first response is its head, one marker line
// and its tail, and the tail is the output's own last lines, where test
// runners print their verdict. Checked on seq and on logs that real test
// runners (node's and Python's) wrote, read through safe_bash and safe_read.
func TestBudgetDefault(t *testing.T) {
	// The suite's timers stay; the budgets are the defaults.
	swapConfig(t, func(string) string {
		return "idle_timeout = \"10m\"\ndrain_timeout = \"1s\"\nlog_level = \"debug\"\n"
	})

	// seq, in the text format an agent reads, at the default and a smaller budget.
	for _, args := range [][]string{{"seq 1 100000"}, {"--max-tokens", "500", "seq 1 100000"}} {
		r := tool(t, "safe_bash", "", args...)
		mustCode(t, r, 0)
		marker := strings.Index(r.stdout, " left out ... the full output, page by page: safe_bash --continue ")
		end := strings.Index(r.stdout, "99998\n99999\n100000\n")
		if !strings.HasPrefix(r.stdout, "1\n2\n3\n") || marker < 0 || end < marker {
			t.Fatalf("safe_bash %q: the first response is not head, marker and the output's last lines:\n%s", args, tailOf(r.stdout, 400))
		}
		e := jsonTool(t, nil, "safe_bash", "", args...)
		limit := int64(2000)
		if len(args) > 1 {
			limit = 500
		}
		if !e.Truncated || e.TokensUsed > limit || !strings.HasSuffix(e.Data, "99999\n100000\n") {
			t.Fatalf("safe_bash %q --format json: truncated %v, %d tokens of %d, ends %q", args, e.Truncated, e.TokensUsed, limit, tailOf(e.Data, 80))
		}
	}

	// Logs of real test runs, each with one failure among many passing
	// tests; the runner's summary is in its last lines.
	dir := filepath.Join(env.project, "budget-logs")
	mustCode(t, userSh(t, "mkdir -p "+dir), 0)
	t.Cleanup(func() { os.RemoveAll(dir) })
	var nodeTests, pyTests strings.Builder
	nodeTests.WriteString("import test from 'node:test';\nimport assert from 'node:assert/strict';\n")
	pyTests.WriteString("import unittest\n\nclass TestMany(unittest.TestCase):\n")
	for i := 0; i < 400; i++ {
		want := i * 3
		if i == 217 {
			want++ // the one failure, in the middle
		}
		fmt.Fprintf(&nodeTests, "test('multiplies case %d by three', () => { assert.equal(%d * 3, %d); });\n", i, i, want)
		fmt.Fprintf(&pyTests, "    def test_case_%03d(self):\n        self.assertEqual(%d * 3, %d)\n\n", i, i, want)
	}
	writeProjectFile(t, "budget-logs/many.test.mjs", nodeTests.String())
	writeProjectFile(t, "budget-logs/test_many.py", pyTests.String())
	// Both runners exit 1: a test failed.
	mustCode(t, runAs(t, dir, nil, "", "bash", "-c", "node --test --test-reporter=tap many.test.mjs > node-test.log 2>&1"), 1)
	mustCode(t, runAs(t, dir, nil, "", "bash", "-c", "/usr/bin/python3 -m unittest -v test_many > unittest.log 2>&1"), 1)

	for _, c := range []struct{ log, verdict string }{
		{"node-test.log", "# fail 1"},
		{"unittest.log", "FAILED (failures=1)"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, c.log))
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		if !strings.Contains(tailOf(log, 400), c.verdict) {
			t.Fatalf("%s does not end with its runner's verdict %q:\n%s", c.log, c.verdict, tailOf(log, 400))
		}
		lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
		last3 := strings.Join(lines[len(lines)-3:], "\n") + "\n"

		e := jsonTool(t, nil, "safe_bash", "", "cat budget-logs/"+c.log)
		if e.Error != nil || !e.Truncated || e.TokensUsed > 2000 || !strings.HasSuffix(e.Data, last3) || !strings.Contains(e.Data, c.verdict) {
			t.Fatalf("safe_bash 'cat %s': truncated %v, %d tokens; the response does not end with the log's last lines %q:\n%s",
				c.log, e.Truncated, e.TokensUsed, last3, tailOf(e.Data, 600))
		}
		e = jsonTool(t, nil, "safe_read", "", "budget-logs/"+c.log)
		lastNumbered := fmt.Sprintf("%6d\t%s\n", len(lines), lines[len(lines)-1])
		if e.Error != nil || !e.Truncated || e.TokensUsed > 2000 || !strings.HasSuffix(e.Data, lastNumbered) || !strings.Contains(e.Data, c.verdict) {
			t.Fatalf("safe_read %s: truncated %v, %d tokens; the response does not end with the log's last line %q:\n%s",
				c.log, e.Truncated, e.TokensUsed, lastNumbered, tailOf(e.Data, 600))
		}
		if !strings.Contains(e.Data, "left out ... the full output, page by page: safe_read --continue "+e.Continue) {
			t.Fatalf("safe_read %s: no marker line:\n%s", c.log, tailOf(e.Data, 600))
		}
	}
}

// tailOf is the last n bytes of s, for messages.
func tailOf(s string, n int) string {
	return s[max(0, len(s)-n):]
}
