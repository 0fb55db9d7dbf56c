package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and readers at once (run with -race): every write lands whole.
func TestConcurrentWritersAndReader(t *testing.T) {
	var b Buffer
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range lines {
				b.Write([]byte("line\n"))
			}
		}()
	}
	for range 50 {
		_ = b.String()
		_ = b.Bytes()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != writers*lines || len(b.String()) != writers*lines*5 {
		t.Errorf("%d whole lines in %d bytes, want %d", got, len(b.String()), writers*lines)
	}
}

// Bytes is a copy: a reader that changes it does not change the buffer.
func TestBytesIsACopy(t *testing.T) {
	var b Buffer
	b.Write([]byte("abc"))
	got := b.Bytes()
	got[0] = 'X'
	if b.String() != "abc" {
		t.Errorf("the buffer holds %q after its copy was changed", b.String())
	}
}
