// Package store keeps the MCP wrap's session records and tool pins in SQLite.
package store

import (
	"fmt"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/sqlitefile"
	"github.com/contextd/contextd/mcp/intercept"
	"github.com/contextd/contextd/mcp/record"
)

// Options configure Open. Zero fields mean the defaults given on each field.
type Options struct {
	// Path of the database file (required). The tables are the mcp_ ones
	// and nothing else, so the file may be shared with another owner: the
	// daemon keeps them in its SQLite state file, where every contextd
	// before this package kept them.
	Path string
	// BusyTimeout is how long a statement waits for a lock another
	// connection (another owner's writer too) holds before failing.
	// Default: 5 s.
	BusyTimeout time.Duration
	// Readers is the number of read connections. Default: 4.
	Readers int
}

// Store keeps session records (record.Store, record.Loader) and tool pins
// (Pins). Its methods are safe for concurrent use.
type Store struct {
	db *sqlitefile.DB
}

var (
	_ record.Store       = (*Store)(nil)
	_ record.Loader      = (*Store)(nil)
	_ intercept.PinStore = pins{}
)

// LockSuffix names the lock file Open holds (Path+LockSuffix), one of its
// own so that it can share a file whose other owner holds Path+".lock".
const LockSuffix = ".mcp.lock"

// Open opens (creating it if needed) the database at o.Path, brings the
// MCP tables to this package's schema and takes an exclusive lock for the
// life of the Store. A file another process holds fails with an error
// wrapping catalog.ErrStoreUnavailable.
func Open(o *Options) (*Store, error) {
	if o == nil || o.Path == "" {
		return nil, fmt.Errorf("mcp store: open: no path: %w", catalog.ErrInternal)
	}
	db, err := sqlitefile.Open(sqlitefile.Options{
		Name:        "mcp store",
		Path:        o.Path,
		LockSuffix:  LockSuffix,
		BusyTimeout: o.BusyTimeout,
		Readers:     o.Readers,
		Migrate:     migrate,
		Unavailable: catalog.ErrStoreUnavailable,
	})
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Path returns the database's absolute path.
func (s *Store) Path() string { return s.db.Path }

// Close closes the database and releases its lock. Calling it again returns
// the first call's result.
func (s *Store) Close() error { return s.db.Close() }
