package config

import (
	"fmt"
	"path/filepath"
	"sort"
)

// Egress configures the egress proxy, a sandboxed program's only way out of
// its network namespace (daemon/egress, docs/sandbox.md "Network"). Its
// rules and credential destinations are compiled by daemon/netview.
type Egress struct {
	// Registries allows, read-only (GET and HEAD where the proxy sees the
	// method), the package registries the user's own toolchains are
	// configured with (npm, Go, pip/uv/poetry, cargo, Maven), read at
	// daemon start. Off: only the rules below.
	Registries bool `toml:"registries"`
	// Allow are rules for every sandboxed program (safe_bash and wrapped MCP
	// servers): "HOST[:PORT] [METHOD,...]", HOST exact, "*.suffix" or an IP
	// (egress.ParseRule).
	Allow []string `toml:"allow"`
	// CredentialEnv names variables of the daemon's own environment (the
	// user manager's) whose value a sandboxed program sees only as a
	// placeholder, and where the proxy may send the real value
	// (egress.ParseCredentialTarget): GITHUB_TOKEN = ["api.github.com"].
	CredentialEnv map[string][]string `toml:"credential_env"`
	// CAFiles are more certificate bundles (PEM) to trust: the proxy
	// verifies upstream servers with them, and the sandbox's trust store
	// holds them too.
	CAFiles []string `toml:"ca_files"`
	// MaxConnections bounds the connections one sandboxed call may hold
	// open through the proxy at once; the next are refused with the
	// limit named.
	MaxConnections int `toml:"max_connections"`
}

// DefaultMaxConnections is egress.max_connections when the file does not set
// it: the proxy's own default (egress.DefaultMaxConns), written here so that
// the configuration links nothing of the proxy.
const DefaultMaxConnections = 256

func defaultEgress() Egress {
	return Egress{Registries: true, Allow: []string{}, CredentialEnv: map[string][]string{}, CAFiles: []string{}, MaxConnections: DefaultMaxConnections}
}

// validate checks what the proxy's parsers are not needed for: the
// variables' names, that each names a destination, the limits and paths.
func (e *Egress) validate() error {
	names := make([]string, 0, len(e.CredentialEnv))
	for n := range e.CredentialEnv {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key := "egress.credential_env." + n
		if !envName.MatchString(n) {
			return fmt.Errorf("%s: not a variable name", key)
		}
		if len(e.CredentialEnv[n]) == 0 {
			return fmt.Errorf("%s: name at least one host the value may be sent to", key)
		}
	}
	if e.MaxConnections < 1 || e.MaxConnections > 4096 {
		return fmt.Errorf("egress.max_connections: %d is not between 1 and 4096", e.MaxConnections)
	}
	for _, p := range e.CAFiles {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("egress.ca_files: %q is not an absolute path", p)
		}
	}
	return nil
}
