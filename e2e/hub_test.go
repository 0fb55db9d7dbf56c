//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/toolsearch/toolbench"
)

// Three real MCP servers from npm (filesystem, memory, everything; pinned by
// e2e/mcpservers) and one that cannot start, behind contextd-proxy mcp's one
// endpoint, driven by the TypeScript SDK client as the test user. Each is
// reached through a configured wrap, so what the agent gets went through
// the daemon's firewall: the checks below look at what reached the host
// (the memory server's file) and the daemon's records, not only at the
// answers.

func TestHubThreeServers(t *testing.T) {
	dir := wrapServersDir(t)
	pkg := func(name string) string {
		return filepath.Join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	}
	memFile := filepath.Join(env.project, "hub-memory.jsonl")
	os.Remove(memFile)
	t.Cleanup(func() { os.Remove(memFile) })
	withConfig(t, fmt.Sprintf(`[mcp]
search = "on"
max_tokens = 1500
[mcp.servers.files]
command = ["node", %q, %q]
[mcp.servers.memory]
command = ["node", %q]
env = ["MEMORY_FILE_PATH"]
[mcp.servers.everything]
command = ["node", %q]
[mcp.servers.broken]
command = ["/nonexistent/mcp-server"]
`, pkg("server-filesystem"), env.project, pkg("server-memory"), everythingEntry(t)))
	big := filepath.Join(env.project, "hub-big.log")
	var flood strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&flood, "hub log line %d\n", i)
	}
	if err := os.WriteFile(big, []byte(flood.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(big) })

	sess := "e2e-hub-" + devTag(6)
	h := startMCPClient(t, env.project, "hub", []string{"CONTEXTD_SESSION=" + sess, "MEMORY_FILE_PATH=" + memFile},
		filepath.Join(env.bin, "contextd-proxy"), "mcp")
	var names []string
	for _, tl := range h.do(map[string]any{"op": "list"}).Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "tool_search") || !slices.Contains(names, "tool_call") || !slices.Contains(names, "safe_bash") {
		t.Fatalf("tools/list: %v", names)
	}
	for _, n := range names {
		if strings.Contains(n, ".") {
			t.Errorf("search mode lists a served tool: %s", n)
		}
	}
	search := func(q string, k int) string {
		t.Helper()
		r, _ := h.callOK("call", "tool_search", map[string]any{"query": q, "k": k})
		return r.Text()
	}
	call := func(name string, args map[string]any) toolResult {
		t.Helper()
		r, _ := h.callOK("call", "tool_call", map[string]any{"name": name, "arguments": args})
		return r
	}
	// One search and one call per server.
	out := search("what files are in this folder", 3)
	mustContain(t, "search for listing", out, "broken: unavailable: CTXD-E033")
	if !hitIn(out, 3, "files.list_directory", "files.list_directory_with_sizes", "files.directory_tree") {
		t.Fatalf("no directory listing tool in the top 3:\n%s", out)
	}
	r := call("files.list_directory", map[string]any{"path": env.project})
	mustContain(t, "files.list_directory", r.Text(), "hub-big.log")

	out = search("remember that staging deploys freeze on Fridays", 3)
	if !hitIn(out, 3, "memory.create_entities", "memory.add_observations") {
		t.Fatalf("no memory tool in the top 3:\n%s", out)
	}
	token := "ghp_" + "W3xYq8LmZ2nB7vRt5KpC9dHs4JfA1gUe6NoT" // high entropy, as a real one
	call("memory.create_entities", map[string]any{"entities": []map[string]any{{
		"name": "staging", "entityType": "environment", "observations": []string{"deploys freeze on Fridays", "deploy token " + token}}}})
	graph := call("memory.read_graph", nil).Text()
	mustContain(t, "memory.read_graph", graph, "deploys freeze on Fridays", "[REDACTED:")
	if strings.Contains(graph, token) {
		t.Fatalf("the token came back from the memory server:\n%s", graph)
	}
	onHost, err := os.ReadFile(memFile)
	if err != nil {
		t.Fatalf("the memory server's file: %v", err)
	}
	if !strings.Contains(string(onHost), "Fridays") || strings.Contains(string(onHost), token) {
		t.Fatalf("the memory file on the host holds the token (arguments are scrubbed before the server):\n%s", onHost)
	}

	out = search("echo this back to me", 3)
	if !hitIn(out, 3, "everything.echo") {
		t.Fatalf("everything.echo not in the top 3:\n%s", out)
	}
	mustContain(t, "everything.echo", call("everything.echo", map[string]any{"message": "hub says hi"}).Text(), "hub says hi")

	// The budget of the wrap holds through tool_call, and the rest is paged
	// by contextd's continue on the same connection.
	cut := call("files.read_text_file", map[string]any{"path": big}).Text()
	m := regexp.MustCompile(`\{"ref":"(safe_read:c[0-9a-f]+)"\}`).FindStringSubmatch(cut)
	if m == nil || strings.Count(cut, "\n") > 300 || !strings.HasPrefix(cut, "hub log line 0\n") {
		t.Fatalf("a 4000-line file through tool_call is not cut with a continue ref:\n%.800s", cut)
	}
	page, _ := h.callOK("call", "continue", map[string]any{"ref": m[1]})
	if !strings.Contains(page.Text(), "hub log line ") {
		t.Fatalf("continue %s: %s", m[1], page.Text())
	}

	// A wrong name gets the closest ones; the broken server its reason.
	a := h.do(map[string]any{"op": "call", "name": "tool_call", "arguments": map[string]any{"name": "files.list_dir"}})
	mustContain(t, "a misspelt tool", string(a.Result), "CTXD-E003", "files.list_directory")
	a = h.do(map[string]any{"op": "call", "name": "tool_call", "arguments": map[string]any{"name": "broken.x"}})
	mustContain(t, "a call to the broken server", string(a.Result), "CTXD-E033", `isError":true`)

	// The live servers list what the frozen fixtures hold (drift check of
	// the benchmark's catalogue), seen through the hub's search.
	fx, err := toolbench.Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fx {
		if s.Name != "filesystem" && s.Name != "memory" && s.Name != "everything" {
			continue
		}
		served := map[string]string{"filesystem": "files", "memory": "memory", "everything": "everything"}[s.Name]
		for _, raw := range s.Tools {
			var tl struct{ Name string }
			json.Unmarshal(raw, &tl)
			out := search(served+"."+tl.Name, 1)
			if !hitIn(out, 1, served+"."+tl.Name) {
				t.Errorf("the fixture's %s.%s is not served (or not found by its name):\n%s", s.Name, tl.Name, out)
			}
		}
	}

	// contextd status names the served servers and how they are found.
	st := contextdAs(t, "status", "--no-sandbox-check")
	mustContain(t, "contextd status", st.stdout, `mcp:      broken, everything, files, memory served by contextd-proxy mcp, found with tool_search ([mcp] search = "on")`)

	// Each server's wrap is recorded as any wrap is.
	h.close()
	for _, name := range []string{"files", "memory", "everything"} {
		if id, _ := newestSession(t, name, "node"); id == "" {
			t.Errorf("no session record of %s", name)
		}
	}
}

// hitIn reports whether one of ids is among the first k hits of a
// tool_search answer.
func hitIn(out string, k int, ids ...string) bool {
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. (\S+):`).FindAllStringSubmatch(out, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		if n <= k && slices.Contains(ids, m[2]) {
			return true
		}
	}
	return false
}
