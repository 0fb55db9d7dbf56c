// Package record keeps the session record of an MCP wrap: every message
// relayed, in order, with what the intercept engine did to it; it saves the
// record to a store as it goes, loads it back, exports it (JSON, JSON Lines,
// HAR 1.2, Markdown) and compares a replay with it.
package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/ids"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

// Session is one run of a wrap: one client connected to one server.
type Session struct {
	ID string
	// Server is what was wrapped: the command line of a stdio server, or the
	// URL of a remote one (Start takes a user and password out of it).
	Server  string
	Started time.Time
	Ended   time.Time // zero while the session runs (or if it never ended cleanly)
	// Failure is why the session ended early, when it did: the server could
	// not be started, or exited while the client still talked to it. It is
	// the error's catalog code and message, "CTXD-E034: ..."; empty for a
	// session that ended normally.
	Failure string
	// Messages is how many entries the session holds, as ListSessions and
	// LoadSession report it (not stored).
	Messages int
}

// Entry is one message of a session.
type Entry struct {
	Seq  uint64            // position in the session, from 1, over both directions
	Dir  jsonrpc.Direction // which way it traveled
	Time time.Time         // when the relay read it
	Kind jsonrpc.Kind
	ID   json.RawMessage // the JSON-RPC id as it appeared; nil for a notification
	// Method is the message's method; for a response or error, that of the
	// request it answers when known.
	Method string
	Tool   string // the tool of a tools/call request, and of its response
	// Corr is, for a response or error, the Seq of the request it answers (0
	// when unknown); for a request, its own Seq.
	Corr uint64
	// Raw is the message as it was passed on (for a dropped one, as it came).
	Raw []byte
	// Original is the message as it came, set only when the engine modified
	// it.
	Original []byte
	Action   relay.Action
	Rule     string // the rules that acted, comma-separated ("" for none)
	// Reply is what the engine sent back to the sender instead (a JSON-RPC
	// error refusing a request), if anything.
	Reply []byte
	// Error is why the message was blocked, when the engine failed on it.
	Error string
}

// Record is a whole session: the session and its entries in Seq order.
type Record struct {
	Session Session
	Entries []Entry
}

// Store is where a Recorder saves a session. Package mcp/store implements
// it in SQLite for the daemon; so does MemoryStore.
type Store interface {
	// CreateSession stores a new session.
	CreateSession(ctx context.Context, s *Session) error
	// SaveEntries stores entries of session (any Seq order; an entry saved
	// again with the same Seq replaces the first).
	SaveEntries(ctx context.Context, session string, batch []Entry) error
	// EndSession sets the session's end time and, for a session that ended
	// early, why (Session.Failure; "" for a normal end).
	EndSession(ctx context.Context, id string, ended time.Time, failure string) error
}

// Loader reads stored sessions back.
type Loader interface {
	// ListSessions returns the latest sessions, newest first, at most limit
	// (<= 0: 20), with their message counts.
	ListSessions(ctx context.Context, limit int) ([]Session, error)
	// LoadSession returns a whole session; an unknown id wraps
	// ErrNotFound.
	LoadSession(ctx context.Context, id string) (*Record, error)
}

// Options configure a Recorder. A nil *Options (or a zero field) means the
// default given on each field; Store is required.
type Options struct {
	// Store receives the entries.
	Store Store
	// BatchSize is how many entries one SaveEntries call takes; default 256.
	BatchSize int
	// FlushEvery is how long an entry may wait in memory before it is
	// saved; default 1 s.
	FlushEvery time.Duration
	// MaxBuffered bounds the entries held in memory: past it, Observe waits
	// for the store to take some (while the store works) so that memory
	// stays bounded and nothing is lost. Default 4096.
	MaxBuffered int
	// Redact, if set, is applied to every message stored (Raw, Original,
	// Reply) before it is saved, and to the session's Server. The daemon sets it to the intercept engine's
	// Redact, so that a message's original, from before the engine scrubbed
	// it, is not written to disk with its secrets.
	Redact func([]byte) []byte
}

// Recorder records a session: it implements relay.Observer, buffers entries
// and saves them in batches from a goroutine of its own, so that the
// forward loops never wait for the disk (unless MaxBuffered entries pile up).
type Recorder struct {
	o    Options
	sess Session

	mu       sync.Mutex
	drained  *sync.Cond // signaled when the flusher took entries or failed
	buf      []Entry
	saving   int   // entries the flusher is saving now
	failure  error // the last failed save, nil once one succeeds
	lost     int   // entries given up on
	closed   bool
	kick     chan struct{}
	finished chan struct{}
}

var _ relay.Observer = (*Recorder)(nil)

// Errors of a Store and a Loader.
var (
	// ErrNotFound: no session with that id.
	ErrNotFound = errors.New("no such MCP session")
	// ErrExists: a session with that id was already created.
	ErrExists = errors.New("MCP session exists")
)

// Start creates session s in o.Store (an empty ID gets a new one, a zero
// Started the current time) and returns its Recorder. Close it when the
// session ends.
func Start(ctx context.Context, s Session, o *Options) (*Recorder, error) {
	if o == nil || o.Store == nil {
		return nil, fmt.Errorf("record: no store: %w", catalog.ErrInternal)
	}
	opt := *o
	if opt.BatchSize <= 0 {
		opt.BatchSize = 256
	}
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = time.Second
	}
	if opt.MaxBuffered <= 0 {
		opt.MaxBuffered = 4096
	}
	if s.ID == "" {
		s.ID = ids.New()
	}
	if s.Started.IsZero() {
		s.Started = time.Now()
	}
	s.Started = s.Started.UTC()
	s.Server = ServerLabel(s.Server)
	if opt.Redact != nil {
		// A command line can hold a key too (--api-key ...).
		s.Server = string(opt.Redact([]byte(s.Server)))
	}
	if err := opt.Store.CreateSession(ctx, &s); err != nil {
		return nil, fmt.Errorf("record: create session: %w", err)
	}
	r := &Recorder{o: opt, sess: s, kick: make(chan struct{}, 1), finished: make(chan struct{})}
	r.drained = sync.NewCond(&r.mu)
	go r.flusher()
	return r, nil
}

// Session returns the session being recorded.
func (r *Recorder) Session() Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}

// Observe implements relay.Observer: it appends m's entry. What a response
// answers is the relay's correlation (m.Corr, ReqMethod, ReqTool): the
// recorder keeps none of its own.
func (r *Recorder) Observe(m *jsonrpc.Message, v relay.Verdict, err error) {
	e := Entry{
		Seq: m.Seq, Dir: m.Dir, Time: m.Time.UTC(), Kind: m.Info.Kind,
		Method: m.Info.Method, Tool: m.Info.Tool, Corr: m.Corr,
		Action: v.Action, Rule: v.Rule,
	}
	if (e.Kind == jsonrpc.KindResponse || e.Kind == jsonrpc.KindError) && e.Corr != 0 {
		// A response's envelope names neither: they are its request's.
		e.Method, e.Tool = m.ReqMethod, m.ReqTool
	}
	if m.Info.ID != nil {
		e.ID = append(json.RawMessage(nil), m.Info.ID...)
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	// The relay may reuse its buffers once Observe returns.
	if v.Action == relay.Modify && err == nil {
		e.Raw = append([]byte(nil), v.Raw...)
		e.Original = append([]byte(nil), m.Raw...)
	} else {
		e.Raw = append([]byte(nil), m.Raw...)
	}
	if v.Reply != nil {
		e.Reply = append([]byte(nil), v.Reply...)
	}
	if err != nil {
		e.Action = relay.Drop
		e.Error = err.Error()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.lost++
		return
	}
	for len(r.buf)+r.saving >= r.o.MaxBuffered && r.failure == nil && !r.closed {
		r.kickLocked()
		r.drained.Wait()
	}
	if len(r.buf)+r.saving >= r.o.MaxBuffered {
		// The store is failing: waiting would stop the relay for good.
		r.lost++
		return
	}
	r.buf = append(r.buf, e)
	if len(r.buf) >= r.o.BatchSize {
		r.kickLocked()
	}
}

func (r *Recorder) kickLocked() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// flusher saves buffered entries every FlushEvery, when a batch is full, and
// at Close.
func (r *Recorder) flusher() {
	defer close(r.finished)
	t := time.NewTicker(r.o.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-r.kick:
		}
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		r.flushAll()
		if closed {
			return
		}
	}
}

// flushAll saves everything buffered, batch by batch, stopping at the first
// failure (the entries stay buffered for the next try).
func (r *Recorder) flushAll() {
	for {
		r.mu.Lock()
		n := min(len(r.buf), r.o.BatchSize)
		if n == 0 {
			r.mu.Unlock()
			return
		}
		batch := make([]Entry, n)
		copy(batch, r.buf[:n])
		r.buf = append(r.buf[:0:0], r.buf[n:]...)
		r.saving = n
		r.mu.Unlock()

		if r.o.Redact != nil {
			for i := range batch {
				batch[i].Raw = r.o.Redact(batch[i].Raw)
				if batch[i].Original != nil {
					batch[i].Original = r.o.Redact(batch[i].Original)
				}
				if batch[i].Reply != nil {
					batch[i].Reply = r.o.Redact(batch[i].Reply)
				}
			}
		}
		sort.Slice(batch, func(i, j int) bool { return batch[i].Seq < batch[j].Seq })
		err := r.o.Store.SaveEntries(context.Background(), r.sess.ID, batch)

		r.mu.Lock()
		r.saving = 0
		if err != nil {
			// Put the batch back in front; redacting again later is
			// harmless (placeholders are not secrets).
			r.buf = append(batch, r.buf...)
			r.failure = err
		} else {
			r.failure = nil
		}
		r.drained.Broadcast()
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// SetFailure records why the session ends early (Session.Failure), saved
// with its end by Close. The first call wins: it is the cause, what follows
// its consequences.
func (r *Recorder) SetFailure(failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sess.Failure == "" {
		r.sess.Failure = failure
	}
}

// Flush saves every entry observed so far, and reports a failure to.
func (r *Recorder) Flush() error {
	r.flushAll()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure != nil {
		return fmt.Errorf("record: save session %s: %w", r.sess.ID, r.failure)
	}
	return nil
}

// Close saves what is left, ends the session and stops the recorder. Entries
// observed after Close, or that could not be saved, are reported lost in
// its error.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.drained.Broadcast()
	r.kickLocked()
	r.mu.Unlock()
	<-r.finished

	// One more try for whatever a failing store left behind.
	r.flushAll()
	r.mu.Lock()
	lost := r.lost + len(r.buf)
	failure := r.failure
	r.sess.Ended = time.Now().UTC()
	sess := r.sess
	r.mu.Unlock()
	endErr := r.o.Store.EndSession(context.Background(), sess.ID, sess.Ended, sess.Failure)
	switch {
	case lost > 0 && failure != nil:
		return fmt.Errorf("record: session %s: %d messages not saved: %w", r.sess.ID, lost, failure)
	case lost > 0:
		return fmt.Errorf("record: session %s: %d messages not saved (observed after Close or while the store failed): %w",
			r.sess.ID, lost, catalog.ErrIO)
	case endErr != nil:
		return fmt.Errorf("record: end session %s: %w", r.sess.ID, endErr)
	}
	return nil
}
