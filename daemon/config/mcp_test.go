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
