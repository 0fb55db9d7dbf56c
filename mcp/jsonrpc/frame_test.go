package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/contextd/contextd/catalog"
)

func readAll(t *testing.T, r *Reader) ([]string, []error) {
	t.Helper()
	var msgs []string
	var errs []error
	for range 1000 {
		m, err := r.Read()
		if err == io.EOF {
			return msgs, errs
		}
		if err != nil {
			errs = append(errs, err)
			if !errors.Is(err, ErrTooLarge) {
				return msgs, errs
			}
			continue
		}
		msgs = append(msgs, string(m))
	}
	t.Fatal("reader did not end")
	return nil, nil
}

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		max   int
		want  []string
		large int // how many ErrTooLarge
	}{
		{name: "lines", in: "{\"a\":1}\n{\"b\":2}\n", want: []string{`{"a":1}`, `{"b":2}`}},
		{name: "crlf", in: "{\"a\":1}\r\n{\"b\":2}\r\n", want: []string{`{"a":1}`, `{"b":2}`}},
		{name: "blank lines", in: "\n\r\n  \t\n{\"a\":1}\n\n", want: []string{`{"a":1}`}},
		{name: "no final newline", in: "{\"a\":1}\n{\"b\":2}", want: []string{`{"a":1}`, `{"b":2}`}},
		{name: "bytes kept", in: " {\"a\" : 1 } \n", want: []string{` {"a" : 1 } `}},
		{name: "inner cr kept", in: "a\rb\n", want: []string{"a\rb"}},
		{name: "exactly max", in: "12345\n", max: 5, want: []string{"12345"}},
		{name: "exactly max crlf", in: "12345\r\n", max: 5, want: []string{"12345"}},
		{name: "over max", in: "123456\nok\n", max: 5, want: []string{"ok"}, large: 1},
		{name: "over max at end", in: "ok\n123456", max: 5, want: []string{"ok"}, large: 1},
		{name: "huge line skipped", in: strings.Repeat("x", 300<<10) + "\n{}\n" + strings.Repeat("y", 200<<10) + "\r\nz\n", max: 100 << 10, want: []string{"{}", "z"}, large: 2},
		{name: "long line within max", in: strings.Repeat("x", 200<<10) + "\n", max: 300 << 10, want: []string{strings.Repeat("x", 200<<10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tt.in)},
				{"one byte at a time", iotest.OneByteReader(strings.NewReader(tt.in))},
			} {
				msgs, errs := readAll(t, NewReader(src.r, tt.max))
				if len(errs) != tt.large {
					t.Errorf("%s: errors %v, want %d ErrTooLarge", src.name, errs, tt.large)
				}
				for _, err := range errs {
					if !errors.Is(err, ErrTooLarge) || !errors.Is(err, catalog.ErrBadInput) {
						t.Errorf("%s: error %v is not ErrTooLarge", src.name, err)
					}
				}
				if strings.Join(msgs, "|") != strings.Join(tt.want, "|") || len(msgs) != len(tt.want) {
					t.Errorf("%s: got %d messages %.80q, want %.80q", src.name, len(msgs), msgs, tt.want)
				}
			}
		})
	}
}

func TestReaderDefaultMax(t *testing.T) {
	r := NewReader(strings.NewReader(""), 0)
	if r.max != DefaultMaxMessage {
		t.Errorf("default max %d", r.max)
	}
}

func TestReaderStickyError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("{}\n{\"cut"), iotest.ErrReader(boom)), 0)
	if m, err := r.Read(); err != nil || string(m) != "{}" {
		t.Fatalf("first: %q %v", m, err)
	}
	for range 2 {
		if m, err := r.Read(); !errors.Is(err, boom) || m != nil {
			t.Errorf("after failure: %q %v", m, err)
		}
	}
}

// The returned slices must stay valid after later reads.
func TestReaderOwnership(t *testing.T) {
	r := NewReader(strings.NewReader("aaaa\nbbbb\ncccc\n"), 0)
	a, _ := r.Read()
	b, _ := r.Read()
	c, _ := r.Read()
	if string(a) != "aaaa" || string(b) != "bbbb" || string(c) != "cccc" {
		t.Errorf("got %q %q %q", a, b, c)
	}
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := []byte("{\"a\":\n\t1,\r\n\"b\":2}")
	if err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if string(in) != "{\"a\":\n\t1,\r\n\"b\":2}" {
		t.Error("Write changed the caller's bytes")
	}
	big := []byte(`{"x":"` + strings.Repeat("z", 300<<10) + `"}`)
	if err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte(" \t")); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("blank message: %v", err)
	}
	want := "{\"a\": \t1,  \"b\":2}\n" + string(big) + "\n"
	if out.String() != want {
		t.Errorf("wrote %.100q", out.String())
	}
	if first := strings.SplitN(out.String(), "\n", 2)[0]; !json.Valid([]byte(first)) {
		t.Errorf("the rewritten message %q is no longer JSON", first)
	}
}

func TestWriterConcurrent(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	msgs := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		for i := range 50 {
			m := `{"g":` + strings.Repeat("1", g+1) + `,"i":"` + strings.Repeat("x", i*1000) + `"}`
			msgs[m] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Write([]byte(m)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	go func() { wg.Wait(); pw.Close() }()
	r := NewReader(pr, 0)
	n := 0
	for {
		m, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !msgs[string(m)] {
			t.Fatalf("torn message %.60q", m)
		}
		n++
	}
	if n != len(msgs) {
		t.Errorf("read %d messages, wrote %d", n, len(msgs))
	}
}
