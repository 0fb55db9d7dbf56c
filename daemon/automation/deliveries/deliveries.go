// Package deliveries keeps the record of webhook deliveries in SQLite: a delivery id claimed once per automation (the replay check), the call it started, how it ended, and the recent ones for `contextd automations list` and status.
package deliveries

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/nanotime"
	"github.com/contextd/contextd/internal/sqlitefile"
)

// StaleClaim is how long a claim with no call and no end holds its id: a
// daemon that stopped between the claim and the call leaves one, and the
// sender's retry must not be refused for ever.
const StaleClaim = time.Minute

// Delivery is one row of the record.
type Delivery struct {
	Automation string
	ID         string // the sender's delivery id
	Received   time.Time
	// CallID is the call the delivery started; empty when it started none.
	CallID string
	// Finished is when the call ended or the delivery was refused; zero
	// while it runs.
	Finished time.Time
	// Outcome is how it ended.
	Outcome
}

// Outcome is how a delivery ended: the catalog code it was refused or
// failed with, or else the exit status of the call it ran.
type Outcome struct {
	Code string
	Exit int
}

// ReplayError is Claim's refusal of an id already claimed.
type ReplayError struct {
	Automation, ID string
	Received       time.Time
	CallID         string // the earlier delivery's call; empty while it is being received
}

func (e *ReplayError) Error() string {
	call := "still being received"
	if e.CallID != "" {
		call = "call " + e.CallID
	}
	return fmt.Sprintf("automation %s: delivery %s was received at %s (%s): %s",
		e.Automation, e.ID, e.Received.UTC().Format(time.RFC3339), call, catalog.ErrHookReplay.Name)
}

// Unwrap makes a ReplayError a catalog.ErrHookReplay.
func (e *ReplayError) Unwrap() error { return catalog.ErrHookReplay }

// Store is the open record. Safe for concurrent use.
type Store struct {
	db *sqlitefile.DB
}

// DefaultPath is $XDG_STATE_HOME/contextd/hooks.db
// (~/.local/state/contextd/hooks.db).
func DefaultPath() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "contextd", "hooks.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("deliveries: no state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "contextd", "hooks.db"), nil
}

var schema = func() *sqlitefile.Migration {
	m := &sqlitefile.Migration{What: "the delivery record", Steps: []func(context.Context, *sql.Tx) error{
		func(ctx context.Context, tx *sql.Tx) error {
			// claimed = 1 holds the id against replays; a refused
			// delivery's row keeps its history without holding the id.
			_, err := tx.ExecContext(ctx, `
CREATE TABLE deliveries (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	automation TEXT    NOT NULL,
	delivery   TEXT    NOT NULL,
	received   INTEGER NOT NULL,
	claimed    INTEGER NOT NULL,
	call       TEXT    NOT NULL DEFAULT '',
	finished   INTEGER NOT NULL DEFAULT 0,
	code       TEXT    NOT NULL DEFAULT '',
	exit       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX deliveries_claim ON deliveries (automation, delivery) WHERE claimed = 1;
CREATE INDEX deliveries_received ON deliveries (received);`)
			return err
		},
	}}
	m.Version, m.SetVersion = sqlitefile.UserVersion()
	return m
}()

// Open opens (creating it) the record at path; "" is DefaultPath.
func Open(path string) (*Store, error) {
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	db, err := sqlitefile.Open(sqlitefile.Options{Name: "delivery record", Path: path, Readers: 2, Migrate: schema.Run})
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the record.
func (s *Store) Close() error { return s.db.Close() }

// Claim records that delivery id of automation arrived at at, once: an id
// already claimed (accepted, running, or claimed less than StaleClaim ago)
// is refused with a *ReplayError, naming the earlier call. A delivery
// refused after its claim gives its id back (Finish), so that the sender
// may retry it.
func (s *Store) Claim(automation, id string, at time.Time) error {
	ctx := context.Background()
	tx, err := s.db.W.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delivery record: %w", err)
	}
	defer tx.Rollback()
	var seq, received, finished int64
	var call string
	err = tx.QueryRowContext(ctx, `SELECT seq, received, call, finished FROM deliveries WHERE automation = ? AND delivery = ? AND claimed = 1`,
		automation, id).Scan(&seq, &received, &call, &finished)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("delivery record: %w", err)
	case call != "" || finished != 0 || at.Sub(nanotime.Time(received)) < StaleClaim:
		return &ReplayError{Automation: automation, ID: id, Received: nanotime.Time(received), CallID: call}
	default:
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET claimed = 0, finished = ?, code = ? WHERE seq = ?`,
			nanotime.Of(at), catalog.ErrInternal.Code, seq); err != nil {
			return fmt.Errorf("delivery record: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (automation, delivery, received, claimed) VALUES (?, ?, ?, 1)`,
		automation, id, nanotime.Of(at)); err != nil {
		return fmt.Errorf("delivery record: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delivery record: %w", err)
	}
	return nil
}

// Started ties a claimed delivery to the call it started.
func (s *Store) Started(automation, id, callID string) error {
	return s.update(`UPDATE deliveries SET call = ? WHERE automation = ? AND delivery = ? AND claimed = 1`, callID, automation, id)
}

// Finish records how a claimed delivery ended. One refused before it
// started a call (rate limited, a payload that does not expand) gives its
// id back.
func (s *Store) Finish(automation, id string, at time.Time, o Outcome) error {
	return s.update(`UPDATE deliveries SET finished = ?, code = ?, exit = ?, claimed = (call != '' OR ? = '')
		WHERE automation = ? AND delivery = ? AND claimed = 1`, nanotime.Of(at), o.Code, o.Exit, o.Code, automation, id)
}

// Refused records a delivery refused before its claim (no signature, a
// replay, a body over the bound): history only, holding no id.
func (s *Store) Refused(automation, id string, at time.Time, code string) error {
	_, err := s.db.W.Exec(`INSERT INTO deliveries (automation, delivery, received, claimed, finished, code) VALUES (?, ?, ?, 0, ?, ?)`,
		automation, id, nanotime.Of(at), nanotime.Of(at), code)
	if err != nil {
		return fmt.Errorf("delivery record: %w", err)
	}
	return nil
}

func (s *Store) update(query string, args ...any) error {
	res, err := s.db.W.Exec(query, args...)
	if err != nil {
		return fmt.Errorf("delivery record: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("delivery record: no claimed delivery %v of automation %v: %w", args[len(args)-1], args[len(args)-2], catalog.ErrInternal)
	}
	return nil
}

// Recent returns the n latest deliveries, newest first.
func (s *Store) Recent(n int) ([]Delivery, error) {
	rows, err := s.db.R.Query(`SELECT automation, delivery, received, call, finished, code, exit FROM deliveries ORDER BY received DESC, seq DESC LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("delivery record: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var received, finished int64
		if err := rows.Scan(&d.Automation, &d.ID, &received, &d.CallID, &finished, &d.Code, &d.Exit); err != nil {
			return nil, fmt.Errorf("delivery record: %w", err)
		}
		d.Received, d.Finished = nanotime.Time(received), nanotime.Time(finished)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("delivery record: %w", err)
	}
	return out, nil
}

// Prune deletes the deliveries received before before, and says how many.
// Their ids are claimable again: keep them longer than senders retry.
func (s *Store) Prune(before time.Time) (int64, error) {
	res, err := s.db.W.Exec(`DELETE FROM deliveries WHERE received < ?`, nanotime.Of(before))
	if err != nil {
		return 0, fmt.Errorf("delivery record: %w", err)
	}
	return res.RowsAffected()
}
