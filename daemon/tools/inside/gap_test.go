package inside

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// measure agrees with put on any text cut anywhere, from any line (the
// numbers grow from six digits to seven at line 1,000,000).
func TestNumbererMeasure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 2000 {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			b.WriteString(strings.Repeat("x", rng.IntN(4)))
			if rng.IntN(3) > 0 {
				b.WriteByte('\n')
			}
		}
		text := []byte(b.String())
		start := numberer{line: 999_990 + rng.IntN(20), atStart: rng.IntN(2) == 0}
		if i%3 == 0 {
			start.line = 1 + rng.IntN(50)
		}
		// Rendered in random pieces...
		z := start
		var out []byte
		for p := text; len(p) > 0; {
			k := 1 + rng.IntN(len(p))
			out = z.put(out, p[:k])
			p = p[k:]
		}
		// ...and measured whole.
		m := start
		n, lines := m.measure(text)
		if n != int64(len(out)) || lines != int64(bytes.Count(out, []byte{'\n'})) || m != z {
			t.Fatalf("text %q from %+v: measure %d bytes %d lines state %+v; put %d bytes %d lines state %+v",
				text, start, n, lines, m, len(out), bytes.Count(out, []byte{'\n'}), z)
		}
	}
}

// gapFile writes a file of about size bytes whose middle (the gap of a
// windowed read) holds a secret, and returns the workspace root, its
// contents and the secret.
func gapFile(t *testing.T, size int) (*workspace.Root, string, string, string) {
	t.Helper()
	dir := t.TempDir()
	tok := "ghp_" + randAlnum(t, 36)
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%d: event %d ok\n", i, i*7)
		if i == 4000 {
			fmt.Fprintf(&b, "GITHUB_TOKEN=%s\n", tok)
		}
	}
	b.WriteString("no newline at the end")
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root, dir, b.String(), tok
}

// renderPage runs safe_read's page mode and returns the raw bytes it sent.
func renderPage(root *workspace.Root, g toolproto.Gap, skip, n int64) ([]byte, error) {
	var wire bytes.Buffer
	fw := toolproto.NewWriter(&wire)
	err := renderGap(root, toolproto.Op{Tool: "safe_read", Rel: "log.txt", Display: "log.txt", Gap: &g, Skip: skip, N: n}, fw)
	if err != nil {
		return nil, err
	}
	if err := fw.Meta(toolproto.Meta{}); err != nil {
		return nil, err
	}
	var got []byte
	r := &toolproto.Reader{
		OnText: func(p []byte, scrubbed bool) error {
			if scrubbed {
				return errors.New("page mode sent a scrubbed frame")
			}
			got = append(got, p...)
			return nil
		},
		OnSecret: func(toolproto.Secret) error { return errors.New("page mode sent a secret frame") }}
	if _, err := r.Write(wire.Bytes()); err != nil {
		return nil, err
	}
	return got, nil
}

// A long read sends its middle as one gap, in blocks; page mode renders any
// range of it exactly as the whole read would have, and refuses once the
// file's bytes in a block it shows change (not when only other blocks, or
// the rest of the file, do).
func TestGapPages(t *testing.T) {
	root, dir, file, tok := gapFile(t, 3<<20)
	out, gaps, _ := readGaps(t, file, 1, -1, 32<<10, scrub.NewVault())
	if len(gaps) != 1 {
		t.Fatalf("%d gaps, want 1", len(gaps))
	}
	g := gaps[0]
	if !strings.Contains(file[g.From:g.To], tok) {
		t.Fatal("the secret is not in the gap: the test does not test what it says")
	}
	// readGaps rendered the gap from the file into out, as a page would.
	z := numberer{line: g.Line, atStart: g.AtStart}
	whole := z.put(nil, []byte(file[g.From:g.To]))
	if !strings.Contains(out, string(whole)) {
		t.Fatal("the read's output does not hold the gap's rendering")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		skip := rng.Int64N(g.Len)
		n := 1 + rng.Int64N(min(g.Len-skip, 80<<10))
		got, err := renderPage(root, g, skip, n)
		if err != nil {
			t.Fatalf("page %d+%d: %v", skip, n, err)
		}
		if !bytes.Equal(got, whole[skip:skip+n]) {
			t.Fatalf("page %d+%d differs from the read's rendering", skip, n)
		}
	}
	if got, err := renderPage(root, g, 0, g.Len); err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("the whole gap: %v", err)
	}
	for _, bad := range [][2]int64{{-1, 10}, {0, 0}, {g.Len - 5, 10}} {
		if _, err := renderPage(root, g, bad[0], bad[1]); !errors.Is(err, catalog.ErrInternal) {
			t.Errorf("range %v of a %d-byte gap: %v, want an internal error", bad, g.Len, err)
		}
	}

	// An edit before the gap keeps its bytes: pages still come.
	edited := []byte(file)
	edited[0] = 'X'
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := renderPage(root, g, 0, 100); err != nil {
		t.Fatalf("an edit outside the gap refused its pages: %v", err)
	}
	// One byte in the gap's second block: the pages it shows are refused,
	// saying why; the first block's still come.
	if len(g.Blocks) < 3 {
		t.Fatalf("%d blocks in a %d-byte gap", len(g.Blocks), g.To-g.From)
	}
	edited[g.From+g.Block+10] ^= 1
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := renderPage(root, g, g.Blocks[1].At, 100)
	if !errors.Is(err, catalog.ErrUnknownContinuation) || !strings.Contains(err.Error(), "changed since it was read") {
		t.Fatalf("a changed block: %v", err)
	}
	if _, err := renderPage(root, g, g.Blocks[1].At-50, 100); !errors.Is(err, catalog.ErrUnknownContinuation) {
		t.Fatalf("a page across into the changed block: %v", err)
	}
	if got, err := renderPage(root, g, 0, 100); err != nil || !bytes.Equal(got, whole[:100]) {
		t.Fatalf("a page of an unchanged block: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte(file[:g.From+10]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := renderPage(root, g, 0, 100); !errors.Is(err, catalog.ErrUnknownContinuation) {
		t.Fatalf("a truncated file: %v", err)
	}
	os.Remove(filepath.Join(dir, "log.txt"))
	if _, err := renderPage(root, g, 0, 100); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a removed file: %v", err)
	}
}

// The gap works for a selection too (offset and limit): its offsets are the
// file's, not the selection buffer's.
func TestGapSelection(t *testing.T) {
	root, _, file, _ := gapFile(t, 900<<10)
	out, gaps, _ := readGaps(t, file, 3000, 20000, 32<<10, scrub.NewVault())
	if len(gaps) != 1 {
		t.Fatalf("%d gaps, want 1", len(gaps))
	}
	g := gaps[0]
	z := numberer{line: g.Line, atStart: g.AtStart}
	whole := z.put(nil, []byte(file[g.From:g.To]))
	got, err := renderPage(root, g, 0, g.Len)
	if err != nil || !bytes.Equal(got, whole) || !strings.Contains(out, string(whole)) {
		t.Fatalf("selection's gap: %v", err)
	}
	_, nums := unnumber(t, out)
	if nums[0] != 3000 || nums[len(nums)-1] != 3000+20000-1 {
		t.Fatalf("lines %d..%d, want 3000..22999", nums[0], nums[len(nums)-1])
	}
}

// readOp runs readFile on rel of root and returns the output, gaps rendered
// from file.
func readOp(t *testing.T, root *workspace.Root, file string, op toolproto.Op) string {
	t.Helper()
	var wire bytes.Buffer
	fw := toolproto.NewWriter(&wire)
	if err := readFile(root, op, scrubberT(t), fw); err != nil {
		t.Fatal(err)
	}
	fw.Meta(toolproto.Meta{})
	var b strings.Builder
	r := &toolproto.Reader{
		OnText:   func(p []byte, _ bool) error { b.Write(p); return nil },
		OnSecret: func(s toolproto.Secret) error { b.WriteString("<" + s.Rule + ">"); return nil },
		OnGap: func(g toolproto.Gap) error {
			z := numberer{line: g.Line, atStart: g.AtStart}
			b.Write(z.put(nil, []byte(file[g.From:g.To])))
			return nil
		}}
	if _, err := r.Write(wire.Bytes()); err != nil || !r.Complete() {
		t.Fatalf("frames: %v", err)
	}
	return b.String()
}

// A file of a MiB or more is mapped instead of read; the output is the same.
func TestReadMapped(t *testing.T) {
	root, _, file, _ := gapFile(t, 3<<20)
	got := readOp(t, root, file, toolproto.Op{Tool: "safe_read", Rel: "log.txt", Display: "log.txt", Window: 32 << 10})
	want, _, _ := readGaps(t, file, 1, -1, 32<<10, scrub.NewVault())
	// readGaps replaces secrets with the vault's placeholders, readOp with the rule.
	want = regexp.MustCompile(`\[REDACTED:([a-z0-9-]+):[0-9]+\]`).ReplaceAllString(want, "<$1>")
	if got != want {
		t.Fatalf("mapped read differs from the read one: %d bytes against %d", len(got), len(want))
	}
}

// A mapped file that shrinks under the reader fails the read with an error
// saying so, not a crash.
func TestReadMappedShrinks(t *testing.T) {
	err := shrinkUnder(t, 2<<20, func(int64) int64 { return 100 }, func(b []byte) {
		_ = bytes.Count(b, []byte{'\n'}) // touches the lost pages
	})
	if !errors.Is(err, catalog.ErrIO) || !strings.Contains(err.Error(), "shrank while it was read") {
		t.Fatalf("a file truncated under the mapping: %v", err)
	}
	// Other panics are not swallowed.
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	guardFault("x", func() error { panic("boom") })
}

// A gap frame whose numbers do not agree is malformed: the daemon keeps only
// frames a page can act on.
func TestGapFrameValid(t *testing.T) {
	_, _, file, _ := gapFile(t, 3<<20)
	_, gaps, _ := readGaps(t, file, 1, -1, 32<<10, scrub.NewVault())
	good := gaps[0]
	if !good.Valid() {
		t.Fatalf("the tool's own frame is invalid: %+v", good)
	}
	for name, spoil := range map[string]func(g *toolproto.Gap){
		"empty range":     func(g *toolproto.Gap) { g.To = g.From },
		"negative from":   func(g *toolproto.Gap) { g.From = -1 },
		"short rendering": func(g *toolproto.Gap) { g.Len = g.To - g.From - 1 },
		"line 0":          func(g *toolproto.Gap) { g.Line = 0 },
		"no block size":   func(g *toolproto.Gap) { g.Block = 0 },
		"a block missing": func(g *toolproto.Gap) { g.Blocks = g.Blocks[1:] },
		"blocks out of order": func(g *toolproto.Gap) {
			g.Blocks = append([]toolproto.GapBlock(nil), g.Blocks...)
			g.Blocks[1].At, g.Blocks[2].At = g.Blocks[2].At, g.Blocks[1].At
		},
		"block past the end": func(g *toolproto.Gap) {
			g.Blocks = append([]toolproto.GapBlock(nil), g.Blocks...)
			g.Blocks[len(g.Blocks)-1].At = g.Len
		},
		"first block elsewhere": func(g *toolproto.Gap) {
			g.Blocks = append([]toolproto.GapBlock(nil), g.Blocks...)
			g.Blocks[0].Line++
		},
	} {
		g := good
		spoil(&g)
		if g.Valid() {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The salience pass over a read's middle runs only when the daemon asks for
// it, and with the user's rules after the built-in table.
func TestReadGapSalience(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "=== RUN   TestCase%d\n--- PASS: TestCase%d (0.00s)\n", i, i)
		if i == 5000 {
			b.WriteString("    case_test.go:12: got 3, want 4\n--- FAIL: TestMiddle (0.01s)\n")
		}
		if i == 9000 {
			b.WriteString("QUIRK-42 the flux capacitor drifted\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, c := range []struct {
		name      string
		sal       *toolproto.Salience
		want, not []string
	}{
		{"off", nil, nil, []string{"--- FAIL: TestMiddle", "QUIRK-42"}},
		{"built-in", &toolproto.Salience{}, []string{"--- FAIL: TestMiddle"}, []string{"QUIRK-42"}},
		{"user rule", &toolproto.Salience{Rules: []toolproto.SalienceRule{{Name: "quirk", Pattern: `QUIRK-[0-9]+`}}},
			[]string{"--- FAIL: TestMiddle", "QUIRK-42"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var wire bytes.Buffer
			fw := toolproto.NewWriter(&wire)
			op := toolproto.Op{Tool: "safe_read", Rel: "log.txt", Display: "log.txt", Window: 32 << 10, Salience: c.sal}
			if err := readFile(root, op, scrubberT(t), fw); err != nil {
				t.Fatal(err)
			}
			fw.Meta(toolproto.Meta{})
			var shown strings.Builder
			gaps := 0
			r := &toolproto.Reader{
				OnText:   func([]byte, bool) error { return nil },
				OnSecret: func(toolproto.Secret) error { return nil },
				OnGap: func(g toolproto.Gap) error {
					gaps++
					for _, s := range g.Salient {
						shown.WriteString(s.Text)
					}
					return nil
				}}
			if _, err := r.Write(wire.Bytes()); err != nil || !r.Complete() || gaps != 1 {
				t.Fatalf("frames: %v, %d gaps", err, gaps)
			}
			for _, w := range c.want {
				if !strings.Contains(shown.String(), w) {
					t.Errorf("the gap's salient blocks lack %q:\n%s", w, shown.String())
				}
			}
			for _, w := range c.not {
				if strings.Contains(shown.String(), w) {
					t.Errorf("the gap's salient blocks show %q:\n%s", w, shown.String())
				}
			}
		})
	}
	// A rule the daemon would have refused fails the read, naming it.
	op := toolproto.Op{Tool: "safe_read", Rel: "log.txt", Display: "log.txt", Window: 32 << 10,
		Salience: &toolproto.Salience{Rules: []toolproto.SalienceRule{{Name: "bad", Pattern: `(`}}}}
	if err := readFile(root, op, scrubberT(t), toolproto.NewWriter(io.Discard)); !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("a bad rule: %v", err)
	}
}

// The sparse salience scan reads a long middle on two goroutines; a file
// cut short under it still comes back as the read's error, not as the end
// of the tool.
func TestReadMappedShrinksDuringScan(t *testing.T) {
	// Cut short at the start and near the end. (That the other
	// goroutine's fault comes back is TestSparseHalfPanics's: here the
	// sample of the text the search starts with faults first.)
	for _, cut := range []int64{4<<20 - 100, 32 << 10} {
		err := shrinkUnder(t, 4<<20, func(n int64) int64 { return n - cut }, func(b []byte) {
			salience.Default().ScanFailures(b)
		})
		if !errors.Is(err, catalog.ErrIO) || !strings.Contains(err.Error(), "shrank while it was read") {
			t.Fatalf("a file cut by %d bytes under the sparse scan: %v", cut, err)
		}
	}
}

// shrinkUnder maps a log of size bytes, cuts it to keep(its length) and
// has touch read the mapping, under guardFault; it returns guardFault's
// error.
func shrinkUnder(t *testing.T, size int, keep func(n int64) int64, touch func(b []byte)) error {
	t.Helper()
	_, dir, file, _ := gapFile(t, size)
	p := filepath.Join(dir, "log.txt")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return guardFault("log.txt", func() error {
		b, release, err := mapWhole(f)
		if b == nil || err != nil {
			t.Fatalf("a %d-byte file was not mapped: %v", len(file), err)
		}
		defer release()
		if err := os.Truncate(p, keep(int64(len(file)))); err != nil {
			t.Fatal(err)
		}
		touch(b)
		return nil
	})
}
