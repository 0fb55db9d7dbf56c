//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `contextd-proxy mcp wrap` in front of a server that cannot start or exits at
// once (issue 14, defect 3): the official TypeScript SDK client's initialize
// must fail with a message saying what happened and what to do, the wrap must
// print it on stderr, and `contextd mcp sessions` must show it; not a bare
// "Connection closed".

// outsideServer is a small MCP server (no dependencies: it answers
// initialize and every other request with an empty result) installed the way
// npm installs one, node_modules/.bin/NAME a link to the package's entry,
// under /opt: outside the project and the system directories, so the sandbox
// does not see it; readable by the test user. It returns the .bin link and
// the directory it was installed in.
func outsideServer(t *testing.T) (bin, root string) {
	t.Helper()
	if err := os.MkdirAll("/opt", 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("/opt", "contextd-e2e-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(root, "node_modules", "mcp-server-outside", "index.mjs")
	bin = filepath.Join(root, "node_modules", ".bin", "mcp-server-outside")
	for _, d := range []string{filepath.Dir(entry), filepath.Dir(bin)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const server = `#!/usr/bin/env node
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  const m = JSON.parse(line);
  if (m.id === undefined || !m.method) continue;
  if (m.method === 'initialize') {
    send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: {}, serverInfo: { name: 'outside', version: '1.0.0' } } });
  } else {
    send({ id: m.id, result: {} });
  }
}
`
	if err := os.WriteFile(entry, []byte(server), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../mcp-server-outside/index.mjs", bin); err != nil {
		t.Fatal(err)
	}
	return bin, root
}

// wrapClient runs wrapclient.mjs once as the test user, in the project, with
// server as its MCP server, and no requests: it connects (initialize), then
// closes. It exits 0 once connected, 1 when the connection failed.
func wrapClient(t *testing.T, server ...string) result {
	t.Helper()
	args := append([]string{"node", filepath.Join(mcpJSDir(t), "wrapclient.mjs"), "--"}, server...)
	return runAs(t, "", nil, "", args...)
}

// wrapped is the command line of `contextd-proxy mcp wrap --name name --
// server...`.
func wrapped(name string, server ...string) []string {
	return append([]string{filepath.Join(env.bin, "contextd-proxy"), "mcp", "wrap", "--name", name, "--"}, server...)
}

// failedSession waits for the newest session of name (or target) to be
// recorded as failed (the daemon saves the reason as the session ends) and
// returns its id and the `contextd mcp sessions list` output.
func failedSession(t *testing.T, name, target string) (id, list string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		id, state := newestSession(t, name, target)
		if state == "failed" {
			r := contextdAs(t, "mcp", "sessions", "list", "--limit", "50")
			mustCode(t, r, 0)
			return id, r.stdout
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s of %s: state %q 30 s after the client ended, want failed", id, name, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// reasonUnder returns the line `contextd mcp sessions list` prints under the
// row of session id: why it failed.
func reasonUnder(t *testing.T, list, id string) string {
	t.Helper()
	lines := strings.Split(list, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, id+" ") && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1])
		}
	}
	t.Fatalf("no row of session %s in mcp sessions list:\n%s", id, list)
	return ""
}

// A server the sandbox cannot see: the client's initialize fails with the
// reason and the configuration that shows it; the wrap prints the same on
// stderr, the record keeps it; and doing what it says makes the wrap work.
func TestWrapFailNotVisible(t *testing.T) {
	bin, root := outsideServer(t)

	// The server itself is sound: run directly, outside the sandbox, it
	// serves the same client.
	r := wrapClient(t, bin)
	mustCode(t, r, 0)
	mustContain(t, "the client of the server run directly", r.stdout, `"name":"outside"`)

	// Wrapped, it is not visible in the sandbox.
	r = wrapClient(t, wrapped("outside", bin)...)
	t.Logf("wrapped server not visible: %s", r)
	if r.code != 1 {
		t.Fatalf("the client's connection should fail: %s", r)
	}
	if strings.Contains(r.stderr, "Connection closed") {
		t.Errorf("the client got only a closed connection:\n%s", r.stderr)
	}
	why := "CTXD-E033: mcp wrap: the wrapped server could not be started: " + bin + " is not visible in the sandbox"
	what := `put read_only = ["` + root + `"] under [mcp.servers.outside] in ` +
		filepath.Join(env.home, ".config", "contextd", "config.toml") + " and restart contextd"
	// The client's initialize failed with the JSON-RPC error, message and all.
	mustContain(t, "the client's error", r.stderr, "McpError: MCP error -32603: "+why, what)
	// The wrap printed it too: a line of its own, code first, then the hint.
	line := regexp.MustCompile(`(?m)^CTXD-E033: .*$`).FindString(r.stderr)
	if !strings.HasPrefix(line, why) || !strings.Contains(line, what) {
		t.Errorf("the wrap's stderr has no line %q...:\n%s", why, r.stderr)
	}
	mustContain(t, "the wrap's stderr", r.stderr, line+"\nhint: a wrapped server runs in the sandbox")

	// contextd mcp sessions: failed, with the reason under the row.
	id, list := failedSession(t, "outside", bin)
	t.Logf("mcp sessions list:\n%s", list)
	if got := reasonUnder(t, list, id); got != line {
		t.Errorf("mcp sessions list: reason %q, want %q", got, line)
	}
	show := contextdAs(t, "mcp", "sessions", "show", id)
	mustCode(t, show, 0)
	mustContain(t, "mcp sessions show", show.stdout, "\n- Failed: "+line+"\n", "initialize", "is not visible in the sandbox")

	// What the message says to do works: show the directory, restart.
	withConfig(t, fmt.Sprintf("[mcp.servers.outside]\nread_only = [%q]", root))
	mustCode(t, systemctl(t, "start", "contextd.service"), 0)
	r = wrapClient(t, wrapped("outside", bin)...)
	mustCode(t, r, 0)
	mustContain(t, "the client of the wrapped server, shown", r.stdout, `"name":"outside"`)
	if strings.Contains(r.stderr, "CTXD-") {
		t.Errorf("the working wrap printed an error:\n%s", r.stderr)
	}
}

// A server that writes a secret and some text to stderr and exits 1 at
// start: its last stderr lines, the secret replaced by the session's
// placeholder, are in the client's error, on the wrap's stderr and in the
// record.
func TestWrapFailEarlyExit(t *testing.T) {
	token := "ghp_" + randomFrom(t, alnum, 36)
	script := "#!/bin/sh\n" +
		"echo 'failing-server: starting' >&2\n" +
		"echo 'failing-server: using token " + token + " for api.github.com' >&2\n" +
		"echo 'failing-server: fatal: the API refused the token' >&2\n" +
		"exit 1\n"
	if err := os.MkdirAll(filepath.Join(env.project, ".wrapfail"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(env.project, ".wrapfail")) })
	path := filepath.Join(env.project, ".wrapfail", "failing-server")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, env.uid, env.uid); err != nil {
		t.Fatal(err)
	}

	r := wrapClient(t, wrapped("failing", path)...)
	t.Logf("wrapped server exiting at start: %s", r)
	if r.code != 1 {
		t.Fatalf("the client's connection should fail: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("the token leaked:\n%s", r)
	}
	why := "CTXD-E034: mcp wrap: the wrapped server exited with status 1; the last lines it wrote to stderr: " +
		"failing-server: starting | failing-server: using token [REDACTED:"
	last := " for api.github.com | failing-server: fatal: the API refused the token"
	mustContain(t, "the client's error", r.stderr, "McpError: MCP error -32603: "+why, last)
	line := regexp.MustCompile(`(?m)^CTXD-E034: .*$`).FindString(r.stderr)
	if !strings.HasPrefix(line, why) || !strings.Contains(line, last) {
		t.Errorf("the wrap's stderr has no line %q...:\n%s", why, r.stderr)
	}
	mustContain(t, "the wrap's stderr", r.stderr, line+"\nhint: the message ends with the last lines the server wrote to stderr")

	id, list := failedSession(t, "failing", path)
	t.Logf("mcp sessions list:\n%s", list)
	if got := reasonUnder(t, list, id); got != line {
		t.Errorf("mcp sessions list: reason %q, want %q", got, line)
	}
	exp := contextdAs(t, "mcp", "sessions", "export", id, "--format", "json")
	mustCode(t, exp, 0)
	mustContain(t, "mcp sessions export", exp.stdout, `"failure": "CTXD-E034: mcp wrap: the wrapped server exited with status 1`)
	if strings.Contains(exp.stdout, token) {
		t.Errorf("the record holds the token:\n%s", exp.stdout)
	}
}
