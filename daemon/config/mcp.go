package config

import (
	"fmt"

	"github.com/contextd/contextd/mcp/interceptspec"
)

// MCP configures `contextd-proxy mcp wrap`, the firewall in front of
// third-party MCP servers (docs/mcp.md).
type MCP struct {
	// MaxTokens is the budget of one wrapped tools/call result; the rest is
	// kept for --continue pages.
	MaxTokens int `toml:"max_tokens"`
	// MaxMessageBytes bounds one JSON-RPC message in either direction.
	MaxMessageBytes int `toml:"max_message_bytes"`
	// Intercept holds the firewall's built-in rules' switches, allowlists
	// and the user's rules ([mcp.intercept], docs/mcp.md "Intercept rules"),
	// compiled by mcp/intercept.
	Intercept interceptspec.Config `toml:"intercept"`
	// Servers holds settings per wrapped server, by its --name:
	// [mcp.servers.NAME].
	Servers map[string]MCPServer `toml:"servers"`
}

// MCPServer is one wrapped server's sandbox.
type MCPServer struct {
	// Network shares the host network with the server (off: its own
	// loopback, and the egress proxy with the rules below).
	Network bool `toml:"network"`
	// EgressAllow are egress rules for this server only, on top of
	// [egress] allow and the registries (compiled by daemon/netview).
	EgressAllow []string `toml:"egress_allow"`
	// Env names more of the caller's variables the server may see, besides
	// safe_bash's allowlist. A variable that looks like a credential is never
	// passed, listed or not.
	Env []string `toml:"env"`
	// ReadOnly and ReadWrite are host paths to show besides the workspace
	// (e.g. where the server's own files are installed).
	ReadOnly  []string `toml:"read_only"`
	ReadWrite []string `toml:"read_write"`
	// MemoryMax and TasksMax bound the server's scope (0: the sandbox's
	// defaults).
	MemoryMax Size   `toml:"memory_max"`
	TasksMax  uint64 `toml:"tasks_max"`
}

// Server returns the settings of the server named name (the defaults, when
// the file has none).
func (m *MCP) Server(name string) MCPServer {
	if s, ok := m.Servers[name]; ok {
		return s
	}
	return MCPServer{}
}

func defaultMCP() MCP {
	return MCP{MaxTokens: DefaultMaxTokens, MaxMessageBytes: 64 << 20, Intercept: *interceptspec.Default()}
}

func (m *MCP) validate() error {
	if m.MaxTokens < 100 {
		return fmt.Errorf("mcp.max_tokens = %d: must be at least 100", m.MaxTokens)
	}
	if m.MaxMessageBytes < 1<<16 {
		return fmt.Errorf("mcp.max_message_bytes = %d: must be at least 65536", m.MaxMessageBytes)
	}
	return nil
}
