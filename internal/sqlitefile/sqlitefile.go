// Package sqlitefile opens an SQLite file the way contextd keeps each of its databases.
package sqlitefile

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
)

// ErrUnavailable is what Open's refusals wrap when Options.Unavailable is nil.
var ErrUnavailable = errors.New("database unavailable")

// Options configure Open. Zero fields mean the defaults given on each field.
type Options struct {
	// Name starts every error message ("sqlite store").
	Name string
	// Path of the database file; a relative one is made absolute against
	// the working directory. A directory Open creates is made 0700; the
	// file is kept 0600.
	Path string
	// LockSuffix names the lock file Open holds for the life of the DB,
	// Path+LockSuffix: see lockFile. Default: ".lock". Two owners of tables
	// in one file each hold a lock of their own.
	LockSuffix string
	// BusyTimeout is how long a statement waits for a lock another
	// connection holds before failing. Default: 5 s.
	BusyTimeout time.Duration
	// Readers is the number of read connections, so that reads run beside
	// each other and beside the single writer. Default: 4.
	Readers int
	// Migrate, if set, brings the owner's tables to its schema on the
	// writer before any reader opens.
	Migrate func(ctx context.Context, w *sql.DB) error
	// Unavailable is wrapped by the refusals that mean the file is not ours
	// to use now (another process holds it, a network filesystem), so that
	// an owner finds them with its own sentinel. Default: ErrUnavailable.
	Unavailable error
}

// DB is an open database: one writer and a pool of readers. Its methods
// are safe for concurrent use.
type DB struct {
	// Path is the database's absolute path.
	Path string
	// W is the only connection that writes: SQLite admits one writer at a
	// time anyway, and queuing writers in database/sql is cheaper and
	// fairer than letting them spin in SQLite's busy handler. Its
	// transactions take the write lock at BEGIN.
	W *sql.DB
	// R is a pool of read-only connections; in WAL mode they read a
	// consistent snapshot while the writer commits.
	R *sql.DB

	name string
	lock *os.File

	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating it and its directory if needed) the database at
// o.Path in WAL mode with synchronous commits, takes an exclusive lock on
// its lock file and runs o.Migrate.
func Open(o Options) (*DB, error) {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.Unavailable == nil {
		o.Unavailable = ErrUnavailable
	}
	path, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", o.Name, o.Path, err)
	}
	if o.LockSuffix == "" {
		o.LockSuffix = ".lock"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%s: open %s: create directory: %w", o.Name, path, err)
	}
	if err := checkLocalFS(o, filepath.Dir(path)); err != nil {
		return nil, err
	}
	lock, err := lockFile(o, path)
	if err != nil {
		return nil, err
	}
	db := &DB{Path: path, name: o.Name, lock: lock}
	if err := db.open(o); err != nil {
		db.Close()
		if isBusy(err) {
			// Not another contextd (that one would hold the lock file)
			// but some process in a long write transaction, or one that
			// opened the file in exclusive locking mode.
			return nil, fmt.Errorf("%w; another process keeps the database locked (an sqlite3 shell?): "+
				"close it and start again: %w", err, o.Unavailable)
		}
		return nil, err
	}
	return db, nil
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

func (db *DB) open(o Options) error {
	// Create the file ourselves, so that it is 0600 whatever the umask and
	// so that SQLite, which gives its -wal and -shm files the mode of the
	// database, makes those 0600 too.
	f, err := os.OpenFile(db.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", o.Name, db.Path, err)
	}
	f.Close()
	if err := os.Chmod(db.Path, 0o600); err != nil {
		return fmt.Errorf("%s: open %s: %w", o.Name, db.Path, err)
	}

	base := []string{
		"busy_timeout(" + strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10) + ")",
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
		return (&url.URL{Scheme: "file", Path: db.Path, RawQuery: q.Encode()}).String()
	}

	if db.W, err = sql.Open("sqlite", dsn(false)); err != nil {
		return fmt.Errorf("%s: open %s: %w", o.Name, db.Path, err)
	}
	db.W.SetMaxOpenConns(1)
	db.W.SetMaxIdleConns(1)
	db.W.SetConnMaxLifetime(0)
	db.W.SetConnMaxIdleTime(0)

	ctx := context.Background()
	if o.Migrate != nil {
		if err := o.Migrate(ctx, db.W); err != nil {
			return fmt.Errorf("%s: open %s: %w", o.Name, db.Path, err)
		}
	}
	var mode string
	if err := db.W.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("%s: open %s: journal mode: %w", o.Name, db.Path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("%s: open %s: journal mode is %q, not wal", o.Name, db.Path, mode)
	}

	if db.R, err = sql.Open("sqlite", dsn(true)); err != nil {
		return fmt.Errorf("%s: open %s: %w", o.Name, db.Path, err)
	}
	db.R.SetMaxOpenConns(o.Readers)
	db.R.SetMaxIdleConns(o.Readers)
	db.R.SetConnMaxIdleTime(0)
	return nil
}

// lockFile takes an exclusive flock on path+o.LockSuffix, held until
// Close. SQLite's own locks keep concurrent transactions safe, but two
// daemons sharing one file would still step on each other (each believing
// it alone maintains it), and a copy of contextd that opened the file in
// another journal mode or through another locking scheme could corrupt it.
// The kernel drops a flock when its holder dies, so kill -9 leaves no stale
// lock.
func lockFile(o Options, path string) (*os.File, error) {
	name := path + o.LockSuffix
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: lock %s: %w", o.Name, name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(name); rerr == nil && len(b) > 0 {
			holder = " (pid " + strings.TrimSpace(string(b)) + ")"
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: open %s: another process%s holds it; "+
				"stop the other contextd daemon (one per user) or give this one another store path: %w",
				o.Name, path, holder, o.Unavailable)
		}
		return nil, fmt.Errorf("%s: lock %s: %v: %w", o.Name, name, err, o.Unavailable)
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

func checkLocalFS(o Options, dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // not knowing is no reason to refuse
	}
	if name, ok := networkFS[int64(st.Type)]; ok {
		return fmt.Errorf("%s: open: %s is on %s, where SQLite's WAL mode can corrupt the database; "+
			"put the store on a local disk (set XDG_DATA_HOME or the store path): %w", o.Name, dir, name, o.Unavailable)
	}
	return nil
}

// Close closes the database and releases its lock. Calling it again returns
// the first call's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		var errs []error
		if db.R != nil {
			errs = append(errs, db.R.Close())
		}
		if db.W != nil {
			// Closing the file's last connection checkpoints the WAL into
			// the database file and removes it.
			errs = append(errs, db.W.Close())
		}
		if db.lock != nil {
			errs = append(errs, db.lock.Close())
		}
		if err := errors.Join(errs...); err != nil {
			db.closeErr = fmt.Errorf("%s: close %s: %w", db.name, db.Path, err)
		}
	})
	return db.closeErr
}
