// Package callrec keeps the HTTP API's call records: the answer a call's
// caller got, for `GET /v1/calls/{id}`, and the page references its pages
// are fetched by.
package callrec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/ids"
)

// State is where a call is.
type State string

// The states of a call.
const (
	Running State = "running" // admitted or waiting; no answer yet
	Done    State = "done"    // answered: Answer holds what the caller got
	Refused State = "refused" // turned away before the tool ran: Answer holds the problem
)

// Record is one call as the API keeps it.
type Record struct {
	ID        string    `json:"id"`
	State     State     `json:"state"`
	Tool      string    `json:"tool"`
	Via       string    `json:"via,omitempty"`
	Session   string    `json:"session,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended,omitzero"`
	// Answer is what the caller got, as it got it (already scrubbed and
	// budgeted by the daemon): opaque to this package.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Pages are the references of the call's pages: Pages[0] the call's
	// own continuation, Pages[n] the one page n returned ("" when page n
	// was the last).
	Pages []string `json:"pages,omitempty"`
}

// Store is a directory of records, one JSON file each, readable by the
// owner only. A record is replaced whole (temp file and rename), so a
// reader never sees half of one.
type Store struct {
	dir string
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex // orders the read-modify-write of Update
}

// DefaultDir is $XDG_STATE_HOME/contextd/calls (~/.local/state when unset).
func DefaultDir() (string, error) {
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "contextd", "calls"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("callrec: no state directory (XDG_STATE_HOME and HOME unset): %w", err)
	}
	return filepath.Join(home, ".local", "state", "contextd", "calls"), nil
}

// Open makes dir (0700) if needed. Records older than ttl are not
// answered and are removed by Prune.
func Open(dir string, ttl time.Duration) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("callrec: %w", err)
	}
	// MkdirAll keeps the mode of a directory that exists: the records are
	// the owner's answers, never another user's to read.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("callrec: %w", err)
	}
	return &Store{dir: dir, ttl: ttl, now: time.Now}, nil
}

// New returns a fresh record in the Running state, not yet stored.
func (s *Store) New(tool, via string) Record {
	return Record{ID: ids.New(), State: Running, Tool: tool, Via: via, Started: s.now().UTC()}
}

// idForm is the form ids.New gives: only such a name is ever a path.
var idForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// errNoCall is a record that is not kept (never was, or expired).
func errNoCall(id string) error {
	return fmt.Errorf("call %q: %w", id, catalog.ErrNoCall)
}

// Put stores r, replacing its earlier form.
func (s *Store) Put(r Record) error {
	if !idForm.MatchString(r.ID) {
		return fmt.Errorf("callrec: id %q is not a call id: %w", r.ID, catalog.ErrInternal)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("callrec: %v: %w", err, catalog.ErrInternal)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("callrec: %v: %w", err, catalog.ErrIO)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path(r.ID))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("callrec: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

// Get returns the record of id; an error wrapping catalog.ErrNoCall when
// none is kept.
func (s *Store) Get(id string) (Record, error) {
	if !idForm.MatchString(id) {
		return Record{}, errNoCall(id)
	}
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, errNoCall(id)
	}
	if err != nil {
		return Record{}, fmt.Errorf("callrec: %v: %w", err, catalog.ErrIO)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("callrec: %s: %v: %w", id, err, catalog.ErrInternal)
	}
	if s.expired(r) {
		return Record{}, errNoCall(id)
	}
	return r, nil
}

// Update applies fn to the stored record of id and stores the result.
func (s *Store) Update(id string, fn func(*Record)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.Get(id)
	if err != nil {
		return err
	}
	fn(&r)
	return s.Put(r)
}

// Prune removes the records older than the store's ttl.
func (s *Store) Prune() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("callrec: %w", err)
	}
	cutoff := s.now().Add(-s.ttl)
	var errs []error
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) expired(r Record) bool {
	last := r.Started
	if !r.Ended.IsZero() {
		last = r.Ended
	}
	return s.ttl > 0 && s.now().Sub(last) > s.ttl
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+".json") }

// PageRef is the reference page n (from 1) of the call r is read with, or
// an error wrapping catalog.ErrNoCall: past the last page, or before page
// n-1 was fetched.
func (r Record) PageRef(n int) (string, error) {
	switch {
	case n < 1:
		return "", fmt.Errorf("page %d: pages count from 1: %w", n, catalog.ErrNoCall)
	case len(r.Pages) == 0:
		return "", fmt.Errorf("call %s: no answer with pages yet (state %s): %w", r.ID, r.State, catalog.ErrNoCall)
	case n > len(r.Pages):
		return "", fmt.Errorf("call %s: page %d: fetch page %d first: %w", r.ID, n, n-1, catalog.ErrNoCall)
	case r.Pages[n-1] == "":
		return "", fmt.Errorf("call %s: page %d: the output ends before it: %w", r.ID, n, catalog.ErrNoCall)
	}
	return r.Pages[n-1], nil
}

// SetPage records next, the reference page n returned.
func (r *Record) SetPage(n int, next string) {
	if n == len(r.Pages) {
		r.Pages = append(r.Pages, next)
	}
}
