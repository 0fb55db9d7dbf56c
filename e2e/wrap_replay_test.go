//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapReplay: `contextd mcp replay` sends a recorded session's client
// messages to a server again (wrapped, sandboxed, recorded) and says where the
// answers differ: nowhere against the same server, and exit 1 with the
// differences against another one.
func TestWrapReplay(t *testing.T) {
	dir := wrapServersDir(t)
	name := "replay-" + randomFrom(t, "abcdefghij", 6)
	everything := []string{"node", everythingEntry(t), "stdio"}
	w := startWrap(t, name, nil, everything...)
	r, _ := w.callOK("call", "echo", map[string]any{"message": "replay me"})
	mustContain(t, "echo", r.Text(), "replay me")
	r, _ = w.callOK("call", "get-sum", map[string]any{"a": 2, "b": 40})
	mustContain(t, "get-sum", r.Text(), "42")
	// The record holds what the server sends on its own after the
	// handshake, and the client's answers, however fast this session was.
	w.settled(t, "roots/list", "notifications/message")
	w.close()
	id := endedSession(t, name, "server-everything")

	same := contextdAs(t, append([]string{"mcp", "replay", id, "--name", name, "--"}, everything...)...)
	mustCode(t, same, 0)
	mustContain(t, "replay against the same server", same.stdout, "replayed", "no differences")

	descRel := ".mcp-replay-" + name + ".txt"
	writeProjectFile(t, descRel, "Greets.\n")
	other := contextdAs(t, "mcp", "replay", id, "--name", name+"-other", "--", "node", filepath.Join(dir, "pinned.mjs"), filepath.Join(env.project, descRel))
	if other.code != 1 || strings.Contains(other.stdout, "no differences") || len(strings.TrimSpace(other.stdout)) == 0 {
		t.Fatalf("replay against another server: want exit 1 with differences, got %s", other)
	}
	t.Logf("differences against another server:\n%s", other.stdout)
}
