// Package budget counts tokens and cuts text to a token budget on line boundaries.
package budget

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding is the vocabulary the Default counter uses.
//
// The agents contextd serves mostly run on models whose tokenizers are not
// public, so any public BPE vocabulary is a stand-in. cl100k_base is chosen over
// o200k_base because, measured here on source code and logs, it counts about the
// same or slightly more tokens for the same text (a budget is a ceiling, so
// erring high is the safe side), it tokenizes 1.5-2x faster, and its embedded
// vocabulary loads in about half the time and memory (~15 ms and 3.5 MB against
// ~35 ms and 7 MB).
const Encoding = tokenizer.Cl100kBase

// MinBudget is the smallest budget Plan works with; smaller ones are raised to
// it, since the marker line alone needs a few dozen tokens. Head and Tail honour
// any budget, and make progress (return a non-empty piece of non-empty text)
// for every budget of at least 4, the most tokens one UTF-8 character can take.
const MinBudget = 100

// Counter counts tokens with one vocabulary. It is safe for concurrent use.
// Get one from Default or New; the zero Counter has no vocabulary.
type Counter struct {
	enc tokenizer.Encoding
	// codec loads the vocabulary on first use: building the embedded map takes
	// milliseconds and megabytes that a daemon started for a single call may
	// never need.
	codec func() (tokenizer.Codec, error)
	// split: Count splits ASCII text itself (see split.go); cl100k_base only.
	split bool
	cache pieceCache
}

// New returns a Counter for enc. The vocabulary is loaded on first use.
func New(enc tokenizer.Encoding) *Counter {
	return &Counter{enc: enc, split: enc == tokenizer.Cl100kBase, codec: sync.OnceValues(func() (tokenizer.Codec, error) {
		return tokenizer.Get(enc)
	})}
}

var defaultCounter = New(Encoding)

// Default returns the shared Counter for Encoding.
func Default() *Counter { return defaultCounter }

// Load loads the vocabulary now, so that a daemon can pay for it at start (in
// the background) instead of during its first call, and learn of an unknown
// encoding early.
func (c *Counter) Load() error {
	_, err := c.codec()
	if err != nil {
		return fmt.Errorf("load token vocabulary %s: %w", c.enc, err)
	}
	return nil
}

// Count returns the exact number of tokens in b.
//
// The library reports errors only for an unknown encoding (caught by Load) and
// for regular-expression timeouts it never sets, so Count has no error result;
// should one happen anyway, it returns len(b)*3, more than any text can take
// (every token holds at least one byte, and an invalid byte is read as the
// 3-byte U+FFFD), so a budget is never exceeded because of it.
func (c *Counter) Count(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	codec, err := c.codec()
	if err != nil {
		return len(b) * 3
	}
	var n int
	if c.split {
		n, err = c.countSplit(codec, b)
	} else {
		// string(b) copies, but the tokenizer copies the text into runes
		// anyway, so this is small next to the tokenizing.
		n, err = codec.Count(string(b))
	}
	if err != nil {
		return len(b) * 3
	}
	return n
}
