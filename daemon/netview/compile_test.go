package netview_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/netview"
)

// Compile reads every configured egress rule and credential destination
// once; one that does not parse is a configuration error naming its key.
func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(*config.Config)
		wantErr string
		check   func(*netview.Rules) bool
	}{
		{"defaults", func(*config.Config) {}, "", func(r *netview.Rules) bool {
			return len(r.Allow) == 0 && len(r.SafeBash) == 0 && len(r.Servers) == 0 && len(r.Credentials) == 0
		}},
		{"rules", func(c *config.Config) {
			c.Egress.Allow = []string{"api.github.com:443", "*.pythonhosted.org:443 GET,HEAD", "[::1]:4873"}
			c.Tools.SafeBash.EgressAllow = []string{"example.com"}
			c.MCP.Servers = map[string]config.MCPServer{"gh": {EgressAllow: []string{"api.github.com:443 GET"}}, "other": {Network: true}}
		}, "", func(r *netview.Rules) bool {
			return len(r.Allow) == 3 && r.Allow[1].Host == "*.pythonhosted.org" && len(r.Allow[1].Methods) == 2 &&
				r.Allow[0].Source == "egress.allow" &&
				len(r.SafeBash) == 1 && r.SafeBash[0].Host == "example.com" && r.SafeBash[0].Source == "tools.safe_bash.egress_allow" &&
				len(r.Servers["gh"]) == 1 && r.Servers["gh"][0].Methods[0] == "GET" && len(r.Servers["other"]) == 0
		}},
		{"credential env", func(c *config.Config) {
			c.Egress.CredentialEnv = map[string][]string{"NPM_TOKEN": {"registry.npmjs.org"}, "GITHUB_TOKEN": {"api.github.com", "uploads.github.com:443"}}
		}, "", func(r *netview.Rules) bool {
			return len(r.Credentials) == 2 && r.Credentials[0].Name == "GITHUB_TOKEN" && r.Credentials[1].Name == "NPM_TOKEN" &&
				len(r.Credentials[0].Targets) == 2 && r.Credentials[0].Targets[1].Host == "uploads.github.com" &&
				r.Credentials[0].Targets[1].Port == 443 && r.Credentials[0].Written[0] == "api.github.com"
		}},
		{"bad allow", func(c *config.Config) { c.Egress.Allow = []string{"*"} }, "egress.allow", nil},
		{"bad tool rule", func(c *config.Config) { c.Tools.SafeBash.EgressAllow = []string{"example.com:99999"} }, "tools.safe_bash.egress_allow", nil},
		{"bad server rule", func(c *config.Config) {
			c.MCP.Servers = map[string]config.MCPServer{"gh": {EgressAllow: []string{"exa mple.com"}}}
		}, "mcp.servers.gh.egress_allow", nil},
		{"wildcard credential", func(c *config.Config) {
			c.Egress.CredentialEnv = map[string][]string{"GITHUB_TOKEN": {"*.github.com"}}
		}, "egress.credential_env.GITHUB_TOKEN", nil},
		{"credential scheme", func(c *config.Config) {
			c.Egress.CredentialEnv = map[string][]string{"GITHUB_TOKEN": {"ftp://api.github.com"}}
		}, "egress.credential_env.GITHUB_TOKEN", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			tc.set(cfg)
			r, err := netview.Compile(cfg)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if !tc.check(r) {
					t.Errorf("compiled %+v", r)
				}
				return
			}
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Compile = %+v, %v; want ErrConfig naming %q", r, err, tc.wantErr)
			}
		})
	}
}

// The configuration's default connection limit is the proxy's own.
func TestDefaultMaxConnections(t *testing.T) {
	if config.DefaultMaxConnections != egress.DefaultMaxConns || config.Default().Egress.MaxConnections != egress.DefaultMaxConns {
		t.Errorf("config's default %d, egress's %d", config.DefaultMaxConnections, egress.DefaultMaxConns)
	}
}
