package pages

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// clock is a time tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// open opens a store in a new temporary directory; o may be nil.
func open(t *testing.T, o *Options) (*Store, *clock) {
	t.Helper()
	clk := newClock()
	if o == nil {
		o = &Options{}
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), "state", "pages")
	}
	if o.Now == nil {
		o.Now = clk.Now
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

// store writes data as an output of session and commits it.
func store(t *testing.T, s *Store, session string, data []byte, meta Meta) string {
	t.Helper()
	e, err := s.Create(session, "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(data); err != nil {
		t.Fatal(err)
	}
	ref, err := e.Commit(meta)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// readAll opens ref for session and returns its bytes.
func readAll(t *testing.T, s *Store, session, ref string) ([]byte, *Reader) {
	t.Helper()
	r, err := s.Open(session, ref)
	if err != nil {
		t.Fatalf("Open(%q): %v", ref, err)
	}
	t.Cleanup(func() { r.Close() })
	b, err := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

func TestRoundTrip(t *testing.T) {
	s, _ := open(t, nil)
	data := []byte("line one\nline two\nno newline")
	ref := store(t, s, "sess-1", data, Meta{"command": "make"})
	got, r := readAll(t, s, "sess-1", ref)
	if !bytes.Equal(got, data) {
		t.Fatalf("read %q, want %q", got, data)
	}
	if r.Size() != int64(len(data)) || r.Lines() != 2 || r.Dropped() != 0 || r.Offset() != 0 || FormatRef(r.ID(), 0) != ref {
		t.Errorf("Size %d Lines %d Dropped %d Offset %d ID %q", r.Size(), r.Lines(), r.Dropped(), r.Offset(), r.ID())
	}
	if m := r.Meta(); m["command"] != "make" || m["tool"] != "safe_bash" {
		t.Errorf("Meta = %v, want the command and the tool given to Create", m)
	}
	r.Meta()["command"] = "changed"
	if r.Meta()["command"] != "make" {
		t.Error("Meta returns the reader's own map")
	}
	r2, err := s.Open("sess-1", FormatRef(r.ID(), 9))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r2.Offset() != 9 {
		t.Errorf("Offset = %d, want 9", r2.Offset())
	}
	buf := make([]byte, 100)
	n, err := r2.ReadAt(buf, r2.Offset())
	if string(buf[:n]) != "line two\nno newline" || err != io.EOF {
		t.Errorf("ReadAt from the offset = %q, %v", buf[:n], err)
	}
	if n, out := s.Usage(); n != 1 || out != int64(len(data)) {
		t.Errorf("Usage = %d, %d", n, out)
	}
}

func TestOpenUnknown(t *testing.T) {
	s, clk := open(t, &Options{TTL: time.Minute})
	ref := store(t, s, "owner", []byte("0123456789"), nil)
	expired := store(t, s, "owner", []byte("old"), nil)
	clk.Advance(30 * time.Second)
	fresh := store(t, s, "owner", []byte("new"), nil)
	clk.Advance(30 * time.Second) // expired's minute is up, fresh has 30s left
	fresh, _, _ = ParseRef(fresh) // its id
	id, _, _ := ParseRef(ref)
	other, _ := newID()
	tests := []struct {
		name, session, ref string
		plain              bool // exactly ErrUnknown: nothing said about why
	}{
		{"malformed", "owner", "c../../etc/passwd", false},
		{"empty", "owner", "", false},
		{"never stored", "owner", FormatRef(other, 0), true},
		{"another session", "intruder", FormatRef(fresh, 0), true},
		{"another session, empty", "", FormatRef(fresh, 0), true},
		{"past the end", "owner", FormatRef(fresh, 4), true},
		{"expired", "owner", expired, true},
		{"expired, another session", "intruder", ref, true},
		{"id as a path", "owner", "c" + id + "/../x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Open(tt.session, tt.ref)
			if !errors.Is(err, ErrUnknown) {
				t.Fatalf("Open = %v, %v; want ErrUnknown", r, err)
			}
			if tt.plain && err != ErrUnknown {
				t.Errorf("Open error %q says more than ErrUnknown", err)
			}
		})
	}
	if _, err := s.Open("owner", FormatRef(fresh, 3)); err != nil {
		t.Errorf("Open at the end of the output: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	s, clk := open(t, &Options{TTL: time.Hour})
	ref := store(t, s, "s", []byte("data\n"), nil)
	id, _, _ := ParseRef(ref)
	out := filepath.Join(s.Dir(), sessionKey("s"), id+".out")

	clk.Advance(time.Hour - time.Nanosecond)
	if _, r := readAll(t, s, "s", ref); r.Expires() != newClock().Now().Add(time.Hour) {
		t.Errorf("Expires = %v", r.Expires())
	}
	s.Sweep()
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("Sweep removed an output before its time: %v", err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := s.Open("s", ref); err != ErrUnknown {
		t.Fatalf("Open of an expired output = %v, want ErrUnknown (before any sweep)", err)
	}
	ref2 := store(t, s, "s", []byte("more\n"), nil)
	clk.Advance(time.Hour)
	if err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	id2, _, _ := ParseRef(ref2)
	for _, p := range []string{out, filepath.Join(s.Dir(), sessionKey("s"), id2+".out"), filepath.Join(s.Dir(), sessionKey("s"), id2+".meta")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after expiry: %v", p, err)
		}
	}
	if n, b := s.Usage(); n != 0 || b != 0 {
		t.Errorf("Usage after expiry = %d, %d", n, b)
	}
}

func TestJanitor(t *testing.T) {
	s, clk := open(t, &Options{TTL: time.Minute, Sweep: 5 * time.Millisecond})
	ref := store(t, s, "s", []byte("data"), nil)
	id, _, _ := ParseRef(ref)
	out := filepath.Join(s.Dir(), sessionKey("s"), id+".out")
	clk.Advance(time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(out); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the janitor did not remove an expired output")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	s.Close() // twice is fine
}

func TestEviction(t *testing.T) {
	s, clk := open(t, &Options{MaxTotal: 1000})
	chunk := bytes.Repeat([]byte("x"), 400)
	var refs []string
	for range 3 {
		refs = append(refs, store(t, s, "s", chunk, nil))
		clk.Advance(time.Second)
	}
	// 1200 bytes over a limit of 1000: the oldest went.
	if _, err := s.Open("s", refs[0]); err != ErrUnknown {
		t.Errorf("oldest output: Open = %v, want ErrUnknown", err)
	}
	for _, ref := range refs[1:] {
		readAll(t, s, "s", ref)
	}
	if n, b := s.Usage(); n != 2 || b != 800 {
		t.Errorf("Usage = %d, %d; want 2, 800", n, b)
	}
	id, _, _ := ParseRef(refs[0])
	if _, err := os.Stat(filepath.Join(s.Dir(), sessionKey("s"), id+".out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("evicted output still on disk: %v", err)
	}

	// Larger than the whole store: refused, and nothing evicted for it.
	e, err := s.Create("s", "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	e.Write(bytes.Repeat([]byte("y"), 1001))
	if _, err := e.Commit(nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Commit of 1001 bytes into 1000 = %v, want ErrTooLarge", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), sessionKey("s"), e.ID()+".out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused output still on disk: %v", err)
	}
	if n, b := s.Usage(); n != 2 || b != 800 {
		t.Errorf("Usage after a refusal = %d, %d; want 2, 800", n, b)
	}
}

func TestMaxEntry(t *testing.T) {
	s, _ := open(t, &Options{MaxEntry: 100})
	e, err := s.Create("s", "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789\n"), 25) // 275 bytes
	for p := data; len(p) > 0; p = p[min(len(p), 30):] {
		if n, err := e.Write(p[:min(len(p), 30)]); err != nil || n != min(len(p), 30) {
			t.Fatalf("Write past MaxEntry = %d, %v; want all reported written", n, err)
		}
	}
	if e.Size() != 100 || e.Dropped() != 175 || e.Lines() != 9 {
		t.Errorf("Size %d Dropped %d Lines %d; want 100, 175, 9", e.Size(), e.Dropped(), e.Lines())
	}
	ref, err := e.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, r := readAll(t, s, "s", ref)
	if !bytes.Equal(got, data[:100]) || r.Dropped() != 175 {
		t.Errorf("read %d bytes, Dropped %d", len(got), r.Dropped())
	}
}

func TestDiscard(t *testing.T) {
	s, _ := open(t, nil)
	e, err := s.Create("s", "safe_read")
	if err != nil {
		t.Fatal(err)
	}
	e.Write([]byte("fits the response"))
	if err := e.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), sessionKey("s"), e.ID()+".out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("discarded output still on disk: %v", err)
	}
	if _, err := e.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Discard = %v, want os.ErrClosed", err)
	}
	if _, err := e.Commit(nil); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Commit after Discard = %v, want os.ErrClosed", err)
	}

	// The defer-Discard pattern: nothing happens after Commit.
	e2, _ := s.Create("s", "safe_read")
	e2.Write([]byte("kept"))
	ref, err := e2.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Discard(); err != nil {
		t.Fatal(err)
	}
	if got, _ := readAll(t, s, "s", ref); string(got) != "kept" {
		t.Errorf("after Commit and Discard, read %q", got)
	}
	if _, err := s.Create("", "x"); err == nil {
		t.Error("Create with no session: no error")
	}
}

func TestOptions(t *testing.T) {
	if _, err := Open(&Options{Dir: t.TempDir(), TTL: -1}); err == nil {
		t.Error("negative TTL: no error")
	}
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, err := DefaultDir(); err != nil || d != "/state/contextd/pages" {
		t.Errorf("DefaultDir = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/state") // not absolute: ignored
	t.Setenv("HOME", "/home/u")
	if d, err := DefaultDir(); err != nil || d != "/home/u/.local/state/contextd/pages" {
		t.Errorf("DefaultDir = %q, %v", d, err)
	}
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	s, err := Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := filepath.Join(home, ".local/state/contextd/pages"); s.Dir() != want {
		t.Errorf("Dir = %q, want %q", s.Dir(), want)
	}
	if s.ttl != DefaultTTL || s.maxTotal != DefaultMaxTotal || s.maxEntry != DefaultMaxEntry {
		t.Errorf("defaults: %v %d %d", s.ttl, s.maxTotal, s.maxEntry)
	}
}
