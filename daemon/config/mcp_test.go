package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

// A rule whose value is a table is data, not unknown keys; a misspelt key
// next to it still is.
func TestMCPRuleTableValue(t *testing.T) {
	dir := t.TempDir()
	good := `[[mcp.intercept.rules]]
name = "pin-opts"
method = "tools/call"
action = "modify"
[[mcp.intercept.rules.set]]
path = "params.arguments.opts"
value = { depth = 2, follow = false }
[mcp.servers.github]
network = true
`
	p := filepath.Join(dir, "good.toml")
	os.WriteFile(p, []byte(good), 0o600)
	c, err := config.LoadFile(p)
	if err != nil {
		t.Fatalf("rule with a table value: %v", err)
	}
	if len(c.MCP.Intercept.Rules) != 1 || !c.MCP.Server("github").Network || c.MCP.Server("other").Network {
		t.Fatalf("decoded: %+v %+v", c.MCP.Intercept.Rules, c.MCP.Servers)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(good+"netwrok = true\n"), 0o600)
	if _, err := config.LoadFile(bad); !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("misspelt key: %v, want ErrConfig", err)
	}
	misspeltData := filepath.Join(dir, "data.toml")
	os.WriteFile(misspeltData, []byte(strings.Replace(good, "value =", "valeu =", 1)), 0o600)
	if _, err := config.LoadFile(misspeltData); !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), "mcp.intercept.rules.set.valeu") {
		t.Fatalf("misspelt value key: %v, want ErrConfig naming it", err)
	}
}

// A served server's keys and the search keys are checked at load, each
// refusal naming its key.
func TestMCPServedValidation(t *testing.T) {
	cases := []struct {
		name, toml, want string
	}{
		{"command", "[mcp.servers.mem]\ncommand = [\"node\", \"x.js\"]\n", ""},
		{"url", "[mcp.servers.docs]\nurl = \"https://x.example/mcp\"\nsse = true\n", ""},
		{"settings only keep a dot", "[mcp.servers.\"a.b\"]\nnetwork = true\n", ""},
		{"both", "[mcp.servers.x]\ncommand = [\"a\"]\nurl = \"https://x\"\n", "mcp.servers.x: command or url"},
		{"sse alone", "[mcp.servers.x]\ncommand = [\"a\"]\nsse = true\n", "mcp.servers.x.sse"},
		{"empty program", "[mcp.servers.x]\ncommand = [\"\"]\n", "mcp.servers.x.command"},
		{"bad url", "[mcp.servers.x]\nurl = \"file:///etc\"\n", "mcp.servers.x.url"},
		{"dotted served name", "[mcp.servers.\"a.b\"]\ncommand = [\"a\"]\n", "no '.'"},
		{"served name with __", "[mcp.servers.a__b]\ncommand = [\"a\"]\n", "no '__'"},
		{"search mode", "[mcp]\nsearch = \"maybe\"\n", "mcp.search"},
		{"threshold", "[mcp]\nsearch_threshold = 0\n", "mcp.search_threshold"},
		{"results", "[mcp]\nsearch_results = 50\n", "mcp.search_results"},
		{"start timeout", "[mcp]\nstart_timeout = \"0s\"\n", "mcp.start_timeout"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".toml")
			if err := os.WriteFile(p, []byte(c.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.LoadFile(p)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (config %+v), want ErrConfig naming %q", err, cfg, c.want)
			}
		})
	}
	c := config.Default()
	c.MCP.Servers = map[string]config.MCPServer{"b": {URL: "https://b"}, "a": {Command: []string{"x"}}, "c": {Network: true}}
	if got := c.MCP.ServedNames(); strings.Join(got, ",") != "a,b" {
		t.Fatalf("ServedNames = %v, want [a b]", got)
	}
}
