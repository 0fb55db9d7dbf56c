package respond

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/scrub"
)

var shared = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

type fixture struct {
	layer   *Layer
	counter *budget.Counter
	store   *pages.Store
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	sc, err := shared()
	if err != nil {
		t.Fatal(err)
	}
	st, err := pages.Open(&pages.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{layer: &Layer{Scrubber: sc, Vault: scrub.NewVault()}, counter: budget.Default(), store: st}
}

func token(t *testing.T) string {
	const set = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 36)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = set[int(b[i])%len(set)]
	}
	return "ghp_" + string(b)
}

// run writes out to a Pipe in pieces of chunk bytes and returns what the
// caller got and the summary.
func (f *fixture) run(t testing.TB, out []byte, tokens, chunk int) ([]byte, Summary) {
	return f.runWith(t, out, tokens, chunk, nil)
}

// runWith is run with a salience set (nil: none).
func (f *fixture) runWith(t testing.TB, out []byte, tokens, chunk int, set *salience.Set) ([]byte, Summary) {
	t.Helper()
	var got bytes.Buffer
	p := New(Options{Layer: f.layer, Counter: f.counter, Budget: tokens, Store: f.store, Salience: set,
		Session: "s1", Tool: "safe_bash", Send: func(b []byte) error { got.Write(b); return nil }})
	for b := out; len(b) > 0; {
		n := min(chunk, len(b))
		if _, err := p.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	sum, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	return got.Bytes(), sum
}

// An output within the budget goes out whole, scrubbed, not truncated, with
// the exact token count.
func TestSmallOutputWhole(t *testing.T) {
	f := newFixture(t)
	tok := token(t)
	out := []byte("build ok\nGITHUB_TOKEN=" + tok + "\ndone")
	got, sum := f.run(t, out, 2000, 5)
	if sum.Truncated || sum.Continue != "" || sum.Bytes != int64(len(out)) {
		t.Fatalf("summary %+v", sum)
	}
	want := strings.Replace(string(out), tok, "[REDACTED:github-pat:1]", 1)
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if n := f.counter.Count(got); sum.TokensUsed != n {
		t.Errorf("tokens_used %d, counted %d", sum.TokensUsed, n)
	}
	if f.layer.Catches["github-pat"] != 1 {
		t.Errorf("second layer catches %v", f.layer.Catches)
	}
}

// A large output comes back as head, marker and tail within the budget; the
// pages, each within the budget, concatenate to the whole output scrubbed,
// secrets on page edges included.
func TestPagesReassemble(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	var toks []string
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, "%07d compiling package number %d\n", i, i*7)
		if i%997 == 0 {
			tk := token(t)
			toks = append(toks, tk)
			fmt.Fprintf(&b, "export GITHUB_TOKEN=%s\n", tk)
		}
	}
	out := []byte(b.String())
	const tokens = 3000
	got, sum := f.run(t, out, tokens, 32<<10)
	if !sum.Truncated || sum.Continue == "" {
		t.Fatalf("not truncated: %+v", sum)
	}
	if sum.TokensUsed > tokens || sum.TokensUsed != f.counter.Count(got) {
		t.Fatalf("first response: %d tokens (counted %d), budget %d", sum.TokensUsed, f.counter.Count(got), tokens)
	}
	if !bytes.HasPrefix(got, out[:30]) || !bytes.Contains(got, []byte("--continue "+sum.Continue)) {
		t.Fatalf("first response is not head + marker:\n%.300s", got)
	}
	last := out[bytes.LastIndexByte(out[:len(out)-1], '\n')+1:]
	if !bytes.HasSuffix(got, last) {
		t.Fatalf("first response does not end with the tail %q", last)
	}
	for _, tk := range toks {
		if bytes.Contains(got, []byte(tk)) {
			t.Fatal("a secret left in the first response")
		}
	}

	var all bytes.Buffer
	ref, n := sum.Continue, 0
	for ref != "" {
		pg, err := Page(f.store, f.layer, f.counter, "s1", ref, tokens, nil)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		if pg.Tokens > tokens || pg.Tokens != f.counter.Count(pg.Data) || len(pg.Data) == 0 {
			t.Fatalf("page %d: %d tokens (counted %d), %d bytes; budget %d", n, pg.Tokens, f.counter.Count(pg.Data), len(pg.Data), tokens)
		}
		if pg.HasMore != (pg.Next != "") {
			t.Fatalf("page %d: has_more %v, next %q", n, pg.HasMore, pg.Next)
		}
		all.Write(pg.Data)
		ref = pg.Next
		n++
	}
	// The whole output scrubbed at once, with the same session's vault.
	want := f.layer.Scrub(out)
	if !bytes.Equal(all.Bytes(), want) {
		i := 0
		for i < min(all.Len(), len(want)) && all.Bytes()[i] == want[i] {
			i++
		}
		t.Fatalf("%d pages reassemble to %d bytes, want %d; first difference at %d: %q vs %q",
			n, all.Len(), len(want), i, all.Bytes()[i:min(all.Len(), i+80)], want[i:min(len(want), i+80)])
	}
	for _, tk := range toks {
		if bytes.Contains(all.Bytes(), []byte(tk)) {
			t.Fatal("a secret left in the pages")
		}
	}
	t.Logf("%d bytes: first response %d tokens, %d pages", len(out), sum.TokensUsed, n)

	// Pages belong to their session.
	if _, err := Page(f.store, f.layer, f.counter, "s2", sum.Continue, tokens, nil); !errors.Is(err, pages.ErrUnknown) {
		t.Errorf("another session's page: %v", err)
	}
}

// A secret that the page cut would split is moved to one page whole.
func TestPageEdgeSecret(t *testing.T) {
	f := newFixture(t)
	tk := token(t)
	line := strings.Repeat("x", 60) + "\n"
	out := []byte(strings.Repeat(line, 2000) + "key " + tk + " end\n" + strings.Repeat(line, 2000))
	e, err := f.store.Create("s1", "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	e.Write(out)
	ref, err := e.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for ref != "" {
		pg, err := Page(f.store, f.layer, f.counter, "s1", ref, budget.MinBudget, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(pg.Data, []byte(tk[:10])) {
			t.Fatalf("part of the secret in a page: %q", pg.Data)
		}
		all.Write(pg.Data)
		ref = pg.Next
	}
	if !bytes.Equal(all.Bytes(), f.layer.Scrub(out)) {
		t.Fatal("pages do not reassemble")
	}
}

// An output with a hole (the middle of a long read, not sent by the tool)
// is answered with head, marker and tail; its pages, the hole's parts made
// by the fill function, reassemble to the whole output scrubbed, the secrets
// of the hole and those on its edges included.
func TestHolePages(t *testing.T) {
	f := newFixture(t)
	var head, middle, tail strings.Builder
	var toks []string
	for i := 0; head.Len() < 40<<10; i++ {
		fmt.Fprintf(&head, "%6d\thead line %d\n", i+1, i)
	}
	for i := 0; middle.Len() < 2<<20; i++ {
		fmt.Fprintf(&middle, "%6d\tmiddle line %d of a log\n", i+1, i)
		if i%5000 == 17 {
			tk := token(t)
			toks = append(toks, tk)
			fmt.Fprintf(&middle, "token=%s\n", tk)
		}
	}
	for i := 0; tail.Len() < 40<<10; i++ {
		fmt.Fprintf(&tail, "%6d\ttail line %d\n", i+1, i)
	}
	hole := []byte(middle.String())
	var got bytes.Buffer
	const tokens = 2000
	p := New(Options{Layer: f.layer, Counter: f.counter, Budget: tokens, Store: f.store,
		Session: "s1", Tool: "safe_read", Send: func(b []byte) error { got.Write(b); return nil }})
	p.Write([]byte(head.String()))
	if err := p.Hole(int64(len(hole)), int64(bytes.Count(hole, []byte{'\n'})), []byte(`{"src":1}`)); err != nil {
		t.Fatal(err)
	}
	p.Write([]byte(tail.String()))
	sum, err := p.Close()
	if err != nil {
		t.Fatal(err)
	}
	whole := []byte(head.String() + middle.String() + tail.String())
	if !sum.Truncated || sum.Bytes != int64(len(whole)) || sum.TokensUsed > tokens || sum.TokensUsed != f.counter.Count(got.Bytes()) {
		t.Fatalf("summary %+v for %d bytes, first response %d tokens", sum, len(whole), f.counter.Count(got.Bytes()))
	}
	lines := bytes.Count(whole, []byte{'\n'}) - bytes.Count(got.Bytes(), []byte{'\n'}) + 1
	if !bytes.HasPrefix(got.Bytes(), whole[:100]) || !bytes.HasSuffix(got.Bytes(), whole[len(whole)-100:]) ||
		!bytes.Contains(got.Bytes(), []byte(fmt.Sprintf("... %s lines", groupDigits(lines)))) {
		t.Fatalf("first response is not head, marker (%d lines), tail:\n%.200s\n...\n%s", lines, got.Bytes(),
			got.Bytes()[max(0, got.Len()-300):])
	}
	fills := 0
	fill := func(source []byte, off int64, b []byte) error {
		fills++
		if string(source) != `{"src":1}` {
			return fmt.Errorf("source %q", source)
		}
		copy(b, hole[off:])
		return nil
	}
	var all bytes.Buffer
	for ref, n := sum.Continue, 0; ref != ""; n++ {
		pg, err := Page(f.store, f.layer, f.counter, "s1", ref, tokens, fill)
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		if pg.Tokens > tokens {
			t.Fatalf("page %d: %d tokens", n, pg.Tokens)
		}
		all.Write(pg.Data)
		ref = pg.Next
	}
	if want := f.layer.Scrub(whole); !bytes.Equal(all.Bytes(), want) {
		t.Fatalf("pages reassemble to %d bytes, want %d", all.Len(), len(want))
	}
	for _, tk := range toks {
		if bytes.Contains(all.Bytes(), []byte(tk)) {
			t.Fatal("a secret of the hole in a page")
		}
	}
	if fills == 0 {
		t.Fatal("no page read the hole")
	}
	// Without a way to fill the hole, a page in it fails.
	if _, err := Page(f.store, f.layer, f.counter, "s1", pages.FormatRef(sum.Continue[1:], int64(head.Len()+10)), tokens, nil); !errors.Is(err, pages.ErrNoFill) {
		t.Fatalf("a page in the hole without fill: %v", err)
	}
}

// groupDigits writes n as the marker does (1,234).
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
