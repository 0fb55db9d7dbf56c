package pages

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// holey stores stored[0], a hole standing for holes[0], stored[1], ... and
// returns the reference and the whole output a reader should see.
func holey(t *testing.T, s *Store, session string, stored, holes []string) (string, []byte) {
	t.Helper()
	e, err := s.Create(session, "safe_read")
	if err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	for i, part := range stored {
		if _, err := e.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
		whole.WriteString(part)
		if i < len(holes) {
			if err := e.Hole(int64(len(holes[i])), []byte(fmt.Sprintf(`{"hole":%d}`, i))); err != nil {
				t.Fatal(err)
			}
			whole.WriteString(holes[i])
		}
	}
	ref, err := e.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	return ref, whole.Bytes()
}

// fillFrom fills holes from their texts, by the index in their source.
func fillFrom(holes []string, calls *int) FillFunc {
	return func(source []byte, off int64, p []byte) error {
		*calls++
		var i int
		if _, err := fmt.Sscanf(string(source), `{"hole":%d}`, &i); err != nil || i >= len(holes) {
			return fmt.Errorf("bad source %q", source)
		}
		if off < 0 || off+int64(len(p)) > int64(len(holes[i])) {
			return fmt.Errorf("fill %d+%d outside hole %d of %d bytes", off, len(p), i, len(holes[i]))
		}
		copy(p, holes[i][off:])
		return nil
	}
}

// Reads at any offset and length see the stored bytes and the holes' bytes
// in order; only the holes' parts are asked of the FillFunc.
func TestHoles(t *testing.T) {
	s, _ := open(t, nil)
	stored := []string{"head one\nhead two\n", "middle\n", "", "tail\n"}
	holes := []string{strings.Repeat("gap A line\n", 300), strings.Repeat("B", 5000), "C\n"}
	ref, whole := holey(t, s, "s1", stored, holes)

	r, err := s.Open("s1", ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != int64(len(whole)) {
		t.Fatalf("Size %d, want %d", r.Size(), len(whole))
	}
	if _, err := r.ReadAt(make([]byte, 10), 20); !errors.Is(err, ErrNoFill) {
		t.Fatalf("a hole read without a FillFunc: %v", err)
	}
	calls := 0
	r.SetFill(fillFrom(holes, &calls))
	rng := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		off := rng.Int64N(int64(len(whole)))
		p := make([]byte, rng.IntN(len(whole)+10))
		n, err := r.ReadAt(p, off)
		want := whole[off:min(int64(len(whole)), off+int64(len(p)))]
		if n != len(want) || !bytes.Equal(p[:n], want) {
			t.Fatalf("ReadAt(%d bytes, %d) = %d, %v: wrong bytes", len(p), off, n, err)
		}
		if short := off+int64(len(p)) > int64(len(whole)); short != (err == io.EOF) || !short && err != nil {
			t.Fatalf("ReadAt(%d bytes, %d): err %v", len(p), off, err)
		}
	}
	calls = 0
	if _, err := r.ReadAt(make([]byte, len(stored[0])), 0); err != nil || calls != 0 {
		t.Fatalf("a read of stored bytes only: %v, %d fills", err, calls)
	}
	// A failing FillFunc fails the read with its error.
	boom := errors.New("boom")
	r.SetFill(func([]byte, int64, []byte) error { return boom })
	if _, err := r.ReadAt(make([]byte, 100), 0); !errors.Is(err, boom) {
		t.Fatalf("failing fill: %v", err)
	}
	// A reference may point anywhere in the output, holes included, and no
	// further.
	if _, err := s.Open("s1", FormatRef(r.ID(), int64(len(whole)))); err != nil {
		t.Fatalf("a reference to the end: %v", err)
	}
	if _, err := s.Open("s1", FormatRef(r.ID(), int64(len(whole))+1)); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a reference past the end: %v", err)
	}
}

// Holes survive a restart of the daemon (the store is opened again), and a
// .meta file whose holes do not make sense is not loaded.
func TestHolesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pages")
	s, _ := open(t, &Options{Dir: dir})
	holes := []string{strings.Repeat("x\n", 1000)}
	ref, whole := holey(t, s, "s1", []string{"a\n", "b\n"}, holes)
	ref2, _ := holey(t, s, "s1", []string{"c\n", "d\n"}, holes)
	s.Close()

	// Damage the second output's holes: overlapping, as no Entry writes.
	id2, _, _ := ParseRef(ref2)
	key := sessionKey("s1")
	m := filepath.Join(dir, key, id2+".meta")
	b, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"holes":[`), []byte(`"holes":[{"at":0,"len":5,"source":{"hole":0}},`), 1)
	if err := os.WriteFile(m, b, 0o600); err != nil {
		t.Fatal(err)
	}

	s2, _ := open(t, &Options{Dir: dir})
	got, r := readAllFill(t, s2, "s1", ref, holes)
	if !bytes.Equal(got, whole) || r.Size() != int64(len(whole)) {
		t.Fatalf("after a restart: %q", got)
	}
	if _, err := s2.Open("s1", ref2); !errors.Is(err, ErrUnknown) {
		t.Fatalf("an output with bad holes was loaded: %v", err)
	}
}

// Hole refuses what it cannot keep, and after MaxEntry drops the hole like
// bytes.
func TestHoleEdges(t *testing.T) {
	s, _ := open(t, &Options{MaxEntry: 10})
	e, err := s.Create("s1", "safe_read")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hole(0, []byte("{}")); err == nil {
		t.Error("an empty hole was taken")
	}
	if err := e.Hole(5, nil); err == nil {
		t.Error("a hole without a source was taken")
	}
	e.Write([]byte("0123456789abc")) // 3 bytes over MaxEntry
	if err := e.Hole(100, []byte("{}")); err != nil || e.Dropped() != 103 {
		t.Fatalf("a hole past MaxEntry: %v, dropped %d", err, e.Dropped())
	}
	ref, err := e.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Open("s1", ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 10 {
		t.Fatalf("size %d, want the 10 bytes kept", r.Size())
	}
	if err := e.Hole(5, []byte("{}")); err == nil {
		t.Error("a hole after Commit was taken")
	}
}

func readAllFill(t *testing.T, s *Store, session, ref string, holes []string) ([]byte, *Reader) {
	t.Helper()
	r, err := s.Open(session, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	calls := 0
	r.SetFill(fillFrom(holes, &calls))
	b := make([]byte, r.Size())
	if n, err := r.ReadAt(b, 0); n != len(b) {
		t.Fatalf("read %d of %d: %v", n, len(b), err)
	}
	return b, r
}
