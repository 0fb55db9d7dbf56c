package audit

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize = 3000
	l := openTest(t, o)
	fill(t, l, 1, 20)
	l.Close()
	for _, n := range []int{0, 1, 7, 20, 50} {
		es, err := Tail(o.Dir, n)
		if err != nil {
			t.Fatalf("Tail(%d): %v", n, err)
		}
		want := min(n, 20)
		if len(es) != want {
			t.Fatalf("Tail(%d) gave %d entries", n, len(es))
		}
		for i, e := range es {
			if e.Seq != uint64(20-want+i+1) || e.File == "" || e.Line == 0 || !strings.Contains(string(e.Raw), e.Hash) {
				t.Errorf("Tail(%d)[%d] = seq %d at %s:%d", n, i, e.Seq, e.File, e.Line)
			}
		}
	}

	// A damaged line is skipped and reported.
	names := logNames(t, o.Dir)
	editLine(t, filepath.Join(o.Dir, names[len(names)-1]), 1, func(s string) string { return strings.Replace(s, "s1", "s2", 1) })
	es, err := Tail(o.Dir, 100)
	if !errors.Is(err, ErrTampered) || len(es) != 19 {
		t.Errorf("Tail of a damaged log = %d entries, %v", len(es), err)
	}
}

func TestRead(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize = 3000
	l := openTest(t, o)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 20; i++ {
		r := call(i)
		r.Time = base.Add(time.Duration(i) * time.Minute)
		if i%4 == 0 {
			r.Tool, r.Session = "safe_read", "s2"
		}
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	tests := []struct {
		name string
		f    Filter
		want []uint64
	}{
		{"all", Filter{}, seqs(1, 20)},
		{"tool", Filter{Tool: "safe_read"}, []uint64{4, 8, 12, 16, 20}},
		{"session and tool", Filter{Session: "s2", Tool: "safe_bash"}, nil},
		{"since", Filter{Since: base.Add(17 * time.Minute)}, seqs(17, 20)},
		{"window", Filter{Since: base.Add(3 * time.Minute), Until: base.Add(6 * time.Minute)}, seqs(3, 5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			for e, err := range Read(o.Dir, tt.f) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	// Stopping early is fine; a damaged line is yielded with its place.
	for range Read(o.Dir, Filter{}) {
		break
	}
	names := logNames(t, o.Dir)
	editLine(t, filepath.Join(o.Dir, names[1]), 2, func(s string) string { return s[:20] })
	var bad []string
	for e, err := range Read(o.Dir, Filter{Tool: "nothing"}) {
		if !errors.Is(err, ErrTampered) {
			t.Fatalf("Read yielded %v, %v", e.Seq, err)
		}
		bad = append(bad, err.Error())
		if e.File != names[1] || e.Line != 2 {
			t.Errorf("damaged entry at %s:%d", e.File, e.Line)
		}
	}
	if len(bad) != 1 || !strings.Contains(bad[0], names[1]+":2: not a record") {
		t.Errorf("errors = %q", bad)
	}
}

func TestFollow(t *testing.T) {
	defer func(d time.Duration) { followEvery = d }(followEvery)
	followEvery = 5 * time.Millisecond
	o := testOptions(t)
	o.MaxFileSize = 3000
	l := openTest(t, o)
	defer l.Close()
	fill(t, l, 1, 3)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []uint64
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, o.Dir, 2, func(e Entry, err error) error {
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e.Seq)
			if e.Seq == 30 {
				cancel()
			}
			return nil
		})
	}()
	// Appends while following, across several rotations.
	for i := 4; i <= 30; i++ {
		fill(t, l, i, i)
		time.Sleep(time.Millisecond)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v", err)
	}
	if len(logNames(t, o.Dir)) < 3 {
		t.Fatal("no rotation happened while following")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, seqs(3, 30)) {
		t.Errorf("followed %v", got)
	}
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}
