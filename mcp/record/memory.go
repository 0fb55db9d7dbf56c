package record

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// MemoryStore keeps sessions in memory: for a replay's new run, which is
// compared and thrown away, and wherever no database is wanted. It
// implements Store and Loader and is safe for concurrent use. The zero value
// is ready to use.
type MemoryStore struct {
	mu       sync.Mutex
	sessions map[string]*memSession
	order    []string // creation order
}

type memSession struct {
	s       Session
	entries map[uint64]Entry
}

// CreateSession implements Store.
func (m *MemoryStore) CreateSession(_ context.Context, s *Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = map[string]*memSession{}
	}
	if _, dup := m.sessions[s.ID]; dup {
		return fmt.Errorf("record: session %q exists: %w", s.ID, ErrExists)
	}
	m.sessions[s.ID] = &memSession{s: *s, entries: map[uint64]Entry{}}
	m.order = append(m.order, s.ID)
	return nil
}

func (m *MemoryStore) session(id string) (*memSession, error) {
	ms, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("record: session %q: %w", id, ErrNotFound)
	}
	return ms, nil
}

// SaveEntries implements Store.
func (m *MemoryStore) SaveEntries(_ context.Context, session string, batch []Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, err := m.session(session)
	if err != nil {
		return err
	}
	for _, e := range batch {
		ms.entries[e.Seq] = e
	}
	return nil
}

// EndSession implements Store.
func (m *MemoryStore) EndSession(_ context.Context, id string, ended time.Time, failure string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, err := m.session(id)
	if err != nil {
		return err
	}
	ms.s.Ended, ms.s.Failure = ended.UTC(), failure
	return nil
}

// ListSessions implements Loader.
func (m *MemoryStore) ListSessions(_ context.Context, limit int) ([]Session, error) {
	if limit <= 0 {
		limit = 20
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Session
	for i := len(m.order) - 1; i >= 0 && len(out) < limit; i-- {
		ms := m.sessions[m.order[i]]
		s := ms.s
		s.Messages = len(ms.entries)
		out = append(out, s)
	}
	return out, nil
}

// LoadSession implements Loader.
func (m *MemoryStore) LoadSession(_ context.Context, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, err := m.session(id)
	if err != nil {
		return nil, err
	}
	r := &Record{Session: ms.s}
	for _, e := range ms.entries {
		r.Entries = append(r.Entries, e)
	}
	sort.Slice(r.Entries, func(i, j int) bool { return r.Entries[i].Seq < r.Entries[j].Seq })
	r.Session.Messages = len(r.Entries)
	return r, nil
}
