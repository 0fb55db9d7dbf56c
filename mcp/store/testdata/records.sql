-- Fixture: MCP records and pins as contextd wrote them into its state file
-- before the MCP tables had a package of their own (mcp.go of
-- daemon/store/sqlite): times in Unix ns, messages as BLOBs, NULL for no
-- id, original or reply. Valid at state schema 2 and 3 (no failure column).
-- The entries are recordtest.Entries().

INSERT INTO mcp_sessions (id, server, started, ended) VALUES
	('s-1', 'everything: npx -y @modelcontextprotocol/server-everything', 1748779200123456789, 1748779290123456789),
	('s-2', 'remote: https://example.test/mcp', 1748779300000000000, 0);

INSERT INTO mcp_entries (session, seq, dir, time, kind, msg_id, method, tool, corr, raw, original, action, rule, reply, error) VALUES
	('s-1', 1, 'client->server', 1700000000000001000, 'request', CAST('1' AS BLOB), 'tools/call', 'echo', 1,
		CAST('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}' AS BLOB), NULL, 'forward', '', NULL, ''),
	('s-1', 2, 'server->client', 1700000000000002000, 'response', CAST('1' AS BLOB), 'tools/call', 'echo', 1,
		CAST('{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]"}}' AS BLOB),
		CAST('{"jsonrpc":"2.0","id":1,"result":{"t":"[REDACTED:github-pat:1]","more":"cut by the budget"}}' AS BLOB),
		'modify', 'scrub', NULL, ''),
	('s-1', 3, 'client->server', 1700000000000003000, 'request', CAST('"x"' AS BLOB), 'tools/call', 'rm', 3,
		CAST('{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"rm"}}' AS BLOB), NULL, 'drop', 'allowlist',
		CAST('{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"no"}}' AS BLOB), ''),
	('s-1', 4, 'server->client', 1700000000000004000, 'invalid', NULL, '', '', 0,
		X'fffe206e6f74207574662d38', NULL, 'drop', '', NULL, 'malformed'),
	('s-1', 5, 'server->client', 1700000000000005000, 'notification', NULL, 'm', '', 0,
		CAST('{"jsonrpc":"2.0","method":"m"}' AS BLOB), NULL, 'forward', '', NULL, '');

INSERT INTO mcp_pins (server, tool, hash, pending, pinned, changed) VALUES
	('everything', 'echo', 'sha256:aa', '', 1735787045000000006, 0),
	('everything', 'add', 'sha256:bb', 'sha256:cc', 1735787045000000006, 1735790645000000006);
