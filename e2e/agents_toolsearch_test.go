//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Each real agent CLI, in a project wired by install, against contextd-proxy
// mcp serving real npm MCP servers in search mode: the CLI lists contextd's
// tool_search and tool_call (and none of the servers' tools), the model finds
// a server's tool with tool_search and calls it with tool_call by the name
// the search returned, and the CLI sends back the server's answer as the
// daemon's firewall passed it: a token in the arguments was scrubbed before
// the server saw it. The wrap of the server is recorded as any wrap is.
func TestModelAgentsToolSearch(t *testing.T) {
	dir := wrapServersDir(t)
	mem := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js")
	withConfig(t, fmt.Sprintf(`[mcp]
search = "on"
[mcp.servers.everything]
command = ["node", %q]
read_only = [%q]
[mcp.servers.memory]
command = ["node", %q]
read_only = [%q]
`, everythingEntry(t), dir, mem, dir))
	hit := regexp.MustCompile(`(?m)^1\. (\S+):`)
	for _, cli := range modelCLIs {
		t.Run(cli.id, func(t *testing.T) {
			token := "ghp_" + randomFrom(t, alnum, 36)
			marker := "hub-marker-" + randomFrom(t, alnum, 8)
			final := "hub-final-" + randomFrom(t, alnum, 8)
			found := ""
			stub, _, out := driveCLI(t, cli,
				func(stubRequest) stubReply {
					return callTool("tool_search", map[string]any{"query": "echo a message back to me", "k": 3})
				},
				func(req stubRequest) stubReply {
					if m := hit.FindStringSubmatch(req.LastResult()); m != nil {
						found = m[1]
					}
					return callTool("tool_call", map[string]any{"name": found, "arguments": map[string]any{"message": marker + " " + token}})
				},
				func(stubRequest) stubReply { return finalText(final) },
			)
			first, ok := stub.Turn(0)
			if !ok {
				t.Fatalf("%s never asked the model with tools", cli.name)
			}
			for _, tool := range []string{"tool_search", "tool_call"} {
				// alwaysLoad: offered at once, never deferred behind the
				// CLI's own search.
				if first.ToolBySuffix(tool) != cli.prefix+tool {
					t.Errorf("%s did not offer %s%s at once: %v, deferred %v", cli.name, cli.prefix, tool, first.Tools, first.Deferred)
				}
			}
			for _, n := range append(first.Tools, first.Deferred...) {
				if strings.Contains(n, "everything") || strings.Contains(n, "echo") {
					t.Errorf("%s offered a served tool in search mode: %s", cli.name, n)
				}
			}
			if found != "everything.echo" {
				second, _ := stub.Turn(1)
				t.Fatalf("tool_search's first hit is %q, want everything.echo; the result:\n%s", found, second.LastResult())
			}
			third, ok := stub.Turn(2)
			if !ok {
				t.Fatalf("%s never sent tool_call's result back", cli.name)
			}
			res := third.LastResult()
			t.Logf("%s sent back: %q", cli.name, res)
			mustContain(t, cli.name+"'s tool_call result", res, marker+" [REDACTED:")
			if strings.Contains(res, token) {
				t.Errorf("the token came back from the server: %q", res)
			}
			mustContain(t, cli.name+"'s output", out, final)
			if id, _ := newestSession(t, "everything", "node"); id == "" {
				t.Errorf("no record of the everything wrap")
			}
		})
	}
}
