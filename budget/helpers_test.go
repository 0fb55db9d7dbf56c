package budget

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// recording wraps a codec to see how much text a search tokenizes.
type recording struct {
	tokenizer.Codec
	bytes atomic.Int64
	calls atomic.Int64
}

func (r *recording) Count(s string) (int, error) {
	r.bytes.Add(int64(len(s)))
	r.calls.Add(1)
	return r.Codec.Count(s)
}

// newRecording returns a Counter that records what it tokenizes.
func newRecording(t testing.TB) (*Counter, *recording) {
	t.Helper()
	inner, err := Default().codec()
	if err != nil {
		t.Fatal(err)
	}
	r := &recording{Codec: inner}
	return &Counter{enc: Encoding, codec: func() (tokenizer.Codec, error) { return r, nil }}, r
}

// pieces are what random texts are made of: ASCII words, code punctuation,
// multi-byte characters of every length, and the whitespace BPE merges across
// lines (runs of spaces, empty lines, CRLF).
var pieces = []string{
	"the", "func", "main", "Error:", "x", "42", "3.14159", "0xdeadbeef",
	" ", "  ", "    ", "\t", "{", "}", "(", ")", ";", "=", "==", "//", "--",
	"é", "ß", "€", "日本語", "𝄞", "🙂", "привет", "\u00a0", "\ufffd",
	"\r\n", "\n", "\n\n", "}\n\n", "   \n",
}

// randomText builds a text of about size bytes. With long set it includes
// lines far longer than any budget in the tests.
func randomText(rng *rand.Rand, size int, long bool) []byte {
	var b bytes.Buffer
	for b.Len() < size {
		switch r := rng.IntN(100); {
		case r < 70:
			b.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) == 0 {
				b.WriteByte(' ')
			}
		case r < 90:
			b.WriteByte('\n')
		case r < 97:
			b.WriteString(strings.Repeat(pieces[rng.IntN(len(pieces)-5)], 1+rng.IntN(20)))
		default:
			if long {
				b.WriteString(strings.Repeat("abc€ ", 200+rng.IntN(2000)))
			}
		}
	}
	if rng.IntN(2) == 0 && b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// checkHead checks what Head must guarantee for any input.
func checkHead(t *testing.T, c *Counter, text []byte, budget, n, tokens int) {
	t.Helper()
	if n < 0 || n > len(text) {
		t.Fatalf("Head: n = %d out of [0, %d]", n, len(text))
	}
	if got := c.Count(text[:n]); got != tokens {
		t.Fatalf("Head: tokens = %d, but text[:n] counts %d", tokens, got)
	}
	if tokens > budget {
		t.Fatalf("Head: tokens %d > budget %d", tokens, budget)
	}
	if len(text) > 0 && budget >= 4 && n == 0 {
		t.Fatalf("Head: no progress with budget %d on %q", budget, trunc(text))
	}
	if n > 0 && n < len(text) && text[n-1] != '\n' && bytes.IndexByte(text[:n], '\n') >= 0 {
		t.Fatalf("Head: n = %d ends inside a line that is not the first", n)
	}
	if utf8.Valid(text) && !utf8.Valid(text[:n]) {
		t.Fatalf("Head: n = %d splits a character", n)
	}
}

// checkTail checks what Tail must guarantee for any input.
func checkTail(t *testing.T, c *Counter, text []byte, budget, start, tokens int) {
	t.Helper()
	if start < 0 || start > len(text) {
		t.Fatalf("Tail: start = %d out of [0, %d]", start, len(text))
	}
	if got := c.Count(text[start:]); got != tokens {
		t.Fatalf("Tail: tokens = %d, but text[start:] counts %d", tokens, got)
	}
	if tokens > budget {
		t.Fatalf("Tail: tokens %d > budget %d", tokens, budget)
	}
	if len(text) > 0 && budget >= 4 && start == len(text) {
		t.Fatalf("Tail: no progress with budget %d on %q", budget, trunc(text))
	}
	last := bytes.LastIndexByte(text[:max(len(text)-1, 0)], '\n') // before the last line
	if start > 0 && start < len(text) && text[start-1] != '\n' && start <= last {
		t.Fatalf("Tail: start = %d is inside a line that is not the last", start)
	}
	if utf8.Valid(text) && !utf8.Valid(text[start:]) {
		t.Fatalf("Tail: start = %d splits a character", start)
	}
}

func trunc(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
