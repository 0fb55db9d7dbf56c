package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/contextd/contextd/internal/sqlitefile"
	"github.com/contextd/contextd/mcp/intercept"

	"github.com/contextd/contextd/internal/nanotime"
)

// The tool pins: mcp_pins, one row per tool of each server.

// Pins returns the store's tool pins as an intercept.PinStore.
func (s *Store) Pins() intercept.PinStore { return pins{s.db} }

type pins struct{ db *sqlitefile.DB }

// Get implements intercept.PinStore.
func (p pins) Get(ctx context.Context, server, tool string) (intercept.Pin, bool, error) {
	var (
		pin             intercept.Pin
		pinned, changed int64
	)
	err := p.db.R.QueryRowContext(ctx, `SELECT server, tool, hash, pending, pinned, changed
		FROM mcp_pins WHERE server = ? AND tool = ?`, server, tool).
		Scan(&pin.Server, &pin.Tool, &pin.Hash, &pin.Pending, &pinned, &changed)
	if errors.Is(err, sql.ErrNoRows) {
		return intercept.Pin{}, false, nil
	}
	if err != nil {
		return intercept.Pin{}, false, fmt.Errorf("mcp store: get pin %s/%s: %w", server, tool, err)
	}
	pin.Pinned, pin.Changed = nanotime.Time(pinned), nanotime.Time(changed)
	return pin, true, nil
}

// Put implements intercept.PinStore.
func (p pins) Put(ctx context.Context, server string, pin intercept.Pin) error {
	if _, err := p.db.W.ExecContext(ctx, `INSERT OR REPLACE INTO mcp_pins (server, tool, hash, pending, pinned, changed)
		VALUES (?, ?, ?, ?, ?, ?)`, server, pin.Tool, pin.Hash, pin.Pending, nanotime.Of(pin.Pinned), nanotime.Of(pin.Changed)); err != nil {
		return fmt.Errorf("mcp store: put pin %s/%s: %w", server, pin.Tool, err)
	}
	return nil
}

// List implements intercept.PinStore.
func (p pins) List(ctx context.Context, server string) ([]intercept.Pin, error) {
	q := `SELECT server, tool, hash, pending, pinned, changed FROM mcp_pins`
	var args []any
	if server != "" {
		q += ` WHERE server = ?`
		args = append(args, server)
	}
	rows, err := p.db.R.QueryContext(ctx, q+` ORDER BY server, tool`, args...)
	if err != nil {
		return nil, fmt.Errorf("mcp store: list pins: %w", err)
	}
	defer rows.Close()
	var out []intercept.Pin
	for rows.Next() {
		var (
			pin             intercept.Pin
			pinned, changed int64
		)
		if err := rows.Scan(&pin.Server, &pin.Tool, &pin.Hash, &pin.Pending, &pinned, &changed); err != nil {
			return nil, fmt.Errorf("mcp store: list pins: %w", err)
		}
		pin.Pinned, pin.Changed = nanotime.Time(pinned), nanotime.Time(changed)
		out = append(out, pin)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mcp store: list pins: %w", err)
	}
	return out, nil
}
