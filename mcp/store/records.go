package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/record"

	"github.com/contextd/contextd/internal/nanotime"
)

// The session records: mcp_sessions, one row per session, and mcp_entries,
// one per message.

// CreateSession stores a new session. An id already stored fails with
// record.ErrExists.
func (s *Store) CreateSession(ctx context.Context, sess *record.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("mcp store: create session: empty id: %w", catalog.ErrBadInput)
	}
	res, err := s.db.W.ExecContext(ctx, `INSERT INTO mcp_sessions (id, server, started, ended)
		VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		sess.ID, sess.Server, nanotime.Of(sess.Started), nanotime.Of(sess.Ended))
	if err != nil {
		return fmt.Errorf("mcp store: create session %q: %w", sess.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mcp store: create session %q: %w", sess.ID, err)
	} else if n == 0 {
		return fmt.Errorf("mcp store: create session %q: %w", sess.ID, record.ErrExists)
	}
	return nil
}

// EndSession sets a session's end time and why it ended early ("" for
// a normal end).
func (s *Store) EndSession(ctx context.Context, id string, ended time.Time, failure string) error {
	res, err := s.db.W.ExecContext(ctx, `UPDATE mcp_sessions SET ended = ?, failure = ? WHERE id = ?`, nanotime.Of(ended), failure, id)
	if err != nil {
		return fmt.Errorf("mcp store: end session %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mcp store: end session %q: %w", id, err)
	} else if n == 0 {
		return notFound("end session", id)
	}
	return nil
}

// SaveEntries stores a batch of a session's entries in one transaction (so
// a batch is saved whole or not at all). An entry whose Seq is stored already
// replaces it, so that a batch retried after an uncertain failure is not
// refused.
func (s *Store) SaveEntries(ctx context.Context, session string, batch []record.Entry) error {
	if len(batch) == 0 {
		return nil
	}
	tx, err := s.db.W.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mcp store: save entries of %q: %w", session, err)
	}
	defer tx.Rollback()
	var one int
	if err := tx.QueryRowContext(ctx, `SELECT 1 FROM mcp_sessions WHERE id = ?`, session).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("save entries of", session)
		}
		return fmt.Errorf("mcp store: save entries of %q: %w", session, err)
	}
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO mcp_entries
		(session, seq, dir, time, kind, msg_id, method, tool, corr, raw, original, action, rule, reply, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("mcp store: save entries of %q: %w", session, err)
	}
	defer st.Close()
	for i := range batch {
		e := &batch[i]
		if e.Seq == 0 || e.Seq > math.MaxInt64 || e.Corr > math.MaxInt64 {
			return fmt.Errorf("mcp store: save entries of %q: seq %d or corr %d out of range: %w",
				session, e.Seq, e.Corr, catalog.ErrBadInput)
		}
		raw := e.Raw
		if raw == nil {
			raw = []byte{} // NOT NULL: an empty message is still a message
		}
		if _, err := st.ExecContext(ctx, session, int64(e.Seq), e.Dir.String(), nanotime.Of(e.Time), e.Kind.String(),
			nullBytes(e.ID), e.Method, e.Tool, int64(e.Corr), raw, nullBytes(e.Original), e.Action.String(),
			e.Rule, nullBytes(e.Reply), e.Error); err != nil {
			return fmt.Errorf("mcp store: save entry %d of %q: %w", e.Seq, session, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mcp store: save entries of %q: commit: %w", session, err)
	}
	return nil
}

// nullBytes stores nil as NULL: no original, no reply, no id.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// ListSessions returns the latest sessions, newest first, at most limit
// (<= 0: 20), with their message counts.
func (s *Store) ListSessions(ctx context.Context, limit int) ([]record.Session, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := s.db.R.QueryContext(ctx, `SELECT id, server, started, ended, failure,
		(SELECT count(*) FROM mcp_entries WHERE session = mcp_sessions.id)
		FROM mcp_sessions ORDER BY rowid DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("mcp store: list sessions: %w", err)
	}
	defer rows.Close()
	var out []record.Session
	for rows.Next() {
		var (
			sess           record.Session
			started, ended int64
		)
		if err := rows.Scan(&sess.ID, &sess.Server, &started, &ended, &sess.Failure, &sess.Messages); err != nil {
			return nil, fmt.Errorf("mcp store: list sessions: %w", err)
		}
		sess.Started, sess.Ended = nanotime.Time(started), nanotime.Time(ended)
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mcp store: list sessions: %w", err)
	}
	return out, nil
}

// LoadSession returns a whole session, its entries in Seq order. The
// reads share one snapshot, so a session still being written comes back as
// it was at one instant.
func (s *Store) LoadSession(ctx context.Context, id string) (*record.Record, error) {
	tx, err := s.db.R.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("mcp store: load session %q: %w", id, err)
	}
	defer tx.Rollback()
	var (
		r              record.Record
		started, ended int64
	)
	err = tx.QueryRowContext(ctx, `SELECT id, server, started, ended, failure FROM mcp_sessions WHERE id = ?`, id).
		Scan(&r.Session.ID, &r.Session.Server, &started, &ended, &r.Session.Failure)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("load session", id)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp store: load session %q: %w", id, err)
	}
	r.Session.Started, r.Session.Ended = nanotime.Time(started), nanotime.Time(ended)
	rows, err := tx.QueryContext(ctx, `SELECT seq, dir, time, kind, msg_id, method, tool, corr, raw, original,
		action, rule, reply, error FROM mcp_entries WHERE session = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("mcp store: load session %q: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e                  record.Entry
			seq, t, corr       int64
			dir, kind, action  string
			msgID, orig, reply []byte
		)
		if err := rows.Scan(&seq, &dir, &t, &kind, &msgID, &e.Method, &e.Tool, &corr, &e.Raw, &orig,
			&action, &e.Rule, &reply, &e.Error); err != nil {
			return nil, fmt.Errorf("mcp store: load session %q: %w", id, err)
		}
		e.Seq, e.Corr, e.Time = uint64(seq), uint64(corr), nanotime.Time(t)
		if e.Dir, err = record.ParseDirection(dir); err == nil {
			if e.Kind, err = record.ParseKind(kind); err == nil {
				e.Action, err = record.ParseAction(action)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("mcp store: load session %q: entry %d: damaged row: %v: %w", id, seq, err, catalog.ErrStoreUnavailable)
		}
		// NULL scans as nil: no id, not modified, no reply.
		e.ID, e.Original, e.Reply = msgID, orig, reply
		if e.Raw == nil {
			e.Raw = []byte{}
		}
		r.Entries = append(r.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mcp store: load session %q: %w", id, err)
	}
	r.Session.Messages = len(r.Entries)
	return &r, nil
}

// notFound is the error for a session id that is not stored.
func notFound(op, id string) error {
	return fmt.Errorf("mcp store: %s %q: %w", op, id, record.ErrNotFound)
}
