package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

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
	// [mcp.servers.NAME]. One with a command or a url is also served by
	// `contextd-proxy mcp` itself, behind contextd's one endpoint.
	Servers map[string]MCPServer `toml:"servers"`
	// Search is how `contextd-proxy mcp` shows the served servers' tools:
	// "on" lists tool_search and tool_call instead of them, "off" lists
	// them all, "defer" lists them all with deferred-loading hints beside
	// the search tools, "auto" is "on" when they number more than
	// SearchThreshold (or are not known yet).
	Search string `toml:"search"`
	// SearchThreshold is the number of served tools past which "auto"
	// searches.
	SearchThreshold int `toml:"search_threshold"`
	// SearchResults is how many tools tool_search returns unless asked.
	SearchResults int `toml:"search_results"`
	// StartWait is how long a full list waits for the served servers to
	// start before it answers without the slow ones (they are added with
	// list_changed).
	StartWait Duration `toml:"start_wait"`
	// StartTimeout is how long tool_search and tool_call wait for a served
	// server that is still starting.
	StartTimeout Duration `toml:"start_timeout"`
	// SearchDense fuses similarity from [store] embed_api's model into
	// tool_search's ranking (no effect without an embedding endpoint).
	SearchDense bool `toml:"search_dense"`
}

// The values of MCP.Search.
const (
	SearchAuto  = "auto"
	SearchOn    = "on"
	SearchOff   = "off"
	SearchDefer = "defer"
)

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
	// Command (argv) or URL makes the server one `contextd-proxy mcp`
	// serves: launched in its sandbox, or reached at URL, exactly as `mcp
	// wrap --name NAME` would, its tools named NAME.tool.
	Command []string `toml:"command"`
	URL     string   `toml:"url"`
	// SSE selects the older HTTP+SSE transport for URL.
	SSE bool `toml:"sse"`
}

// Served reports whether contextd-proxy mcp serves the server itself.
func (s MCPServer) Served() bool { return len(s.Command) > 0 || s.URL != "" }

// ServedNames returns the names of the servers contextd-proxy mcp serves,
// sorted.
func (m *MCP) ServedNames() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(m.Servers)) {
		if m.Servers[n].Served() {
			out = append(out, n)
		}
	}
	return out
}

// servedName is the form of a served server's name: no '.', so that
// NAME.tool splits at its first dot.
var servedName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Server returns the settings of the server named name (the defaults, when
// the file has none).
func (m *MCP) Server(name string) MCPServer {
	if s, ok := m.Servers[name]; ok {
		return s
	}
	return MCPServer{}
}

func defaultMCP() MCP {
	return MCP{MaxTokens: DefaultMaxTokens, MaxMessageBytes: 64 << 20, Intercept: *interceptspec.Default(),
		Search: SearchAuto, SearchThreshold: 30, SearchResults: 5,
		StartWait: Duration{8 * time.Second}, StartTimeout: Duration{60 * time.Second}, SearchDense: true}
}

func (m *MCP) validate() error {
	if m.MaxTokens < 100 {
		return fmt.Errorf("mcp.max_tokens = %d: must be at least 100", m.MaxTokens)
	}
	if m.MaxMessageBytes < 1<<16 {
		return fmt.Errorf("mcp.max_message_bytes = %d: must be at least 65536", m.MaxMessageBytes)
	}
	switch m.Search {
	case SearchAuto, SearchOn, SearchOff, SearchDefer:
	default:
		return fmt.Errorf("mcp.search = %q: use \"auto\", \"on\", \"off\" or \"defer\"", m.Search)
	}
	if m.SearchThreshold < 1 {
		return fmt.Errorf("mcp.search_threshold = %d: must be at least 1", m.SearchThreshold)
	}
	if m.SearchResults < 1 || m.SearchResults > 20 {
		return fmt.Errorf("mcp.search_results = %d: must be 1 to 20", m.SearchResults)
	}
	if m.StartWait.Duration > 10*time.Minute || m.StartTimeout.Duration < time.Second || m.StartTimeout.Duration > 10*time.Minute {
		return fmt.Errorf("mcp.start_wait = %s, mcp.start_timeout = %s: start_wait at most 10m, start_timeout 1s to 10m", m.StartWait, m.StartTimeout)
	}
	for _, n := range slices.Sorted(maps.Keys(m.Servers)) {
		if err := m.Servers[n].validate(n); err != nil {
			return err
		}
	}
	return nil
}

func (s MCPServer) validate(name string) error {
	key := "mcp.servers." + name
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return fmt.Errorf("%s: command or url, not both", key)
	case s.SSE && s.URL == "":
		return fmt.Errorf("%s.sse: goes with url", key)
	case len(s.Command) > 0 && s.Command[0] == "":
		return fmt.Errorf("%s.command: its first word is the program to run", key)
	case s.URL != "" && !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://"):
		return fmt.Errorf("%s.url = %q: an http:// or https:// URL", key, s.URL)
	case s.Served() && (!servedName.MatchString(name) || strings.Contains(name, "__")):
		// tool_call splits NAME.tool, NAME/tool and NAME__tool at the
		// first separator: a name holding one could take another's calls.
		return fmt.Errorf("%s: a served server's name is lower-case letters, digits, '-' and '_' (no '.', no '__'), at most 64", key)
	}
	return nil
}
