package pages

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/budget"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestPermissions(t *testing.T) {
	s, _ := open(t, nil)
	e, err := s.Create("s", "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	e.Write([]byte("secret-ish output"))
	if _, err := e.Commit(nil); err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(s.Dir(), sessionKey("s"))
	for p, want := range map[string]os.FileMode{
		s.Dir(): 0o700, sdir: 0o700,
		filepath.Join(sdir, e.ID()+".out"): 0o600, filepath.Join(sdir, e.ID()+".meta"): 0o600,
	} {
		if got := mode(t, p); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}

	t.Run("loose dir is tightened", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pages")
		os.Mkdir(dir, 0o755)
		os.Chmod(dir, 0o755)
		s, _ := open(t, &Options{Dir: dir})
		if got := mode(t, s.Dir()); got != 0o700 {
			t.Errorf("mode %v, want 0700", got)
		}
	})
	t.Run("symlink refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pages")
		os.Symlink(t.TempDir(), dir)
		if _, err := Open(&Options{Dir: dir}); err == nil {
			t.Error("a symlink as the store: no error")
		}
	})
	t.Run("file refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "pages")
		os.WriteFile(dir, nil, 0o600)
		if _, err := Open(&Options{Dir: dir}); err == nil {
			t.Error("a file as the store: no error")
		}
	})
	t.Run("other owner refused", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory away")
		}
		dir := filepath.Join(t.TempDir(), "pages")
		os.Mkdir(dir, 0o700)
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := Open(&Options{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a directory of another user: %v", err)
		}
	})
}

// TestRestart reopens a store as a new daemon would.
func TestRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pages")
	clk := newClock()
	s, err := Open(&Options{Dir: dir, Now: clk.Now, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	old := store(t, s, "a", []byte("old"), nil)
	clk.Advance(50 * time.Minute)
	kept := store(t, s, "a", []byte("kept\n"), Meta{"k": "v"})
	clk.Advance(time.Minute)
	other := store(t, s, "b", []byte("other session"), nil)
	crashed, _ := s.Create("a", "safe_bash") // never committed
	crashed.Write([]byte("partial"))
	crashed.w.Flush()
	s.Close()

	sdir := filepath.Join(dir, sessionKey("a"))
	notOurs := []string{filepath.Join(dir, "notes.txt"), filepath.Join(sdir, "README"), filepath.Join(dir, "zz")}
	for _, p := range notOurs {
		os.WriteFile(p, []byte("mine"), 0o600)
	}
	stray := filepath.Join(sdir, hexID+".meta.tmp")
	os.WriteFile(stray, []byte("{"), 0o600)
	// An output whose metadata claims another session's directory.
	forged := filepath.Join(dir, sessionKey("b"), hexID)
	oldID, _, _ := ParseRef(old)
	keptID, _, _ := ParseRef(kept)
	meta, _ := os.ReadFile(filepath.Join(sdir, keptID+".meta"))
	os.WriteFile(forged+".out", []byte("kept\n"), 0o600)
	os.WriteFile(forged+".meta", meta, 0o600)

	clk.Advance(20 * time.Minute) // old is 71 minutes old, kept 21
	s2, err := Open(&Options{Dir: dir, Now: clk.Now, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, r := readAll(t, s2, "a", kept); string(got) != "kept\n" || r.Meta()["k"] != "v" || r.Lines() != 1 {
		t.Errorf("kept output after restart: %q, %v", got, r.Meta())
	}
	readAll(t, s2, "b", other)
	for _, ref := range []string{old, FormatRef(crashed.ID(), 0), FormatRef(hexID, 0)} {
		for _, sess := range []string{"a", "b"} {
			if _, err := s2.Open(sess, ref); err != ErrUnknown {
				t.Errorf("Open(%q, %q) after restart = %v, want ErrUnknown", sess, ref, err)
			}
		}
	}
	for _, p := range []string{filepath.Join(sdir, oldID+".out"), filepath.Join(sdir, oldID+".meta"),
		filepath.Join(sdir, crashed.ID()+".out"), stray, forged + ".out", forged + ".meta"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived the restart: %v", p, err)
		}
	}
	for _, p := range notOurs {
		if b, err := os.ReadFile(p); err != nil || string(b) != "mine" {
			t.Errorf("%s, not ours, was touched: %v", p, err)
		}
	}
	if n, b := s2.Usage(); n != 2 || b != int64(len("kept\n")+len("other session")) {
		t.Errorf("Usage after restart = %d, %d", n, b)
	}

	// A lower MaxTotal at restart evicts the oldest.
	s2.Close()
	s3, err := Open(&Options{Dir: dir, Now: clk.Now, TTL: time.Hour, MaxTotal: 13})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if n, b := s3.Usage(); n != 1 || b != 13 {
		t.Errorf("Usage with a lower MaxTotal = %d, %d; want 1, 13", n, b)
	}
}

// TestLargeOutput stores 50 MB without holding it, and pages it back exactly
// with references that carry the cursor.
func TestLargeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("50 MB")
	}
	s, _ := open(t, nil)
	e, err := s.Create("s", "safe_bash")
	if err != nil {
		t.Fatal(err)
	}
	const size = 50 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 32<<10)
	want := sha256.New()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for written := 0; written < size; written += len(chunk) {
		for i := range chunk {
			chunk[i] = "abcdefgh \n€"[rng.IntN(11)]
		}
		want.Write(chunk)
		if _, err := e.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("writing 50 MB allocated %d bytes", grew)
	}
	ref, err := e.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}

	got := sha256.New()
	buf := make([]byte, 3<<20+17) // pages of an odd size
	pages := 0
	for ref != "" {
		r, err := s.Open("s", ref)
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.ReadAt(buf, r.Offset())
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		// The same reference again gives the same page.
		if pages == 3 {
			again := make([]byte, n)
			r2, _ := s.Open("s", ref)
			r2.ReadAt(again, r2.Offset())
			r2.Close()
			if !bytes.Equal(again, buf[:n]) {
				t.Fatal("a retried page differs")
			}
		}
		got.Write(buf[:n])
		ref = ""
		if next := r.Offset() + int64(n); next < r.Size() {
			ref = FormatRef(r.ID(), next)
		}
		r.Close()
		pages++
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("%d pages do not add up to the output", pages)
	}
}

// TestTokenPages pages an output the way the daemon does: from a reference,
// a window of the stored bytes, cut with budget.Head; each page within its
// budget, all of them the output.
func TestTokenPages(t *testing.T) {
	s, _ := open(t, nil)
	var out bytes.Buffer
	rng := rand.New(rand.NewPCG(3, 4))
	for out.Len() < 300<<10 {
		fmt.Fprintf(&out, "%s ok %d ms é€🙂\n", strings.Repeat("pkg/sub ", rng.IntN(8)), rng.IntN(9999))
		if rng.IntN(50) == 0 {
			out.WriteString(strings.Repeat("long line ", 2000))
		}
	}
	ref := store(t, s, "s", out.Bytes(), nil)
	c := budget.Default()
	const tokens = 500
	var got []byte
	for ref != "" {
		r, err := s.Open("s", ref)
		if err != nil {
			t.Fatal(err)
		}
		win := make([]byte, budget.Window(tokens))
		n, _ := r.ReadAt(win, r.Offset())
		win = win[:n]
		if r.Offset()+int64(n) < r.Size() {
			// Not the end: the window's last line may be cut short.
			if i := bytes.LastIndexByte(win, '\n'); i >= 0 {
				win = win[:i+1]
			}
		}
		k, used := c.Head(win, tokens)
		if used > tokens || k == 0 {
			t.Fatalf("page of %d bytes, %d tokens", k, used)
		}
		got = append(got, win[:k]...)
		ref = ""
		if next := r.Offset() + int64(k); next < r.Size() {
			ref = FormatRef(r.ID(), next)
		}
		r.Close()
	}
	if !bytes.Equal(got, out.Bytes()) {
		t.Fatal("token pages do not add up to the output")
	}
}

// TestConcurrent stores, reads, evicts and sweeps from many goroutines.
func TestConcurrent(t *testing.T) {
	s, clk := open(t, &Options{MaxTotal: 64 << 10, TTL: time.Minute})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			session := fmt.Sprint("s", g%3)
			for i := range 40 {
				data := bytes.Repeat([]byte{byte('a' + g)}, 1000+i*100)
				e, err := s.Create(session, "t")
				if err != nil {
					t.Error(err)
					return
				}
				e.Write(data)
				ref, err := e.Commit(nil)
				if err != nil {
					t.Error(err)
					return
				}
				r, err := s.Open(session, ref)
				if errors.Is(err, ErrUnknown) {
					continue // evicted or expired already
				}
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(io.NewSectionReader(r, 0, r.Size()))
				r.Close()
				if !bytes.Equal(b, data) {
					t.Errorf("read back %d bytes, want %d", len(b), len(data))
				}
				if i%10 == 0 {
					clk.Advance(10 * time.Second)
					s.Sweep()
				}
			}
		})
	}
	wg.Wait()
	if _, b := s.Usage(); b > 64<<10 {
		t.Errorf("total %d over MaxTotal", b)
	}
}
