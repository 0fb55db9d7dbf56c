package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"

	"github.com/contextd/contextd/internal/nanotime"
)

// PutCheckpoint stores c, setting its ID when empty and its Created.
// Checkpoints are immutable: an ID already stored is a conflict.
func (s *Store) PutCheckpoint(ctx context.Context, c *store.Checkpoint) error {
	id := c.ID
	if id == "" {
		id = ids.New()
	}
	t := now()
	// ON CONFLICT DO NOTHING plus the row count tells "already there" from
	// success in one statement, without a read first.
	res, err := s.w.ExecContext(ctx, `INSERT INTO checkpoints
		(id, project, session, name, summary, context, full_text, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		id, c.Project, c.Session, c.Name, c.Summary, c.Context, c.Full, nanotime.Of(t))
	if err != nil {
		return fmt.Errorf("sqlite store: put checkpoint %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite store: put checkpoint %q: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("sqlite store: put checkpoint %q: checkpoints are not replaced: %w", id, store.ErrConflict)
	}
	c.ID, c.Created = id, t
	return nil
}

// GetCheckpoint returns the checkpoint with id in project.
func (s *Store) GetCheckpoint(ctx context.Context, id, project string) (*store.Checkpoint, error) {
	var (
		c       store.Checkpoint
		created int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT id, project, session, name, summary, context, full_text, created
		FROM checkpoints WHERE id = ? AND project = ?`, id, project).
		Scan(&c.ID, &c.Project, &c.Session, &c.Name, &c.Summary, &c.Context, &c.Full, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("get checkpoint", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite store: get checkpoint %q: %w", id, err)
	}
	c.Created = nanotime.Time(created)
	return &c, nil
}

// ListCheckpoints returns project's checkpoints newest first, Full empty.
func (s *Store) ListCheckpoints(ctx context.Context, project string, limit int) ([]store.Checkpoint, error) {
	if limit <= 0 {
		limit = 20
	}
	// Newest is last written: checkpoints are never changed, so rowid
	// order is write order, and unlike Created it survives a clock step.
	rows, err := s.r.QueryContext(ctx, `SELECT id, project, session, name, summary, context, created
		FROM checkpoints WHERE project = ? ORDER BY rowid DESC LIMIT ?`, project, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: list checkpoints: %w", err)
	}
	defer rows.Close()
	var out []store.Checkpoint
	for rows.Next() {
		var (
			c       store.Checkpoint
			created int64
		)
		if err := rows.Scan(&c.ID, &c.Project, &c.Session, &c.Name, &c.Summary, &c.Context, &created); err != nil {
			return nil, fmt.Errorf("sqlite store: list checkpoints: %w", err)
		}
		c.Created = nanotime.Time(created)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: list checkpoints: %w", err)
	}
	return out, nil
}

const branchColumns = `id, session, project, parent, depth, description, budget, used, calls, open,
	summary, created, closed, version`

func scanBranch(sc interface{ Scan(...any) error }) (*store.Branch, error) {
	var (
		b               store.Branch
		created, closed int64
	)
	if err := sc.Scan(&b.ID, &b.Session, &b.Project, &b.Parent, &b.Depth, &b.Description, &b.Budget,
		&b.Used, &b.Calls, &b.Open, &b.Summary, &created, &closed, &b.Version); err != nil {
		return nil, err
	}
	b.Created, b.Closed = nanotime.Time(created), nanotime.Time(closed)
	return &b, nil
}

// PutBranch inserts b or replaces the branch with b.ID, with the same
// Version rule as PutMemory. Created is set on insert and kept after;
// Closed is the caller's.
func (s *Store) PutBranch(ctx context.Context, b *store.Branch) error {
	id := b.ID
	if id == "" {
		id = ids.New()
	}
	tx, cur, err := s.beginPut(ctx, "branch", "branches", id, b.Version)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	version, created := cur.version, cur.created
	if !cur.exists {
		version, created = 0, nanotime.Of(now())
	}
	version++
	// An upsert updates the row in place (INSERT OR REPLACE would delete
	// and reinsert it).
	_, err = tx.ExecContext(ctx, `INSERT INTO branches (`+branchColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET `+upsertSet(branchColumns, "id", "created"),
		id, b.Session, b.Project, b.Parent, b.Depth, b.Description, b.Budget, b.Used, b.Calls, b.Open,
		b.Summary, created, nanotime.Of(b.Closed), version)
	if err != nil {
		return fmt.Errorf("sqlite store: put branch %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: put branch %q: commit: %w", id, err)
	}
	b.ID, b.Version, b.Created = id, version, nanotime.Time(created)
	return nil
}

// storedRow is what a put reads of the row it is to replace.
type storedRow struct {
	exists           bool
	version, created int64
}

// beginPut opens the write transaction of a put of a kind ("memory") into
// table and reads the row with id. A non-zero claimed Version is a claim
// about the stored row: it must be there and unchanged since the caller
// read it (store.ErrConflict otherwise). The caller rolls tx back, which
// is a no-op after its Commit.
func (s *Store) beginPut(ctx context.Context, kind, table, id string, claimed int64) (*sql.Tx, storedRow, error) {
	fail := func(err error) (*sql.Tx, storedRow, error) {
		return nil, storedRow{}, fmt.Errorf("sqlite store: put %s %q: %w", kind, id, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	var cur storedRow
	err = tx.QueryRowContext(ctx, `SELECT version, created FROM `+table+` WHERE id = ?`, id).Scan(&cur.version, &cur.created)
	cur.exists = err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		tx.Rollback()
		return fail(err)
	}
	if claimed != 0 && (!cur.exists || cur.version != claimed) {
		tx.Rollback()
		return fail(fmt.Errorf("version %d is stale: %w", claimed, store.ErrConflict))
	}
	return tx, cur, nil
}

// upsertSet returns "col = excluded.col, ..." for the columns not in keep.
func upsertSet(columns string, keep ...string) string {
	var set []string
next:
	for _, c := range strings.Split(columns, ",") {
		c = strings.TrimSpace(c)
		for _, k := range keep {
			if c == k {
				continue next
			}
		}
		set = append(set, c+" = excluded."+c)
	}
	return strings.Join(set, ", ")
}

// GetBranch returns the branch with id of session.
func (s *Store) GetBranch(ctx context.Context, id, session string) (*store.Branch, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+branchColumns+` FROM branches WHERE id = ? AND session = ?`, id, session)
	b, err := scanBranch(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("get branch", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite store: get branch %q: %w", id, err)
	}
	return b, nil
}

// OpenBranches returns session's open branches, outermost (lowest Depth)
// first, then in the order they were first written (an upsert keeps the
// rowid).
func (s *Store) OpenBranches(ctx context.Context, session string) ([]store.Branch, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+branchColumns+` FROM branches
		WHERE session = ? AND open = 1 ORDER BY depth, rowid`, session)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open branches: %w", err)
	}
	defer rows.Close()
	var out []store.Branch
	for rows.Next() {
		b, err := scanBranch(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: open branches: %w", err)
		}
		out = append(out, *b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite store: open branches: %w", err)
	}
	return out, nil
}
