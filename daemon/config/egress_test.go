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

// The [egress] keys that need no parser of the proxy's are checked when the
// configuration decodes, naming the key; the rules and credential
// destinations are daemon/netview's to compile (daemon/configcheck runs it
// at load), and pass here as written.
func TestEgressConfig(t *testing.T) {
	for _, tc := range []struct {
		name, toml, wantErr string
	}{
		{"defaults", "", ""},
		{"rules", `[egress]
allow = ["api.github.com:443", "*.pythonhosted.org:443 GET,HEAD", "[::1]:4873"]
[tools.safe_bash]
egress_allow = ["example.com"]
[mcp.servers.gh]
egress_allow = ["api.github.com:443 GET"]
`, ""},
		{"credential env", "[egress.credential_env]\nGITHUB_TOKEN = [\"api.github.com\", \"uploads.github.com:443\"]\n", ""},
		{"rules as written", "[egress]\nallow = [\"*\"]\n[egress.credential_env]\nGITHUB_TOKEN = [\"*.github.com\"]\n", ""},
		{"credential no host", "[egress.credential_env]\nGITHUB_TOKEN = []\n", "egress.credential_env.GITHUB_TOKEN"},
		{"credential bad name", "[egress.credential_env]\n\"GITHUB-TOKEN\" = [\"api.github.com\"]\n", "not a variable name"},
		{"relative ca", "[egress]\nca_files = [\"ca.pem\"]\n", "egress.ca_files"},
		{"no connections", "[egress]\nmax_connections = 0\n", "egress.max_connections"},
		{"too many connections", "[egress]\nmax_connections = 4097\n", "egress.max_connections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(p, []byte(tc.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := config.LoadFile(p)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadFile: %v", err)
				}
				if !c.Egress.Registries {
					t.Errorf("egress.registries is off by default")
				}
				return
			}
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want ErrConfig naming %q", err, tc.wantErr)
			}
		})
	}
}
