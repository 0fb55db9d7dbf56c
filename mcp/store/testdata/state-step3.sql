-- Fixture: the state store's schema step 2 -> 3 (why an MCP wrap session
-- ended early), verbatim as daemon/store/sqlite shipped it while it kept the
-- MCP tables. The migration test builds old databases from these steps.

ALTER TABLE mcp_sessions ADD COLUMN failure TEXT NOT NULL DEFAULT '';
