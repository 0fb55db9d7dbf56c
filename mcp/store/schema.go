package store

import (
	"context"
	"database/sql"

	"github.com/contextd/contextd/internal/sqlitefile"
)

// steps[i] brings the MCP tables from version i to i+1. The version is kept
// in mcp_schema, not in PRAGMA user_version: that one integer belongs to the
// file's other owner when the tables share the daemon's state file. Add a
// step at the end for every change; never edit a step that has shipped,
// since databases already past it will not run it again.
var steps = []func(ctx context.Context, tx *sql.Tx) error{
	adopt, // 0 -> 1
}

// schemaVersion is the version this code reads and writes.
var schemaVersion = len(steps)

// adopt (0 -> 1) makes the tables, or takes over the ones the state store
// made before this package existed (its schema steps 1 -> 2 and 2 -> 3, the
// second of which may not have run), rows and all.
func adopt(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS mcp_sessions (
	rowid   INTEGER PRIMARY KEY, -- creation order, for listing newest first
	id      TEXT NOT NULL UNIQUE,
	server  TEXT NOT NULL,
	started INTEGER NOT NULL, -- Unix ns
	ended   INTEGER NOT NULL, -- Unix ns, 0 while running
	failure TEXT NOT NULL DEFAULT '' -- why the session ended early, "" for a normal end
);

-- One row per message, keyed by its place in the session. The message bytes
-- are BLOBs: they are kept exactly as relayed, valid UTF-8 or not.
CREATE TABLE IF NOT EXISTS mcp_entries (
	session  TEXT NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
	seq      INTEGER NOT NULL,
	dir      TEXT NOT NULL,    -- "client->server", "server->client"
	time     INTEGER NOT NULL, -- Unix ns
	kind     TEXT NOT NULL,    -- request, notification, response, error, batch, invalid
	msg_id   BLOB,             -- the JSON-RPC id's JSON, NULL for none
	method   TEXT NOT NULL,
	tool     TEXT NOT NULL,
	corr     INTEGER NOT NULL,
	raw      BLOB NOT NULL,
	original BLOB,             -- NULL unless modified
	action   TEXT NOT NULL,    -- forward, modify, drop
	rule     TEXT NOT NULL,
	reply    BLOB,
	error    TEXT NOT NULL,
	PRIMARY KEY (session, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS mcp_pins (
	server  TEXT NOT NULL,
	tool    TEXT NOT NULL,
	hash    TEXT NOT NULL,
	pending TEXT NOT NULL, -- "" when no change waits for approval
	pinned  INTEGER NOT NULL,
	changed INTEGER NOT NULL,
	PRIMARY KEY (server, tool)
) WITHOUT ROWID;
`); err != nil {
		return err
	}
	// A table from the state store's schema 2 lacks the failure column,
	// which its step 2 -> 3 added.
	var has int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('mcp_sessions') WHERE name = 'failure'`).
		Scan(&has); err != nil {
		return err
	}
	if has == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE mcp_sessions ADD COLUMN failure TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	return nil
}

// migrate brings the MCP tables to schemaVersion, the version kept in
// mcp_schema (sqlitefile.Migration).
func migrate(ctx context.Context, db *sql.DB) error {
	m := sqlitefile.Migration{What: "MCP tables", Steps: steps, Version: version, SetVersion: setVersion}
	return m.Run(ctx, db)
}

// setVersion writes the tables' schema version.
func setVersion(ctx context.Context, tx *sql.Tx, v int) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS mcp_schema (version INTEGER NOT NULL);
		DELETE FROM mcp_schema;`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO mcp_schema (version) VALUES (?)`, v)
	return err
}

// version reads the tables' schema version: 0 before the first step.
func version(ctx context.Context, tx *sql.Tx) (int, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'mcp_schema'`).
		Scan(&n); err != nil || n == 0 {
		return 0, err
	}
	var v int
	err := tx.QueryRowContext(ctx, `SELECT version FROM mcp_schema`).Scan(&v)
	return v, err
}
