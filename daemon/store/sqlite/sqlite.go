// Package sqlite is the embedded store.Store backend: one SQLite file per user.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the pure Go driver, registered as "sqlite"; FTS5 is compiled in

	"github.com/contextd/contextd/daemon/store"
)

// Options configure Open. A nil *Options and zero fields mean the defaults
// given on each field.
type Options struct {
	// Path of the database file. Default: $XDG_DATA_HOME/contextd/state.db,
	// or ~/.local/share/contextd/state.db when XDG_DATA_HOME is unset or not
	// an absolute path (as the XDG base directory spec asks). A relative Path
	// is made absolute against the working directory. A directory Open
	// creates is made 0700; the file is kept 0600.
	Path string
	// BusyTimeout is how long a statement waits for a lock another
	// connection holds before failing. Default: 5 s.
	BusyTimeout time.Duration
	// Readers is the number of read connections, so that searches run
	// beside each other and beside the single writer. Default: 4.
	Readers int
}

// Store is the SQLite backend. Its methods are safe for concurrent use.
type Store struct {
	path string
	// w is the only connection that writes: SQLite admits one writer at a
	// time anyway, and queuing writers in database/sql is cheaper and fairer
	// than letting them spin in SQLite's busy handler.
	w *sql.DB
	// r is a pool of read-only connections; in WAL mode they read a
	// consistent snapshot while the writer commits.
	r *sql.DB
	// lock is held (flock) for the life of the Store: see lockFile.
	lock *os.File

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)
var _ store.Vectors = (*Store)(nil)

// DefaultPath is the database path Open uses when Options.Path is empty.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "contextd", "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sqlite store: default path: %w", err)
	}
	return filepath.Join(home, ".local", "share", "contextd", "state.db"), nil
}

// Open opens (creating it and its directory if needed) the database at
// o.Path, brings its schema to the current version and takes an exclusive
// lock on it for the life of the Store. A database another process holds
// fails with an error wrapping store.ErrUnavailable.
func Open(o *Options) (*Store, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		opt.Path = p
	}
	path, err := filepath.Abs(opt.Path)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", opt.Path, err)
	}
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = 5 * time.Second
	}
	if opt.Readers <= 0 {
		opt.Readers = 4
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: create directory: %w", path, err)
	}
	if err := checkLocalFS(filepath.Dir(path)); err != nil {
		return nil, err
	}
	lock, err := lockFile(path)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, lock: lock}
	if err := s.open(opt); err != nil {
		s.Close()
		if isBusy(err) {
			// Not another contextd (that one would hold the lock file)
			// but some process in a long write transaction, or one that
			// opened the file in exclusive locking mode.
			return nil, fmt.Errorf("%w; another process keeps the database locked (an sqlite3 shell?): "+
				"close it and start again: %w", err, store.ErrUnavailable)
		}
		return nil, err
	}
	return s, nil
}

// isBusy tells SQLITE_BUSY (5) and SQLITE_LOCKED (6), in any extended form,
// from other errors of the driver.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	c := coded.Code() & 0xff
	return c == 5 || c == 6
}

func (s *Store) open(opt Options) error {
	// Create the file ourselves, so that it is 0600 whatever the umask and
	// so that SQLite, which gives its -wal and -shm files the mode of the
	// database, makes those 0600 too.
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", s.path, err)
	}
	f.Close()
	if err := os.Chmod(s.path, 0o600); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", s.path, err)
	}

	base := []string{
		"busy_timeout(" + strconv.FormatInt(opt.BusyTimeout.Milliseconds(), 10) + ")",
		// WAL: readers never block the writer, and a commit is one append
		// to the log; FULL: that append is fsynced before the commit
		// returns, which is what makes a nil from a write durable across
		// kill -9 and power loss.
		"journal_mode(WAL)",
		"synchronous(FULL)",
		"foreign_keys(1)",
		// Read the file through a shared mapping rather than a private page
		// cache per connection: ranking joins thousands of FTS hits to their
		// rows, and with SQLite's default 2 MB cache each of those is a
		// pread. Writes still go through write(2) and the WAL.
		"mmap_size(268435456)",
	}
	dsn := func(readOnly bool) string {
		q := url.Values{"_pragma": append([]string(nil), base...)}
		if readOnly {
			q["_pragma"] = append(q["_pragma"], "query_only(1)")
		} else {
			// Take the write lock at BEGIN: a deferred transaction that
			// reads first and then writes can fail with SQLITE_BUSY
			// without waiting.
			q.Set("_txlock", "immediate")
		}
		// file: URI, so that a path holding '?' or '#' is escaped rather
		// than cut.
		return (&url.URL{Scheme: "file", Path: s.path, RawQuery: q.Encode()}).String()
	}

	if s.w, err = sql.Open("sqlite", dsn(false)); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", s.path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)

	ctx := context.Background()
	if err := migrate(ctx, s.w); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", s.path, err)
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite store: open %s: journal mode: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite store: open %s: journal mode is %q, not wal", s.path, mode)
	}

	if s.r, err = sql.Open("sqlite", dsn(true)); err != nil {
		return fmt.Errorf("sqlite store: open %s: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(opt.Readers)
	s.r.SetMaxIdleConns(opt.Readers)
	s.r.SetConnMaxIdleTime(0)
	return nil
}

// lockFile takes an exclusive flock on path+".lock", held until Close.
// SQLite's own locks keep concurrent transactions safe, but two daemons
// sharing one state file would still step on each other (each believing it
// alone maintains it), and a copy of contextd that opened the file in another
// journal mode or through another locking scheme could corrupt it. The
// kernel drops a flock when its holder dies, so kill -9 leaves no stale lock.
func lockFile(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: lock %s: %w", name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(name); rerr == nil && len(b) > 0 {
			holder = " (pid " + strings.TrimSpace(string(b)) + ")"
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("sqlite store: open %s: another process%s holds it; "+
				"stop the other contextd daemon (one per user) or give this one another store path: %w",
				path, holder, store.ErrUnavailable)
		}
		return nil, fmt.Errorf("sqlite store: lock %s: %v: %w", name, err, store.ErrUnavailable)
	}
	// The pid is only a hint for the error above; failing to write it is
	// no reason to refuse to start.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// Filesystems on which SQLite's WAL mode is unsafe: it needs shared memory
// and byte-range locks that network filesystems do not provide reliably
// (https://www.sqlite.org/wal.html), and two hosts would corrupt the file.
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x5346414f: "AFS",
	0x564c:     "NCP",
}

func checkLocalFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // not knowing is no reason to refuse
	}
	if name, ok := networkFS[int64(st.Type)]; ok {
		return fmt.Errorf("sqlite store: open: %s is on %s, where SQLite's WAL mode can corrupt the database; "+
			"put the store on a local disk (set XDG_DATA_HOME or the store path): %w", dir, name, store.ErrUnavailable)
	}
	return nil
}

// Backend returns "sqlite:" and the database path.
func (s *Store) Backend() string { return "sqlite:" + s.path }

// Close closes the database and releases its lock. Calling it again returns
// the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			// Closing the last connection checkpoints the WAL into the
			// database file and removes it.
			errs = append(errs, s.w.Close())
		}
		if s.lock != nil {
			errs = append(errs, s.lock.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite store: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// Times are stored as Unix nanoseconds (0 for the zero time) and returned in
// UTC, so that what Put sets in a record equals what Get returns.
func now() time.Time { return time.Now().UTC().Round(0) }

func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// inList returns "?, ?, ..." for n values and the values as arguments.
func inList(vals []string) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", "), args
}

// notFound is the error for an id absent from the caller's scope: it says
// nothing about other scopes.
func notFound(op, id string) error {
	return fmt.Errorf("sqlite store: %s %q: %w", op, id, store.ErrNotFound)
}
