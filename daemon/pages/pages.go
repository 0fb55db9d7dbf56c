// Package pages stores tool output that did not fit a response, for continuation pages.
package pages

// Layout: Dir (0700) holds one directory (0700) per session, named by a hash of
// the session id, holding per output <id>.out (the raw bytes, 0600) and, once
// committed, <id>.meta (JSON, 0600, written to <id>.meta.tmp and renamed, so it
// is whole or absent). The directory a lookup goes to is derived from the
// caller's session, so one session's reference does not even name a file in
// another's.
//
// A daemon restart keeps committed, unexpired outputs: the daemon exits when
// idle and socket activation starts it again on the next call, which may well
// be a --continue. Open rebuilds the index from the .meta files, which name
// their owner session and expiry, and removes everything of ours that is
// expired, uncommitted (a crash mid-write) or unreadable. Files it does not
// recognise are left alone, so a misconfigured Dir cannot cost a user data.
//
// Locking: Store.mu guards the index and the byte total, and is the only lock;
// no file is touched while it is held (victims are removed after unlocking,
// and lookups go through the index, so a file about to be removed is already
// unknown). An Entry belongs to the one goroutine that writes it.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ErrUnknown is returned for a reference to no output: never stored, expired,
// evicted, or another session's. Which one is not said.
var ErrUnknown = errors.New("unknown or expired continuation reference")

// ErrTooLarge is returned by Commit for an output larger than MaxTotal.
var ErrTooLarge = errors.New("output larger than the page store")

// Defaults of Options.
const (
	DefaultTTL      = time.Hour
	DefaultMaxTotal = 512 << 20
	DefaultMaxEntry = 256 << 20
)

// Options configure a Store. The zero value (or nil) means every default.
type Options struct {
	// Dir holds the stored outputs. Default: $XDG_STATE_HOME/contextd/pages,
	// or ~/.local/state/contextd/pages when XDG_STATE_HOME is unset or not
	// absolute. It is created 0700; an existing one is tightened to 0700, and
	// refused if another user owns it.
	Dir string
	// TTL is how long an output stays readable after Commit. Default 1h.
	TTL time.Duration
	// MaxTotal bounds the bytes of all committed outputs; committing past it
	// evicts the oldest first. An output larger than MaxTotal is refused
	// (ErrTooLarge). Outputs still being written count from their Commit on;
	// until then each is bounded by MaxEntry. Default 512 MiB.
	MaxTotal int64
	// MaxEntry bounds one output: bytes written beyond it are dropped (the
	// writer is not failed, so a command's output is still drained), and the
	// output records how many, so its last page can say it is incomplete.
	// Default 256 MiB.
	MaxEntry int64
	// Sweep is how often expired outputs are removed. Default TTL/4, between
	// 1s and 1 min. Reads check expiry themselves, so this bounds only how
	// long an expired output takes disk space.
	Sweep time.Duration
	// Now is the clock. Default time.Now; tests set it to move time.
	Now func() time.Time
}

// Store keeps outputs for continuation pages. It is safe for concurrent use.
type Store struct {
	dir                string
	ttl                time.Duration
	maxTotal, maxEntry int64
	now                func() time.Time

	mu    sync.Mutex
	index map[string]*record // committed outputs by id
	total int64              // bytes of the outputs in index

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Open opens (creating if needed) the store in o.Dir, removes what a previous
// daemon left that is expired or incomplete, and starts the janitor that
// removes outputs as they expire; Close stops it.
func Open(o *Options) (*Store, error) {
	if o == nil {
		o = &Options{}
	}
	if o.TTL < 0 || o.MaxTotal < 0 || o.MaxEntry < 0 || o.Sweep < 0 {
		return nil, fmt.Errorf("pages: TTL, MaxTotal, MaxEntry and Sweep must not be negative")
	}
	s := &Store{
		dir:      o.Dir,
		ttl:      o.TTL,
		maxTotal: o.MaxTotal,
		maxEntry: o.MaxEntry,
		now:      o.Now,
		index:    map[string]*record{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if s.dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		s.dir = d
	}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if s.maxTotal == 0 {
		s.maxTotal = DefaultMaxTotal
	}
	if s.maxEntry == 0 {
		s.maxEntry = DefaultMaxEntry
	}
	if s.now == nil {
		s.now = time.Now
	}
	sweep := o.Sweep
	if sweep == 0 {
		sweep = min(max(s.ttl/4, time.Second), time.Minute)
	}
	if err := secureDir(s.dir); err != nil {
		return nil, err
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	go s.janitor(sweep)
	return s, nil
}

// DefaultDir returns the default Options.Dir.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "contextd", "pages"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("pages: no state directory (XDG_STATE_HOME and HOME unset): %w", err)
	}
	return filepath.Join(home, ".local", "state", "contextd", "pages"), nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Usage returns the number and total bytes of the committed outputs.
func (s *Store) Usage() (outputs int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.index), s.total
}

// Close stops the janitor. Stored outputs stay on disk for the next daemon;
// the Store itself remains usable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
	})
	return nil
}

func (s *Store) janitor(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// Errors are removals that failed; the next sweep (or the next
			// daemon's Open) tries again, and reads never see the output.
			_ = s.Sweep()
		}
	}
}

// Sweep removes the outputs that have expired. The janitor calls it
// periodically.
func (s *Store) Sweep() error {
	now := s.now()
	s.mu.Lock()
	var gone []*record
	for id, r := range s.index {
		if !now.Before(r.Expires) {
			gone = append(gone, r)
			s.drop(id)
		}
	}
	s.mu.Unlock()
	return s.removeAll(gone)
}

// drop takes an output out of the index; s.mu must be held.
func (s *Store) drop(id string) {
	if r, ok := s.index[id]; ok {
		s.total -= r.Size
		delete(s.index, id)
	}
}

// admit indexes a committed output, evicting the oldest outputs until the
// total fits MaxTotal, and returns the evicted ones for removal.
func (s *Store) admit(r *record) []*record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []*record
	for s.total+r.Size > s.maxTotal && len(s.index) > 0 {
		oldest := s.oldest()
		gone = append(gone, s.index[oldest])
		s.drop(oldest)
	}
	s.index[r.id] = r
	s.total += r.Size
	return gone
}

// oldest returns the id of the output committed first; s.mu must be held
// and the index not empty. A scan: the index holds hundreds of outputs, not
// millions, and this runs only when the store is full.
func (s *Store) oldest() string {
	var id string
	var at time.Time
	for k, r := range s.index {
		if id == "" || r.Created.Before(at) || r.Created.Equal(at) && k < id {
			id, at = k, r.Created
		}
	}
	return id
}

// removeAll removes the files of outputs already out of the index.
func (s *Store) removeAll(rs []*record) error {
	var errs []error
	for _, r := range rs {
		errs = append(errs, s.remove(r.Session, r.id))
	}
	return errors.Join(errs...)
}

// remove deletes an output's files, the metadata first: without it a later
// Open takes the data for a crash leftover, never for a readable output.
func (s *Store) remove(key, id string) error {
	var errs []error
	for _, ext := range []string{".meta", ".meta.tmp", ".out"} {
		p := filepath.Join(s.dir, key, id+ext)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("pages: unlink %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
