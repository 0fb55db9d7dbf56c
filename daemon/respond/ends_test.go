package respond

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// markerRE reads a marker line back: lines and bytes left out, and the ref.
var markerRE = regexp.MustCompile(`(?m)^\.\.\. ([0-9,]+) lines? \(([^)]*)\) left out \.\.\. the full output, page by page: safe_bash --continue (\S+)\n`)

// A first response over its budget is the output's head, one marker line and
// the output's tail, for every output size (held in memory or moved to the
// page store) and every budget, the default among them: the tail is where
// most tools print their verdict. The marker's count of lines left out adds
// up with the head's and the tail's to the whole output.
func TestFirstResponseHasTail(t *testing.T) {
	seq := func(n int) []byte {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d\n", i)
		}
		return []byte(b.String())
	}
	mochaLike := func(n int) []byte {
		var b strings.Builder
		b.WriteString("\n> demo@1.0.0 test\n> mocha\n\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  ✔ case %d returns the expected value (%dms)\n", i, i%7)
		}
		b.WriteString("\n  1 passing\n  1 failing\n\n  1) demo\n       fails:\n     AssertionError: expected 1 to equal 2\n")
		return []byte(b.String())
	}
	cases := []struct {
		name string
		out  []byte
		fair bool // lines are short: the tail can take its share
	}{
		{"seq 1 100000 (in memory)", seq(100000), true},
		{"seq 1 300000 (moved to the page store)", seq(300000), true},
		{"a test log, its verdict last", mochaLike(800), true},
		{"one line over the budget, then a short last line", []byte(strings.Repeat("x", 200000) + "\nverdict: 1 failed\n"), false},
	}
	for _, c := range cases {
		for _, tokens := range []int{100, 150, 500, 2000, 8000} {
			t.Run(fmt.Sprintf("%s/%d", c.name, tokens), func(t *testing.T) {
				f := newFixture(t)
				got, sum := f.run(t, c.out, tokens, 64<<10)
				if !sum.Truncated {
					t.Fatalf("not truncated: %+v", sum)
				}
				if sum.TokensUsed > tokens || sum.TokensUsed != f.counter.Count(got) {
					t.Fatalf("tokens_used %d (counted %d), budget %d", sum.TokensUsed, f.counter.Count(got), tokens)
				}
				m := markerRE.FindSubmatchIndex(got)
				if m == nil {
					t.Fatalf("no marker line in:\n%s", got)
				}
				head, tail := got[:m[0]], got[m[1]:]
				if string(got[m[6]:m[7]]) != sum.Continue {
					t.Errorf("marker names %q, summary %q", got[m[6]:m[7]], sum.Continue)
				}
				if len(tail) == 0 {
					t.Fatalf("no tail after the marker; the response ends:\n%s", got[max(0, len(got)-300):])
				}
				if !bytes.HasPrefix(c.out, head) && !bytes.HasPrefix(c.out, bytes.TrimSuffix(head, []byte("\n"))) {
					t.Fatalf("the head is not the output's start: %.200q", head)
				}
				if !bytes.HasSuffix(c.out, tail) {
					t.Fatalf("the tail is not the output's end: %.200q", tail)
				}
				// Both ends get a fair share: the tail at least a fifth of
				// what the marker leaves.
				if tt := f.counter.Count(tail); c.fair && tokens >= 500 && tt < tokens/5 {
					t.Errorf("the tail has %d tokens of %d", tt, tokens)
				}
				left, _ := strconv.Atoi(strings.ReplaceAll(string(got[m[2]:m[3]]), ",", ""))
				total := bytes.Count(c.out, []byte{'\n'})
				headLines := bytes.Count(head, []byte{'\n'})
				tailLines := bytes.Count(tail, []byte{'\n'})
				if len(head) > 0 && !bytes.HasSuffix(c.out[:len(head)], []byte{'\n'}) {
					headLines-- // the head was cut inside its last line, which the marker counts
				}
				if headLines+left+tailLines != total && headLines+left+tailLines != total+1 {
					t.Errorf("head %d + left out %d + tail %d lines, the output has %d", headLines, left, tailLines, total)
				}
			})
		}
	}
}
