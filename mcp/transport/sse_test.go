package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []string // event:data
		lastID string
		retry  time.Duration
	}{
		{name: "basic", in: "data: {\"a\":1}\n\n", want: []string{"message:{\"a\":1}"}},
		{name: "named", in: "event: endpoint\ndata: /msg?s=1\n\n", want: []string{"endpoint:/msg?s=1"}},
		{name: "multi-line data", in: "data: a\ndata:b\ndata:  c\n\n", want: []string{"message:a\nb\n c"}},
		{name: "crlf and cr", in: "data: a\r\n\r\ndata: b\r\rdata: c\n\n", want: []string{"message:a", "message:b", "message:c"}},
		{name: "comments and unknown fields", in: ": ping\nfoo: bar\ndata: x\n\n", want: []string{"message:x"}},
		{name: "no data, no event", in: "event: x\n\nid: 5\n\n", lastID: "5"},
		{name: "empty data dispatches", in: "data\n\n", want: []string{"message:"}},
		{name: "ids", in: "id: 1\ndata: a\n\nid: 2\ndata: b\n\n", want: []string{"message:a", "message:b"}, lastID: "2"},
		{name: "id with NUL ignored", in: "id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n", want: []string{"message:a", "message:b"}, lastID: "1"},
		{name: "retry", in: "retry: 1500\ndata: a\n\nretry: 1x\n\n", want: []string{"message:a"}, retry: 1500 * time.Millisecond},
		{name: "bom", in: "\xef\xbb\xbfdata: a\n\n", want: []string{"message:a"}},
		{name: "cut off at the end", in: "data: a\n\ndata: b\n", want: []string{"message:a"}},
		{name: "event name reset", in: "event: e\ndata: a\n\ndata: b\n\n", want: []string{"e:a", "message:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				s := newSSEReader(r, 0)
				var got []string
				for {
					ev, err := s.next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, ev.event+":"+string(ev.data))
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Errorf("events %q, want %q", got, tt.want)
				}
				if s.lastID != tt.lastID || s.retry != tt.retry {
					t.Errorf("last id %q retry %v, want %q %v", s.lastID, s.retry, tt.lastID, tt.retry)
				}
			}
		})
	}
}

func TestSSEReaderLimit(t *testing.T) {
	in := "data: " + strings.Repeat("x", 60) + "\ndata: " + strings.Repeat("y", 60) + "\n\n"
	if _, err := newSSEReader(strings.NewReader(in), 100).next(); !errors.Is(err, jsonrpc.ErrTooLarge) {
		t.Errorf("data over the limit: %v", err)
	}
	long := strings.Repeat("z", 1000) // one line, never ended
	if _, err := newSSEReader(strings.NewReader(long), 100).next(); !errors.Is(err, jsonrpc.ErrTooLarge) {
		t.Errorf("line over the limit: %v", err)
	}
	ok := "data: " + strings.Repeat("x", 100) + "\n\n"
	if ev, err := newSSEReader(strings.NewReader(ok), 100).next(); err != nil || len(ev.data) != 100 {
		t.Errorf("data at the limit: %d %v", len(ev.data), err)
	}
}

// FuzzSSE: the event stream parser never panics on arbitrary bytes, never
// returns data over its limit, and splitting the input differently never
// changes what it returns.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: endpoint\ndata: /m\n\nid: 1\nretry: 10\ndata: {}\r\n\r\n"), uint8(0))
	f.Add([]byte("\xef\xbb\xbf: c\rdata\r\r\ndata:x\n\n"), uint8(5))
	f.Fuzz(func(t *testing.T, in []byte, lim uint8) {
		max := int(lim)
		parse := func(r io.Reader) ([]string, string, error) {
			s := newSSEReader(r, max)
			var out []string
			for range len(in) + 1 {
				ev, err := s.next()
				if err != nil {
					if err == io.EOF {
						err = nil
					}
					return out, s.lastID, err
				}
				limit := max
				if limit <= 0 {
					limit = jsonrpc.DefaultMaxMessage
				}
				if len(ev.data) > limit {
					t.Fatalf("event data of %d bytes, limit %d", len(ev.data), limit)
				}
				out = append(out, ev.event+"\x00"+string(ev.data))
			}
			t.Fatal("parser does not end")
			return nil, "", nil
		}
		a, idA, errA := parse(bytes.NewReader(in))
		b, idB, errB := parse(iotest.OneByteReader(bytes.NewReader(in)))
		if (errA == nil) != (errB == nil) {
			t.Fatalf("errors differ by chunking: %v / %v", errA, errB)
		}
		if errA == nil && (strings.Join(a, "\x01") != strings.Join(b, "\x01") || idA != idB) {
			t.Fatalf("results differ by chunking: %q %q / %q %q", a, idA, b, idB)
		}
	})
}
