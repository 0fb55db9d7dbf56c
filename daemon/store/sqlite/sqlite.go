// Package sqlite is the embedded store.Store backend: one SQLite file per user.
package sqlite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/sqlitefile"
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
	db   *sqlitefile.DB
	path string
	w    *sql.DB // db.W: the one writer
	r    *sql.DB // db.R: the readers
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
// lock on it (o.Path+".lock") for the life of the Store. A database another
// process holds fails with an error wrapping store.ErrUnavailable.
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
	db, err := sqlitefile.Open(sqlitefile.Options{
		Name:        "sqlite store",
		Path:        opt.Path,
		BusyTimeout: opt.BusyTimeout,
		Readers:     opt.Readers,
		Migrate:     migrate,
		Unavailable: store.ErrUnavailable,
	})
	if err != nil {
		return nil, err
	}
	return &Store{db: db, path: db.Path, w: db.W, r: db.R}, nil
}

// Path returns the database's absolute path.
func (s *Store) Path() string { return s.path }

// Backend returns "sqlite:" and the database path.
func (s *Store) Backend() string { return "sqlite:" + s.path }

// Close closes the database and releases its lock. Calling it again returns
// the first call's result.
func (s *Store) Close() error { return s.db.Close() }

// Times are stored as Unix nanoseconds (0 for the zero time) and returned in
// UTC, so that what Put sets in a record equals what Get returns.
func now() time.Time { return time.Now().UTC().Round(0) }

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
