//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentClaudeCodeConnectsWrap: a third-party MCP server registered with
// Claude Code through contextd's firewall (`contextd-proxy mcp wrap`) is
// reported connected by the real `claude mcp list`, which starts it (in the
// sandbox, through the daemon) and runs the MCP handshake with it.
func TestAgentClaudeCodeConnectsWrap(t *testing.T) {
	claude := claudeBin(t)
	vars := claudeEnv(claude)
	entry := everythingEntry(t) // installed inside the project: the sandbox sees it
	proxy := filepath.Join(env.bin, "contextd-proxy")
	name := "everything-wrapped"
	forget := func() { runAs(t, env.project, vars, "", "claude", "mcp", "remove", "--scope", "local", name) }
	forget()
	t.Cleanup(forget)

	r := runAs(t, env.project, vars, "", "claude", "mcp", "add", "--scope", "local", name, "--",
		proxy, "mcp", "wrap", "--name", name, "--", "node", entry, "stdio")
	mustCode(t, r, 0)
	start := time.Now()
	r = runAs(t, env.project, vars, "", "claude", "mcp", "list")
	mustCode(t, r, 0)
	line := serverLine(r.stdout, name)
	if !strings.Contains(line, "mcp wrap") || !strings.Contains(line, "Connected") || strings.Contains(line, "Failed") {
		t.Fatalf("claude mcp list does not report the wrapped server as connected:\n%s\ndaemon log:\n%s", r, tailLines(daemonLog(t), 30))
	}
	t.Logf("claude mcp list: %q in %v", line, time.Since(start).Round(time.Millisecond))

	// The handshake went through the firewall: it is in the records (of
	// the session claude started and ended).
	id := endedSession(t, name, "server-everything")
	rec := exportRecord(t, id)
	methods := map[string]bool{}
	for _, e := range rec.Entries {
		methods[e.Method] = true
	}
	if !methods["initialize"] {
		t.Fatalf("the recorded session %s holds no initialize: %+v", id, methods)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
