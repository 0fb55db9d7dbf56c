package sqlitefile

import (
	"context"
	"database/sql"
	"fmt"
)

// Migration is one owner's schema: its steps and where it keeps its version.
// Steps[i] brings the schema from version i to i+1. Add a step at the end for
// every change; never edit one that has shipped, since databases already past
// it will not run it again.
type Migration struct {
	// What is migrated, for errors: "migrate <What>: ...".
	What  string
	Steps []func(ctx context.Context, tx *sql.Tx) error
	// Version reads the schema's version, 0 before the first step;
	// SetVersion writes it, in the step's transaction.
	Version    func(ctx context.Context, tx *sql.Tx) (int, error)
	SetVersion func(ctx context.Context, tx *sql.Tx, v int) error
}

// Run runs the missing steps, each in its own transaction together with the
// version it reaches, so that a crash leaves the schema at one version or the
// next, never between. A schema newer than the steps is refused rather than
// misread.
func (m *Migration) Run(ctx context.Context, db *sql.DB) error {
	for {
		done, err := m.step(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

func (m *Migration) step(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the writer's DSN says so
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", m.What, err)
	}
	defer tx.Rollback()
	v, err := m.Version(ctx, tx)
	if err != nil {
		return false, fmt.Errorf("migrate %s: read schema version: %w", m.What, err)
	}
	latest := len(m.Steps)
	switch {
	case v == latest:
		return true, nil
	case v > latest || v < 0:
		return false, fmt.Errorf("migrate %s: schema version %d is newer than this contextd understands (%d); upgrade contextd", m.What, v, latest)
	}
	if err := m.Steps[v](ctx, tx); err != nil {
		return false, fmt.Errorf("migrate %s to schema %d: %w", m.What, v+1, err)
	}
	if err := m.SetVersion(ctx, tx, v+1); err != nil {
		return false, fmt.Errorf("migrate %s to schema %d: %w", m.What, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate %s to schema %d: commit: %w", m.What, v+1, err)
	}
	return false, nil
}

// UserVersion keeps a schema's version in PRAGMA user_version, the file's one
// integer: for the file's main owner.
func UserVersion() (get func(context.Context, *sql.Tx) (int, error), set func(context.Context, *sql.Tx, int) error) {
	get = func(ctx context.Context, tx *sql.Tx) (int, error) {
		var v int
		err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	}
	set = func(ctx context.Context, tx *sql.Tx, v int) error {
		// PRAGMA takes no bound parameters; v is the runner's own integer.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	}
	return get, set
}
