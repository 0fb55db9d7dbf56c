//go:build e2e

package salcorpus

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// margin is how far from both ends of a log its failure lines must be: a
// first page of head and tail would not show them without the salience pass.
const margin = 4 << 10

// slow are the cases that download or compile a lot; -short skips them.
var slow = map[string]bool{"go-assert": true, "go-panic": true, "go-compile": true, "go-pass-verbose": true, "ci-script": true, "npm-install": true, "cargo": true, "mocha": true}

// TestGenerate really generates the corpus (a few minutes with cold caches)
// and checks each log: large, its failure lines away from both ends, the
// passing run passing. SALCORPUS_KEEP=DIR keeps the scratch directory there.
func TestGenerate(t *testing.T) {
	var only []string
	if testing.Short() {
		for _, n := range Names {
			if !slow[n] {
				only = append(only, n)
			}
		}
	}
	dir := t.TempDir()
	if d := os.Getenv("SALCORPUS_KEEP"); d != "" {
		dir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	g := &Generator{Logf: t.Logf}
	cases, skipped, err := g.Generate(ctx, dir, only...)
	if err != nil {
		t.Fatal(err)
	}
	for name, why := range skipped {
		t.Logf("skipped %s: %s", name, why)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) { checkCase(t, c) })
	}
	for _, n := range Names {
		if !seen[n] && skipped[n] == "" && (len(only) == 0 || contains(only, n)) {
			t.Errorf("%s: neither generated nor skipped", n)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func checkCase(t *testing.T, c Case) {
	lines := bytes.Count(c.Log, []byte("\n"))
	t.Logf("%s: %d lines, %d bytes, exit %d, ran %s: %s", c.Name, lines, len(c.Log), c.ExitCode, c.Took.Round(time.Millisecond), c.Command)
	if len(c.Log) <= 8<<10 {
		t.Errorf("log of %d bytes, want over 8 KB:\n%s", len(c.Log), c.Log)
	}
	if c.Passing {
		if c.ExitCode != 0 || len(c.Failure) != 0 {
			t.Errorf("passing run exited %d with failure lines %q", c.ExitCode, c.Failure)
		}
		if !bytes.Contains(c.Log, []byte("\nok  \t")) || bytes.Contains(c.Log, []byte("--- FAIL")) {
			t.Errorf("the passing run's log does not read as a passing go test run:\n%s", tail(c.Log, 2000))
		}
		return
	}
	if c.ExitCode == 0 {
		t.Errorf("run with an injected failure exited 0")
	}
	if len(c.Failure) == 0 {
		t.Fatal("no failure lines")
	}
	for _, f := range c.Failure {
		where := placements(c.Log, f)
		if len(where) == 0 {
			t.Errorf("failure %q is on no line of the log", f)
			continue
		}
		ok := false
		for _, w := range where {
			ok = ok || (w.start >= margin && w.end <= len(c.Log)-margin)
		}
		if !ok {
			t.Errorf("failure %q only within %d bytes of an end of the %d-byte log (lines %v)", f, margin, len(c.Log), where)
		} else {
			t.Logf("  failure at line %d/%d: %s", where[0].line, lines, f)
		}
	}
}

type place struct{ line, start, end int }

// placements are the lines of log (1-based, with their byte span) that
// contain s.
func placements(log []byte, s string) []place {
	var out []place
	off := 0
	for i, l := range strings.SplitAfter(string(log), "\n") {
		if strings.Contains(l, s) {
			out = append(out, place{i + 1, off, off + len(l)})
		}
		off += len(l)
	}
	return out
}

func TestPick(t *testing.T) {
	log := []byte("a\n  --- FAIL: TestX (0.00s)\nb\n")
	got, err := pick(log, `--- FAIL: `)
	if err != nil || len(got) != 1 || got[0] != "--- FAIL: TestX (0.00s)" {
		t.Fatalf("pick = %q, %v", got, err)
	}
	if _, err := pick(log, `nothing`); err == nil {
		t.Fatal("pick found a line for a pattern that matches none")
	}
}
