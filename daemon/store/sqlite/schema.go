package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings the schema from version i to i+1 (PRAGMA
// user_version). Add a step at the end for every change; never edit a step
// that has shipped, since databases already past it will not run it again.
var migrations = []string{
	// 0 -> 1: the first schema.
	`
CREATE TABLE memories (
	rowid       INTEGER PRIMARY KEY, -- stable, for the FTS index
	id          TEXT NOT NULL UNIQUE,
	project     TEXT NOT NULL,
	title       TEXT NOT NULL,
	description TEXT NOT NULL,
	content     TEXT NOT NULL,
	outcome     TEXT NOT NULL,
	tags        TEXT NOT NULL, -- JSON array; its punctuation is a separator to the tokenizer
	confidence  REAL NOT NULL,
	uses        INTEGER NOT NULL,
	helpful     INTEGER NOT NULL,
	unhelpful   INTEGER NOT NULL,
	archived    INTEGER NOT NULL,
	created     INTEGER NOT NULL, -- Unix ns
	updated     INTEGER NOT NULL,
	version     INTEGER NOT NULL,
	vector      BLOB -- optional embedding, little-endian float32s
);
CREATE INDEX memories_project ON memories (project, archived);

-- External-content FTS5 index over the searchable columns. porter over
-- unicode61 folds case and diacritics and stems English words, so that
-- "failing tests" finds "test failed".
CREATE VIRTUAL TABLE memories_fts USING fts5 (
	title, description, content, tags,
	content = 'memories', content_rowid = 'rowid',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts (rowid, title, description, content, tags)
	VALUES (new.rowid, new.title, new.description, new.content, new.tags);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, title, description, content, tags)
	VALUES ('delete', old.rowid, old.title, old.description, old.content, old.tags);
END;
-- Only a change of the indexed text touches the index: feedback counters
-- and vectors are written often.
CREATE TRIGGER memories_au AFTER UPDATE OF title, description, content, tags ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, title, description, content, tags)
	VALUES ('delete', old.rowid, old.title, old.description, old.content, old.tags);
	INSERT INTO memories_fts (rowid, title, description, content, tags)
	VALUES (new.rowid, new.title, new.description, new.content, new.tags);
END;

CREATE TABLE checkpoints (
	rowid   INTEGER PRIMARY KEY,
	id      TEXT NOT NULL UNIQUE,
	project TEXT NOT NULL,
	session TEXT NOT NULL,
	name    TEXT NOT NULL,
	summary TEXT NOT NULL,
	context TEXT NOT NULL,
	full_text TEXT NOT NULL,
	created INTEGER NOT NULL
);
CREATE INDEX checkpoints_project ON checkpoints (project); -- with rowid, the order of writing

CREATE TABLE branches (
	rowid       INTEGER PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	session     TEXT NOT NULL,
	project     TEXT NOT NULL,
	parent      TEXT NOT NULL,
	depth       INTEGER NOT NULL,
	description TEXT NOT NULL,
	budget      INTEGER NOT NULL,
	used        INTEGER NOT NULL,
	calls       INTEGER NOT NULL,
	open        INTEGER NOT NULL,
	summary     TEXT NOT NULL,
	created     INTEGER NOT NULL,
	closed      INTEGER NOT NULL,
	version     INTEGER NOT NULL
);
CREATE INDEX branches_session ON branches (session, open);
`,
	// 1 -> 2: MCP wrap session records and tool pins (mcp.go).
	`
CREATE TABLE mcp_sessions (
	rowid   INTEGER PRIMARY KEY, -- creation order, for listing newest first
	id      TEXT NOT NULL UNIQUE,
	server  TEXT NOT NULL,
	started INTEGER NOT NULL, -- Unix ns
	ended   INTEGER NOT NULL  -- Unix ns, 0 while running
);

-- One row per message, keyed by its place in the session. The message bytes
-- are BLOBs: they are kept exactly as relayed, valid UTF-8 or not.
CREATE TABLE mcp_entries (
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

CREATE TABLE mcp_pins (
	server  TEXT NOT NULL,
	tool    TEXT NOT NULL,
	hash    TEXT NOT NULL,
	pending TEXT NOT NULL, -- "" when no change waits for approval
	pinned  INTEGER NOT NULL,
	changed INTEGER NOT NULL,
	PRIMARY KEY (server, tool)
) WITHOUT ROWID;
`,
	// 2 -> 3: why an MCP wrap session ended early ("" for a normal end).
	`
ALTER TABLE mcp_sessions ADD COLUMN failure TEXT NOT NULL DEFAULT '';
`,
}

// schemaVersion is the version this code reads and writes.
var schemaVersion = len(migrations)

// migrate runs the missing migration steps, each in its own transaction
// together with the user_version it reaches, so that a crash leaves the
// database at one version or the next, never between. A database newer than
// this code is refused rather than misread.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		done, err := migrateStep(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see the writer's DSN
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("migrate: read schema version: %w", err)
	}
	switch {
	case v == schemaVersion:
		return true, nil
	case v > schemaVersion || v < 0:
		return false, fmt.Errorf("migrate: schema version %d is newer than this contextd understands (%d); upgrade contextd", v, schemaVersion)
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate to schema %d: %w", v+1, err)
	}
	// PRAGMA takes no bound parameters; v+1 is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migrate to schema %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to schema %d: commit: %w", v+1, err)
	}
	return false, nil
}
