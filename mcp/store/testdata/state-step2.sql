-- Fixture: the state store's schema step 1 -> 2 (the MCP wrap's session
-- records and tool pins), verbatim as daemon/store/sqlite shipped it while
-- it kept the MCP tables. The migration test builds old databases from these
-- steps.

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
