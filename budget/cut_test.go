package budget

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeadTail(t *testing.T) {
	c := Default()
	count := func(s string) int { return c.Count([]byte(s)) }
	tests := []struct {
		name     string
		text     string
		budget   int
		head     string // want text[:n]
		tail     string // want text[start:]
		headCut  bool   // the first line is cut, only check invariants
		tailCut  bool
		skipTail bool
	}{
		{name: "empty", text: "", budget: 100},
		{name: "zero budget", text: "a\nb\n", budget: 0},
		{name: "fits", text: "alpha\nbeta\ngamma\n", budget: 100, head: "alpha\nbeta\ngamma\n", tail: "alpha\nbeta\ngamma\n"},
		{name: "fits without final newline", text: "alpha\nbeta", budget: 100, head: "alpha\nbeta", tail: "alpha\nbeta"},
		{name: "two of three lines", text: "alpha one\nbeta two\ngamma three\n", budget: count("alpha one\nbeta two\n"),
			head: "alpha one\nbeta two\n", skipTail: true},
		{name: "last two lines", text: "alpha one\nbeta two\ngamma three\n", budget: count("beta two\ngamma three\n"),
			tail: "beta two\ngamma three\n", skipTail: false, head: "alpha one\nbeta two\n"},
		{name: "crlf", text: "a b c\r\nd e f\r\ng h i\r\n", budget: count("a b c\r\n"), head: "a b c\r\n", tail: "g h i\r\n"},
		{name: "empty lines merge", text: "}\n\n\n\n}\n\n\n\n}\n", budget: count("}\n\n\n\n"), head: "}\n\n\n\n", skipTail: true},
		{name: "long first line", text: strings.Repeat("word ", 2000) + "\nshort\n", budget: 16, headCut: true, tail: "short\n"},
		{name: "long last line", text: "short\n" + strings.Repeat("word ", 2000), budget: 16, head: "short\n", tailCut: true},
		{name: "multi-byte line", text: strings.Repeat("日本語🙂", 500), budget: 7, headCut: true, tailCut: true},
		{name: "budget below a character", text: "🙂", budget: 1, head: "", tail: ""},
		{name: "invalid utf-8", text: strings.Repeat("\xff\xfe\x80\x80\x80\x80abc", 20) + "\n\xc3", budget: 5, headCut: true, skipTail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := []byte(tt.text)
			n, ht := c.Head(text, tt.budget)
			checkHead(t, c, text, tt.budget, n, ht)
			if tt.headCut {
				if n == 0 || bytes.IndexByte(text[:n], '\n') >= 0 {
					t.Errorf("Head = %q, want a piece of the first line", text[:n])
				}
			} else if got := string(text[:n]); got != tt.head && !(tt.skipTail && tt.head == "") {
				t.Errorf("Head = %q, want %q", got, tt.head)
			}
			start, tt2 := c.Tail(text, tt.budget)
			checkTail(t, c, text, tt.budget, start, tt2)
			if tt.skipTail {
				return
			}
			if tt.tailCut {
				if start == len(text) || bytes.IndexByte(text[start:], '\n') >= 0 {
					t.Errorf("Tail = %q, want a piece of the last line", text[start:])
				}
			} else if got := string(text[start:]); got != tt.tail {
				t.Errorf("Tail = %q, want %q", got, tt.tail)
			}
		})
	}
}

// TestHeadTailRandom checks Head's and Tail's guarantees on random texts,
// including that they are the longest runs: one more line would not fit.
func TestHeadTailRandom(t *testing.T) {
	c := Default()
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 200
	if testing.Short() {
		iters = 50
	}
	notLongest := 0
	for i := range iters {
		text := randomText(rng, rng.IntN(20000), i%3 == 0)
		budget := 4 + rng.IntN(600)
		n, ht := c.Head(text, budget)
		checkHead(t, c, text, budget, n, ht)
		if n > 0 && n < len(text) && text[n-1] == '\n' {
			next := newSide(text, false).next(n)
			if c.Count(text[:next]) <= budget {
				notLongest++
			}
		}
		start, tt := c.Tail(text, budget)
		checkTail(t, c, text, budget, start, tt)
		if start > 0 && start < len(text) && text[start-1] == '\n' {
			k := newSide(text, true).next(len(text) - start)
			if c.Count(text[len(text)-k:]) <= budget {
				notLongest++
			}
		}
	}
	// Longest is best effort (see cut.go), but should almost always hold.
	if notLongest > iters/100 {
		t.Errorf("%d of %d answers could have taken one more line", notLongest, 2*iters)
	}
}

// TestPaging pages texts by repeated Head: every page is within budget and
// the pages put together are the text.
func TestPaging(t *testing.T) {
	c := Default()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		text := randomText(rng, 5000+rng.IntN(40000), i%2 == 0)
		budget := 16 + rng.IntN(800)
		var got []byte
		for off, pages := 0, 0; off < len(text); pages++ {
			n, tokens := c.Head(text[off:], budget)
			checkHead(t, c, text[off:], budget, n, tokens)
			got = append(got, text[off:off+n]...)
			off += n
			if pages > len(text) {
				t.Fatal("paging does not end")
			}
		}
		if !bytes.Equal(got, text) {
			t.Fatalf("pages do not add up to the text (budget %d)", budget)
		}
	}
}

// TestHeadSeams builds texts whose lines merge into fewer tokens together
// than apart, and lines whose count grows when joined, and checks the count is
// exact and within budget.
func TestHeadSeams(t *testing.T) {
	c := Default()
	for _, unit := range []string{"}\n", "\n", "   \n", "x\n\n", ")\n\n\n", "\r\n", " \n \n"} {
		text := []byte(strings.Repeat(unit, 3000))
		for _, budget := range []int{4, 17, 100, 999} {
			n, tokens := c.Head(text, budget)
			checkHead(t, c, text, budget, n, tokens)
			start, tt := c.Tail(text, budget)
			checkTail(t, c, text, budget, start, tt)
		}
	}
}

// TestHeadBoundedWork checks that Head and Tail on a 10 MB text tokenize about
// what fits, not the text.
func TestHeadBoundedWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	normal := randomText(rng, 10<<20, false)
	oneLine := bytes.Repeat([]byte("{\"k\":\"value\",\"n\":12345},"), (10<<20)/24)
	spaces := bytes.Repeat([]byte(" "), 10<<20)
	for name, text := range map[string][]byte{"lines": normal, "one line": oneLine, "spaces": spaces} {
		t.Run(name, func(t *testing.T) {
			c, rec := newRecording(t)
			const budget = 2000
			n, _ := c.Head(text, budget)
			start, _ := c.Tail(text, budget)
			if n == 0 || start == len(text) {
				t.Fatalf("no progress: n = %d, start = %d", n, start)
			}
			// Head never counts more than budget*MaxBytesPerToken bytes at once;
			// the whole search counts a few times that.
			if got, limit := rec.bytes.Load(), int64(budget*MaxBytesPerToken*8); got > limit {
				t.Errorf("tokenized %d bytes in %d calls for a budget of %d, want <= %d", got, rec.calls.Load(), budget, limit)
			}
			t.Logf("tokenized %d kB in %d calls", rec.bytes.Load()>>10, rec.calls.Load())
		})
	}
}

func TestAlign(t *testing.T) {
	text := []byte("a€b") // € is 3 bytes: positions 2 and 3 are inside it
	for k, want := range []int{0, 1, 1, 1, 4, 5} {
		if got := alignPrefix(text, k); got != want {
			t.Errorf("alignPrefix(%d) = %d, want %d", k, got, want)
		}
	}
	s := newSide(text, true)
	for k, want := range []int{0, 1, 1, 1, 4, 5} {
		if got := s.align(k); got != want {
			t.Errorf("tail align(%d) = %d, want %d", k, got, want)
		}
		if got := s.take(s.align(k)); !utf8.Valid(got) {
			t.Errorf("tail take(align(%d)) = %q is not valid", k, got)
		}
	}
}

func FuzzHead(f *testing.F) {
	f.Add([]byte("alpha\nbeta\ngamma\n"), uint16(3))
	f.Add([]byte(strings.Repeat("日本語🙂", 50)), uint16(5))
	f.Add([]byte("}\n\n\n\n}\n\n"), uint16(1))
	f.Add([]byte("\xff\x80\x80\x80\x80\n\xc3"), uint16(0))
	f.Add([]byte(strings.Repeat(" ", 5000)+"\n"), uint16(9))
	c := Default()
	f.Fuzz(func(t *testing.T, text []byte, b uint16) {
		budget := int(b % 2000)
		n, tokens := c.Head(text, budget)
		checkHead(t, c, text, budget, n, tokens)
		start, tt := c.Tail(text, budget)
		checkTail(t, c, text, budget, start, tt)
	})
}

// TestConcurrent loads a fresh vocabulary from many goroutines at once.
func TestConcurrent(t *testing.T) {
	c := New(Encoding)
	text := []byte(strings.Repeat("func main() {\n\tfmt.Println(\"héllo\")\n}\n", 200))
	want := Default().Count(text)
	wantN, _ := Default().Head(text, 300)
	done := make(chan [2]int)
	for range 8 {
		go func() {
			n, _ := c.Head(text, 300)
			done <- [2]int{c.Count(text), n}
		}()
	}
	for range 8 {
		if got := <-done; got != [2]int{want, wantN} {
			t.Errorf("concurrent Count, Head = %v, want %v", got, [2]int{want, wantN})
		}
	}
}

func TestLoad(t *testing.T) {
	if err := Default().Load(); err != nil {
		t.Fatal(err)
	}
	bad := New("no_such_encoding")
	if err := bad.Load(); err == nil {
		t.Fatal("Load of an unknown encoding: no error")
	}
	// A counter that cannot load still never under-counts.
	if got := bad.Count([]byte("abc")); got < 3 {
		t.Errorf("Count without a vocabulary = %d, want an upper bound", got)
	}
}
