package budget

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer"
)

// cl100kPattern is the library's split pattern for cl100k_base, written out
// again so that the test can compare pieces, not only counts.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var splitRE = regexp2.MustCompile(cl100kPattern, regexp2.None)

// libraryPieces splits s with the library's pattern.
func libraryPieces(t testing.TB, s string) []string {
	var out []string
	m, err := splitRE.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = splitRE.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ourPieces splits an ASCII text the way Count does: segments, then pieces.
func ourPieces(s string) []string {
	var out []string
	b := []byte(s)
	for len(b) > 0 {
		seg, _ := nextSegment(b)
		b = b[len(seg):]
		for len(seg) > 0 {
			if seg[0] == del {
				seg = seg[1:]
				continue
			}
			n := asciiPiece(seg)
			out = append(out, string(seg[:n]))
			seg = seg[n:]
		}
	}
	return out
}

func libraryCodec(t testing.TB) tokenizer.Codec {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	return codec
}

// check compares Count (split, cached) with the library's count of s, and for
// ASCII text the pieces too.
func check(t testing.TB, c *Counter, codec tokenizer.Codec, s string) {
	t.Helper()
	want, err := codec.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Count([]byte(s)); got != want {
		t.Fatalf("Count(%q) = %d, the library counts %d", s, got, want)
	}
	if isASCIIString(s) {
		if got, want := ourPieces(s), libraryPieces(t, s); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Fatalf("pieces of %q:\n got  %q\n want %q", s, got, want)
		}
	}
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Every string of up to three symbols from an alphabet that holds each case
// the pattern tells apart (contractions in both cases, letters, digits, each
// kind of whitespace, punctuation, controls, DEL, and non-ASCII letters and
// spaces), and of four from its core, is split and counted as the library
// does.
func TestSplitExhaustive(t *testing.T) {
	c, codec := New(Encoding), libraryCodec(t)
	var rec func(alphabet []string, prefix string, depth int)
	rec = func(alphabet []string, prefix string, depth int) {
		if prefix != "" {
			check(t, c, codec, prefix)
		}
		if depth == 0 {
			return
		}
		for _, a := range alphabet {
			rec(alphabet, prefix+a, depth-1)
		}
	}
	rec([]string{"'", "s", "R", "e", "l", "x", "1", " ", "\t", "\n", "\r", "\v", ".", "\x01", "\x7f", "é", "\u00a0"}, "", 3)
	rec([]string{"'", "s", "l", "x", "1", " ", "\n", "\r", "."}, "", 4)
}

// Random ASCII over every byte value, weighted towards what the pattern
// cares about, and random mixed text with multi-byte characters.
func TestSplitRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	c, codec := New(Encoding), libraryCodec(t)
	hot := "'sStTrReEvVlLmMdD  \t\n\n\r\v\f0123456789.,;:{}()=_-\"\\"
	for range 2000 {
		var b strings.Builder
		for n := rng.IntN(120); n > 0; n-- {
			if rng.IntN(3) == 0 {
				b.WriteByte(byte(rng.IntN(128)))
			} else {
				b.WriteByte(hot[rng.IntN(len(hot))])
			}
		}
		check(t, c, codec, b.String())
	}
	for range 150 {
		check(t, c, codec, string(randomText(rng, 2000, rng.IntN(4) == 0)))
	}
}

// Real source code, counted file by file, twice (the second time from the
// cache), as the library counts it.
func TestSplitGoSource(t *testing.T) {
	root, err := goroot()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "src", "net", "http", "*.go"))
	if len(files) < 20 {
		t.Fatalf("Go's source not found under %s", root)
	}
	c, codec := New(Encoding), libraryCodec(t)
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := codec.Count(string(b))
		for range 2 {
			if got := c.Count(b); got != want {
				t.Fatalf("%s: Count %d, the library counts %d", f, got, want)
			}
		}
		total += len(b)
	}
	t.Logf("%d files, %d bytes: counts equal", len(files), total)
}

// The cache starts again when full, and counts stay exact across.
func TestSplitCacheBound(t *testing.T) {
	c, codec := New(Encoding), libraryCodec(t)
	var b strings.Builder
	for i := range pieceCacheMax + 100 {
		b.WriteString(" w")
		for n := i; n > 0; n /= 26 {
			b.WriteByte(byte('a' + n%26))
		}
	}
	check(t, c, codec, b.String())
	if n := len(c.cache.m); n > pieceCacheMax {
		t.Fatalf("cache holds %d pieces, bound %d", n, pieceCacheMax)
	}
	check(t, c, codec, "after the reset: the same words w a b c\n")
}

// Output is untrusted text: whatever it holds, Count agrees with the library.
func FuzzSplitCount(f *testing.F) {
	for _, s := range []string{"", "it's", "I'LL", "x  \n\n  y", "a\r\n\tb", "  1234567", " .,\n\nfoo", "é\n x", "\xff\xfe'S", "\u00a0\n\u0085"} {
		f.Add(s)
	}
	c, codec := New(Encoding), libraryCodec(f)
	f.Fuzz(func(t *testing.T, s string) {
		check(t, c, codec, s)
	})
}

// A text counted once is counted again from the cache alone, even after
// another text filled much of it; each new piece goes to the library once
// per count, however often it occurs.
func TestSplitCacheKeepsHits(t *testing.T) {
	c, rec := newRecording(t)
	c.split = true
	var a, b strings.Builder
	for i := range 20000 { // 20,000 distinct words: most of the cache
		w := []byte("id")
		for n := i; n > 0; n /= 26 {
			w = append(w, byte('a'+n%26))
		}
		fmt.Fprintf(&a, "%s := call(x)\n", w)
	}
	for i := range 5000 {
		fmt.Fprintf(&b, "%6d\tGET /api/items/%d 200 ok\n", i+1, i%50)
	}
	c.Count([]byte(a.String()))
	before := rec.calls.Load()
	c.Count([]byte(b.String()))
	first := rec.calls.Load() - before
	if pieces := len(ourPieces(b.String())); first == 0 || first > 1100 {
		t.Fatalf("first count of b: %d library calls for %d pieces", first, pieces)
	}
	before = rec.calls.Load()
	for range 3 {
		c.Count([]byte(b.String()))
	}
	if n := rec.calls.Load() - before; n != 0 {
		t.Fatalf("b counted again: %d library calls, want none", n)
	}
}
