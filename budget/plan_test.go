package budget

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// testRef is as long as a real continuation reference.
const testRef = "c0123456789abcdef0123456789abcdef"

func mark(g Gap) string { return Marker(g.Lines, g.Bytes(), testRef, "safe_bash") }

// checkCut checks what Plan and PlanEnds must guarantee, for an output whose
// windows were not changed (so they are the output's bytes).
func checkCut(t *testing.T, c *Counter, output []byte, budget int, cut Cut) {
	t.Helper()
	budget = max(budget, MinBudget)
	if got := c.Count(cut.Data); got != cut.Tokens {
		t.Fatalf("Tokens = %d, Data counts %d", cut.Tokens, got)
	}
	if cut.Tokens > budget {
		t.Fatalf("Tokens = %d > budget %d", cut.Tokens, budget)
	}
	if !cut.Truncated {
		if !bytes.Equal(cut.Data, output) {
			t.Fatalf("not truncated, but Data is not the output")
		}
		return
	}
	hl, tl := cut.HeadLen, cut.TailLen
	if int64(hl) != cut.Gap.Start || int64(len(output)-tl) != cut.Gap.End || cut.Gap.Bytes() <= 0 {
		t.Fatalf("Gap %+v does not match HeadLen %d, TailLen %d of %d bytes", cut.Gap, hl, tl, len(output))
	}
	head, tail := output[:hl], output[len(output)-tl:]
	if hl > 0 && head[hl-1] != '\n' && bytes.IndexByte(head, '\n') >= 0 {
		t.Fatalf("head ends inside a line that is not the first")
	}
	if tl > 0 && int64(len(output)-tl) > 0 && output[len(output)-tl-1] != '\n' &&
		bytes.IndexByte(tail[:tl-1], '\n') >= 0 {
		t.Fatalf("tail starts inside a line that is not the last")
	}
	sep := ""
	if hl > 0 && head[hl-1] != '\n' {
		sep = "\n"
	}
	gap := output[cut.Gap.Start:cut.Gap.End]
	lines := bytes.Count(gap, []byte{'\n'})
	if gap[len(gap)-1] != '\n' {
		lines++
	}
	if cut.Gap.Lines != lines {
		t.Fatalf("Gap.Lines = %d, the gap has %d", cut.Gap.Lines, lines)
	}
	want := string(head) + sep + mark(cut.Gap) + string(tail)
	if string(cut.Data) != want {
		t.Fatalf("Data is not head, marker, tail:\n%s", trunc(cut.Data))
	}
}

func TestPlan(t *testing.T) {
	c := Default()
	rng := rand.New(rand.NewPCG(7, 8))
	big := randomText(rng, 10<<20, true)
	tests := []struct {
		name      string
		text      []byte
		budget    int
		truncated bool
	}{
		{name: "empty", text: nil, budget: 2000},
		{name: "fits", text: []byte("ok\n"), budget: 2000},
		{name: "fits exactly", text: bytes.Repeat([]byte("line of text\n"), 100), budget: 400},
		{name: "10 MB", text: big, budget: 2000, truncated: true},
		{name: "search budget", text: big[:1<<20], budget: 500, truncated: true},
		{name: "budget below minimum", text: big[:100000], budget: 1, truncated: true},
		{name: "one long line", text: []byte(strings.Repeat("token ", 100000)), budget: 2000, truncated: true},
		{name: "long first and last lines", text: []byte(strings.Repeat("a€ ", 30000) + "\nmid\n" + strings.Repeat("b€ ", 30000)),
			budget: 500, truncated: true},
		{name: "empty lines", text: bytes.Repeat([]byte("\n"), 1<<20), budget: 200, truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cut := c.Plan(tt.text, tt.budget, mark)
			checkCut(t, c, tt.text, tt.budget, cut)
			if cut.Truncated != tt.truncated {
				t.Fatalf("Truncated = %v, want %v", cut.Truncated, tt.truncated)
			}
			if !cut.Truncated && len(tt.text) > 0 && &cut.Data[0] != &tt.text[0] {
				t.Errorf("Data is a copy of a text that fits")
			}
			if cut.Truncated && cut.Tokens < max(tt.budget, MinBudget)*3/4 {
				t.Errorf("Tokens = %d: a cut should use most of the budget %d", cut.Tokens, tt.budget)
			}
		})
	}
}

// TestPlanRandom checks Plan, and PlanEnds on windows read with ReadEnds,
// on random outputs and budgets.
func TestPlanRandom(t *testing.T) {
	c := Default()
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 30 {
		text := randomText(rng, rng.IntN(300000), i%2 == 0)
		budget := rng.IntN(3000)
		checkCut(t, c, text, budget, c.Plan(text, budget, mark))

		head, tail, err := ReadEnds(bytes.NewReader(text), int64(len(text)), Window(budget))
		if err != nil {
			t.Fatal(err)
		}
		cut := c.PlanEnds(head, tail, int64(len(text)), int64(bytes.Count(text, []byte{'\n'})), budget, mark)
		checkCut(t, c, text, budget, cut)
	}
}

// TestPlanEndsOverlap gives PlanEnds windows that overlap.
func TestPlanEndsOverlap(t *testing.T) {
	c := Default()
	rng := rand.New(rand.NewPCG(11, 12))
	text := randomText(rng, 40000, false)
	nl := int64(bytes.Count(text, []byte{'\n'}))
	for _, w := range []int{1000, 15000, 25000, 39999} {
		cut := c.PlanEnds(text[:w], text[len(text)-w:], int64(len(text)), nl, 2000, mark)
		checkCut(t, c, text, 2000, cut)
	}
}

func TestPlanHeadShare(t *testing.T) {
	c := Default()
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog 0123456789\n"), 10000)
	cut := c.Plan(text, 2000, mark)
	head := c.Count(text[:cut.HeadLen])
	tail := c.Count(text[len(text)-cut.TailLen:])
	if head < tail || head > 2*tail {
		t.Errorf("head %d tokens, tail %d: want about %d%% for the head", head, tail, HeadShare)
	}
}

func TestReadEnds(t *testing.T) {
	text := []byte("0123456789")
	for _, tt := range []struct {
		window     int
		head, tail string
	}{
		{window: 3, head: "012", tail: "789"},
		{window: 5, head: "0123456789", tail: "0123456789"},
		{window: 100, head: "0123456789", tail: "0123456789"},
	} {
		h, tl, err := ReadEnds(bytes.NewReader(text), int64(len(text)), tt.window)
		if err != nil || string(h) != tt.head || string(tl) != tt.tail {
			t.Errorf("ReadEnds(%d) = %q, %q, %v; want %q, %q", tt.window, h, tl, err, tt.head, tt.tail)
		}
	}
	if h, tl, err := ReadEnds(bytes.NewReader(nil), 0, 10); err != nil || len(h) != 0 || len(tl) != 0 {
		t.Errorf("ReadEnds of nothing = %q, %q, %v", h, tl, err)
	}
	if _, _, err := ReadEnds(bytes.NewReader(text), 100, 10); err == nil {
		t.Errorf("ReadEnds past the end: no error")
	}
}

// TestPlanBoundedWork checks that Plan on 10 MB tokenizes only near the ends.
func TestPlanBoundedWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	text := randomText(rng, 10<<20, true)
	c, rec := newRecording(t)
	cut := c.Plan(text, 2000, mark)
	if !cut.Truncated {
		t.Fatal("10 MB fit in 2000 tokens")
	}
	if got := rec.bytes.Load(); got > 2000*MaxBytesPerToken*8 {
		t.Errorf("Plan tokenized %d bytes of 10 MB", got)
	}
	t.Logf("tokenized %d kB in %d calls", rec.bytes.Load()>>10, rec.calls.Load())
}
