package sqlite

import (
	"context"
	"database/sql"

	"github.com/contextd/contextd/internal/sqlitefile"
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
	// 1 -> 2 and 2 -> 3 made the MCP wrap's tables (mcp_sessions,
	// mcp_entries, mcp_pins) and then added mcp_sessions.failure. Those
	// tables belong to package mcp/store now, which keeps them in this file
	// under a schema version of its own and makes or adopts them, so these
	// steps only move the version: a file already past them keeps its
	// tables, rows and all, for mcp/store to adopt; a newer file gets them
	// from mcp/store alone (and so the two never both add the column).
	``,
	``,
}

// schemaVersion is the version this code reads and writes.
var schemaVersion = len(migrations)

// schema runs migrations, each step one SQL script, keeping the version in
// PRAGMA user_version (sqlitefile.Migration).
var schema = func() *sqlitefile.Migration {
	m := &sqlitefile.Migration{What: "the state store"}
	for _, script := range migrations {
		m.Steps = append(m.Steps, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, script)
			return err
		})
	}
	m.Version, m.SetVersion = sqlitefile.UserVersion()
	return m
}()

// migrate brings a database to schemaVersion (sqlitefile.Migration.Run).
func migrate(ctx context.Context, db *sql.DB) error { return schema.Run(ctx, db) }
