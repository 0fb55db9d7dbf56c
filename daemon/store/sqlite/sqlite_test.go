package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/sqlite"
	"github.com/contextd/contextd/daemon/store/storetest"
)

// crashChildEnv selects the child mode of TestCrashSafety: the value is the
// database path to write to until killed.
const crashChildEnv = "CTXD_SQLITE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(crashChild(path))
	}
	os.Exit(m.Run())
}

func openTemp(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(&sqlite.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
}

func TestRetrieval(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	storetest.Retrieval(t, s)
}

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ xdg, want string }{
		{"", filepath.Join(home, ".local/share/contextd/state.db")},
		{"relative/data", filepath.Join(home, ".local/share/contextd/state.db")},
		{"/srv/data", "/srv/data/contextd/state.db"},
	} {
		t.Setenv("XDG_DATA_HOME", tc.xdg)
		if got, err := sqlite.DefaultPath(); err != nil || got != tc.want {
			t.Errorf("XDG_DATA_HOME=%q: DefaultPath() = %q, %v; want %q", tc.xdg, got, err, tc.want)
		}
	}

	// Open(nil) uses it, creating the directory 0700 and the file 0600.
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "xdg"))
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s, err := sqlite.Open(nil)
	if err != nil {
		t.Fatalf("Open(nil): %v", err)
	}
	defer s.Close()
	path := filepath.Join(home, "xdg", "contextd", "state.db")
	if got := s.Backend(); got != "sqlite:"+path {
		t.Errorf("Backend() = %q, want %q", got, "sqlite:"+path)
	}
	if err := s.PutMemory(t.Context(), &store.Memory{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{
		filepath.Dir(path): 0o700 | os.ModeDir, path: 0o600, path + "-wal": 0o600, path + ".lock": 0o600,
	} {
		if fi, err := os.Stat(name); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, want)
		}
	}
}

func TestPathWithURIMetacharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir %41", "state.db")
	s, err := sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	defer s.Close()
	if err := s.PutMemory(t.Context(), &store.Memory{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not where asked: %v", err)
	}
}

func TestSecondOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(&sqlite.Options{Path: path})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("second Open of a held database: %v, want ErrUnavailable", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(os.Getpid())) || !strings.Contains(msg, "stop") {
		t.Errorf("the error does not name the holder and what to do: %q", msg)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	s, err = sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
}

// TestLockedByAnotherProgram: a database some other program keeps locked
// for writing (not a contextd: it has no lock file) is refused as
// unavailable once the busy timeout passes.
func TestLockedByAnotherProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	s, err = sqlite.Open(&sqlite.Options{Path: path, BusyTimeout: 100 * time.Millisecond})
	t.Logf("Open: %v", err)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open of a database locked by another program: %v, want ErrUnavailable", err)
	}
	if s != nil {
		s.Close()
	}
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Memory{Project: "/p", Title: "kept across reopen"}
	if err := s.PutMemory(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	s.Close()

	db := rawDB(t, path)
	var v int
	var mode string
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 3 {
		t.Errorf("user_version = %d, %v; want 3", v, err)
	}
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}

	// Reopening runs no migration again and keeps the data.
	s, err = sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if _, err := s.GetMemory(t.Context(), m.ID, []string{"/p"}); err != nil {
		t.Errorf("after reopen: %v", err)
	}
	s.Close()

	// A schema from a newer contextd is refused, not misread.
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(&sqlite.Options{Path: path}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a schema 99 database: %v, want a refusal", err)
		if s != nil {
			s.Close()
		}
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite\n", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := sqlite.Open(&sqlite.Options{Path: path}); err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	} else if !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the file: %v", err)
	}
}

func TestVectorFusion(t *testing.T) {
	s := openTemp(t)
	defer s.Close()
	ctx := t.Context()
	scope := []string{"/p", store.Global}
	put := func(title, content string) *store.Memory {
		m := &store.Memory{Project: "/p", Title: title, Description: "d", Content: content, Confidence: 0.5}
		if err := s.PutMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	dockerA := put("Docker build cache", "BuildKit cache mounts")
	dockerB := put("Docker networks", "host.docker.internal")
	pods := put("Kubernetes pods restart", "CrashLoopBackOff means the container exits")
	titlesOf := func(hits []store.Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Memory.Title)
		}
		return out
	}
	has := func(hits []store.Hit, m *store.Memory) bool {
		for _, h := range hits {
			if h.Memory.ID == m.ID {
				return true
			}
		}
		return false
	}

	// No vectors stored: a query vector changes nothing.
	lexOnly, err := s.SearchMemories(ctx, store.MemoryQuery{Text: "docker", Projects: scope})
	if err != nil {
		t.Fatal(err)
	}
	withVec, err := s.SearchMemories(ctx, store.MemoryQuery{Text: "docker", Projects: scope, Vector: []float32{0, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(titlesOf(lexOnly), "|") != strings.Join(titlesOf(withVec), "|") {
		t.Errorf("without stored vectors: lexical %q, with a query vector %q", titlesOf(lexOnly), titlesOf(withVec))
	}

	for m, v := range map[*store.Memory][]float32{dockerA: {1, 0, 0}, dockerB: {0.9, 0.1, 0}, pods: {0, 1, 0}} {
		if err := s.SetMemoryVector(ctx, m.ID, m.Project, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetMemory(ctx, pods.ID, scope)
	if err != nil || got.Version != 1 {
		t.Errorf("SetMemoryVector changed the memory's version: %v, %v", got, err)
	}

	// The dense ranking brings in a memory without a word of the query,
	// and one found by both rankings comes first.
	hits, err := s.SearchMemories(ctx, store.MemoryQuery{Text: "docker", Projects: scope, Vector: []float32{0.1, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || !has(hits, pods) {
		t.Errorf("fused search: %q, want the pods memory among 3", titlesOf(hits))
	}
	if len(hits) > 0 && hits[len(hits)-1].Memory.ID == pods.ID && hits[0].Score <= hits[len(hits)-1].Score {
		t.Errorf("fused scores not descending: %v", hits)
	}
	// Vectors alone, with no words.
	hits, err = s.SearchMemories(ctx, store.MemoryQuery{Text: "", Projects: scope, Vector: []float32{0, 1, 0}, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Memory.ID != pods.ID {
		t.Errorf("vector-only search: %q, %v", titlesOf(hits), err)
	}
	// Another dimension matches no stored vector: lexical only.
	hits, err = s.SearchMemories(ctx, store.MemoryQuery{Text: "kubernetes", Projects: scope, Vector: []float32{1, 0}})
	if err != nil || len(hits) != 1 || hits[0].Memory.ID != pods.ID {
		t.Errorf("dimension mismatch: %q, %v", titlesOf(hits), err)
	}
	// Other projects' vectors are out of scope.
	hits, err = s.SearchMemories(ctx, store.MemoryQuery{Projects: []string{"/other"}, Vector: []float32{0, 1, 0}})
	if err != nil || len(hits) != 0 {
		t.Errorf("vector search in another project: %q, %v", titlesOf(hits), err)
	}

	// A counter update keeps the vector; a new text drops it.
	pods.Uses++
	if err := s.PutMemory(ctx, pods); err != nil {
		t.Fatal(err)
	}
	hits, _ = s.SearchMemories(ctx, store.MemoryQuery{Projects: scope, Vector: []float32{0, 1, 0}, Limit: 1})
	if len(hits) != 1 || hits[0].Memory.ID != pods.ID || hits[0].Memory.Uses != 1 {
		t.Errorf("after a counter update: %v", hits)
	}
	pods.Content = "rewritten"
	if err := s.PutMemory(ctx, pods); err != nil {
		t.Fatal(err)
	}
	hits, _ = s.SearchMemories(ctx, store.MemoryQuery{Projects: scope, Vector: []float32{0, 1, 0}})
	if has(hits, pods) {
		t.Errorf("the vector survived a change of content: %q", titlesOf(hits))
	}

	if err := s.SetMemoryVector(ctx, "no-such-id", pods.Project, []float32{1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetMemoryVector(unknown id): %v, want ErrNotFound", err)
	}
	// Another project's memory is not found, as with GetMemory.
	if err := s.SetMemoryVector(ctx, pods.ID, "/other", []float32{1, 0, 0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetMemoryVector in another project: %v, want ErrNotFound", err)
	}
	if err := s.SetMemoryVector(ctx, pods.ID, pods.Project, []float32{float32(math.NaN())}); err == nil {
		t.Errorf("SetMemoryVector accepted NaN")
	}
	if err := s.SetMemoryVector(ctx, dockerA.ID, dockerA.Project, nil); err != nil {
		t.Errorf("SetMemoryVector(nil): %v", err)
	}
}

// crashChild writes memories and checkpoints from three goroutines as fast
// as it can and prints "m ID" or "c ID" once each write has returned nil,
// until the parent kills it.
func crashChild(path string) int {
	s, err := sqlite.Open(&sqlite.Options{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 3
	}
	var mu sync.Mutex // one line per write(2), whole
	ack := func(kind, id string) {
		mu.Lock()
		os.Stdout.WriteString(kind + " " + id + "\n")
		mu.Unlock()
	}
	ctx := context.Background()
	for g := range 3 {
		go func() {
			for i := 0; ; i++ {
				if g == 2 {
					c := &store.Checkpoint{Project: "/crash", Session: "s", Summary: "round", Full: strings.Repeat("state ", 2000)}
					if err := s.PutCheckpoint(ctx, c); err != nil {
						fmt.Fprintln(os.Stderr, "crash child:", err)
						os.Exit(4)
					}
					ack("c", c.ID)
					continue
				}
				m := &store.Memory{Project: "/crash", Title: fmt.Sprintf("lesson %d of writer %d", i, g),
					Description: "written while being killed", Content: strings.Repeat("content words ", 50), Confidence: 0.5}
				if err := s.PutMemory(ctx, m); err != nil {
					fmt.Fprintln(os.Stderr, "crash child:", err)
					os.Exit(4)
				}
				ack("m", m.ID)
			}
		}()
	}
	select {}
}

// TestCrashSafety kills a writing child with SIGKILL at random moments and
// checks that every write it acknowledged is there and the file is sound.
func TestCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const rounds = 5
	var acked []string
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		lines := make(chan []string, 1)
		go func() {
			var got []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if len(got) == 0 {
					close(first)
				}
				got = append(got, sc.Text())
			}
			if len(got) == 0 {
				close(first)
			}
			lines <- got
		}()

		var delay time.Duration
		if round == 0 {
			// Early: likely during Open, schema creation or the first commits.
			delay = time.Duration(rand.IntN(40)) * time.Millisecond
		} else {
			<-first
			if round == 1 {
				// While the child runs, its database is refused to us.
				if s, err := sqlite.Open(&sqlite.Options{Path: path}); !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("Open while the child holds the database: %v, want ErrUnavailable", err)
					if s != nil {
						s.Close()
					}
				}
			}
			delay = time.Duration(20+rand.IntN(250)) * time.Millisecond
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("round %d: kill: %v", round, err)
		}
		got := <-lines
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child ended otherwise than by SIGKILL: %v; stderr: %s", round, err, stderr.String())
		}
		acked = append(acked, got...)

		s, err := sqlite.Open(&sqlite.Options{Path: path})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		missing := 0
		for _, line := range acked {
			kind, id, _ := strings.Cut(line, " ")
			var err error
			switch kind {
			case "m":
				_, err = s.GetMemory(t.Context(), id, []string{"/crash"})
			case "c":
				_, err = s.GetCheckpoint(t.Context(), id, "/crash")
			default:
				err = fmt.Errorf("bad line %q", line)
			}
			if err != nil {
				missing++
				if missing < 5 {
					t.Errorf("round %d: acknowledged %s lost: %v", round, line, err)
				}
			}
		}
		var check string
		if err := rawDB(t, path).QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Errorf("round %d: integrity_check = %q, %v", round, check, err)
		}
		var ftsErr error
		_, ftsErr = rawDB(t, path).Exec("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
		if ftsErr != nil {
			t.Errorf("round %d: FTS index integrity: %v", round, ftsErr)
		}
		n, _ := s.CountMemories(t.Context(), []string{"/crash"})
		t.Logf("round %d: killed after %v; %d writes acknowledged in all, %d lost, %d memories stored",
			round, delay, len(acked), missing, n)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged in any round")
	}
}
