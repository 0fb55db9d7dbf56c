package netview

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/scrub"
)

func TestForwardsOf(t *testing.T) {
	rules := []egress.Rule{
		{Host: "localhost", Port: 4873},
		{Host: "127.0.0.1", Port: 8080},
		{Host: "::1", Port: 9000},
		{Host: "127.0.0.1", Port: 8080}, // twice: one forward
		{Host: "127.0.0.1", Port: 3128}, // the proxy's own address inside: never
		{Host: "127.0.0.1"},             // no port: nothing to listen on
		{Host: "registry.npmjs.org", Port: 443},
		{Host: "*.example.com", Port: 443},
		{Host: "10.0.0.5", Port: 5432}, // private, not loopback: through the proxy
	}
	got := forwardsOf(rules)
	want := []forward{
		{listen: []string{"127.0.0.1:4873", "[::1]:4873"}, target: "localhost:4873"},
		{listen: []string{"127.0.0.1:8080"}, target: "127.0.0.1:8080"},
		{listen: []string{"[::1]:9000"}, target: "[::1]:9000"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("forwards:\n got %+v\nwant %+v", got, want)
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "HTTP_PROXY=http://corp:8080", "A=1"}, []string{"HTTP_PROXY=" + proxyURL, "B=2"})
	want := []string{"PATH=/bin", "A=1", "HTTP_PROXY=" + proxyURL, "B=2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Every toolchain's variable points at the proxy or the bundle, and
// NO_PROXY covers only the sandbox's own loopback.
func TestProxyEnv(t *testing.T) {
	env := map[string]string{}
	for _, kv := range proxyEnv("/etc/ssl/certs/ca-certificates.crt") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		if env[k] != "http://127.0.0.1:3128" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	for _, k := range []string{"ALL_PROXY", "all_proxy"} {
		if env[k] != "socks5h://127.0.0.1:3128" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	for _, k := range []string{"NO_PROXY", "no_proxy", "npm_config_noproxy"} {
		if env[k] != "localhost,127.0.0.1,::1" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO", "CURL_CA_BUNDLE", "npm_config_cafile"} {
		if env[k] != "/etc/ssl/certs/ca-certificates.crt" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	if env["NODE_EXTRA_CA_CERTS"] != NodeCAAt {
		t.Errorf("NODE_EXTRA_CA_CERTS = %q, want %s (contextd's CA alone: Node adds it to roots of its own)", env["NODE_EXTRA_CA_CERTS"], NodeCAAt)
	}
}

// The result's lines: one per refused host, with the exact configuration
// line for the call's own section; a leak says it was blocked.
func TestSummaryLines(t *testing.T) {
	for _, tc := range []struct {
		call Call
		want []string
	}{
		{Call{Tool: "safe_bash"}, []string{
			`egress refused example.com:443: no rule allows it; to allow it, add to ~/.config/contextd/config.toml: [tools.safe_bash] egress_allow = ["example.com:443"]`,
			`egress blocked 127.0.0.1:9999: credential placeholder sent to the wrong host (a credential goes only to its own host)`,
			`egress to registry.test:443 failed: upstream: read response: unexpected EOF (the host is allowed by registry.test:443 GET,HEAD)`,
		}},
		{Call{Tool: "tool:hello", Only: true, AllowHint: "permissions.egress in the tool's contextd-tool.toml"}, []string{
			`egress refused example.com:443: no rule allows it; to allow it: permissions.egress in the tool's contextd-tool.toml`,
			`egress blocked 127.0.0.1:9999: credential placeholder sent to the wrong host (a credential goes only to its own host)`,
			`egress to registry.test:443 failed: upstream: read response: unexpected EOF (the host is allowed by registry.test:443 GET,HEAD)`,
		}},
		{Call{Tool: "mcp:gh", Server: "gh"}, []string{
			`egress refused example.com:443: no rule allows it; to allow it, add to ~/.config/contextd/config.toml: [mcp.servers.gh] egress_allow = ["example.com:443"]`,
			`egress blocked 127.0.0.1:9999: credential placeholder sent to the wrong host (a credential goes only to its own host)`,
			`egress to registry.test:443 failed: upstream: read response: unexpected EOF (the host is allowed by registry.test:443 GET,HEAD)`,
		}},
	} {
		c := &collector{setup: &Setup{refusals: &Refusals{}, rulesFrom: "defaults (no configuration file)"}, call: tc.call}
		c.add(egress.Event{Host: "example.com", Port: 443, Reason: "no rule allows it"})
		c.add(egress.Event{Host: "example.com", Port: 443, Reason: "no rule allows it"})
		c.add(egress.Event{Host: "registry.npmjs.org", Port: 443, Allowed: true, Rule: "registry.npmjs.org:443 GET,HEAD"})
		c.add(egress.Event{Host: "127.0.0.1", Port: 9999, Leak: true, Reason: "credential placeholder sent to the wrong host"})
		// Allowed by a rule, then failed: no advice to add a rule.
		c.add(egress.Event{Host: "registry.test", Port: 443, Rule: "registry.test:443 GET,HEAD", Reason: "upstream: read response: unexpected EOF"})
		sum := c.summary()
		if !reflect.DeepEqual(sum.Lines, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.call.Tool, sum.Lines, tc.want)
		}
		if len(sum.Connections) != 5 {
			t.Errorf("connections: %+v", sum.Connections)
		}
		if n := len(c.setup.refusals.Since(c.setup.refusals.list[0].Time)); n != 4 {
			t.Errorf("refusals kept for status: %d, want 4", n)
		}
	}
}

// Where the rules come from: the configuration file the daemon read, or
// the defaults; a call with rules of its own says so. Every call's summary
// names it, connections or not.
func TestRulesFrom(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		source string
		extra  []egress.Rule
		want   string
	}{
		{"", nil, DefaultsOnly},
		{"/home/u/.config/contextd/config.toml", nil, "/home/u/.config/contextd/config.toml"},
		{"/etc/contextd/config.toml", []egress.Rule{{Host: "127.0.0.1", Port: 8080, Source: "doctor"}}, "/etc/contextd/config.toml, and the call's own"},
	} {
		cfg := config.Default()
		cfg.Source = c.source
		dirs := Dirs{CA: filepath.Join(t.TempDir(), "ca"), Runtime: t.TempDir()}
		s, err := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin"}}, dirs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.extra == nil && s.RulesFrom() != c.want {
			t.Errorf("RulesFrom = %q, want %q", s.RulesFrom(), c.want)
		}
		n, err := s.Prepare(Call{Tool: "safe_bash", Extra: c.extra})
		if err != nil {
			t.Fatal(err)
		}
		if sum := n.Finish(); sum.RulesFrom != c.want || len(sum.Connections) != 0 {
			t.Errorf("the call's summary: %+v, want its rules from %q", sum, c.want)
		}
	}
}

// A call past maxConnections lists that many in its record, and its result
// says how many more there were.
func TestUnlistedConnectionsCounted(t *testing.T) {
	c := &collector{setup: &Setup{refusals: &Refusals{}, rulesFrom: "defaults"}, call: Call{Tool: "safe_bash"}}
	for i := 0; i < maxConnections+7; i++ {
		c.add(egress.Event{Host: "registry.npmjs.org", Port: 443, Allowed: true, Rule: "registry.npmjs.org:443"})
	}
	sum := c.summary()
	if len(sum.Connections) != maxConnections {
		t.Errorf("%d connections listed, want %d", len(sum.Connections), maxConnections)
	}
	want := fmt.Sprintf("7 more connections went through the egress proxy than the %d the audit record lists", maxConnections)
	if !slices.Contains(sum.Lines, want) {
		t.Errorf("lines %q, want %q", sum.Lines, want)
	}
}

// An Only call gets its own rules and nothing configured: not egress.allow,
// not the registries, not safe_bash's; and of the credentials only those it
// names.
func TestOnlyRules(t *testing.T) {
	home := t.TempDir()
	cfg := config.Default()
	cfg.Egress.Allow = []string{"everyone.example:443"}
	cfg.Tools.SafeBash.EgressAllow = []string{"bash.example:443"}
	cfg.Egress.CredentialEnv = map[string][]string{"CTXD_TEST_TOKEN_A": {"a.example"}, "CTXD_TEST_TOKEN_B": {"b.example"}}
	t.Setenv("CTXD_TEST_TOKEN_A", "secret-a-1234567890")
	t.Setenv("CTXD_TEST_TOKEN_B", "secret-b-1234567890")
	dirs := Dirs{CA: filepath.Join(t.TempDir(), "ca"), Runtime: t.TempDir()}
	s, err := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin"}}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	own := egress.Rule{Host: "own.example", Port: 443, Source: "manifest"}
	vault := scrub.NewVault()
	n, err := s.Plan(Call{Tool: "tool:x", Only: true, Extra: []egress.Rule{own}, Credentials: []string{"CTXD_TEST_TOKEN_B"}, Vault: vault})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Rules) != 1 || n.Rules[0].Host != "own.example" {
		t.Errorf("an Only call's rules: %+v, want only its own", n.Rules)
	}
	var names []string
	for _, kv := range n.Env {
		if strings.HasPrefix(kv, "CTXD_TEST_TOKEN_") {
			names = append(names, kv[:len("CTXD_TEST_TOKEN_B")])
		}
	}
	if !reflect.DeepEqual(names, []string{"CTXD_TEST_TOKEN_B"}) {
		t.Errorf("an Only call's credentials: %v, want only CTXD_TEST_TOKEN_B", names)
	}
	full, err := s.Plan(Call{Tool: "safe_bash", Vault: vault})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Rules) < 2 {
		t.Errorf("safe_bash's rules: %+v, want egress.allow and its own", full.Rules)
	}
}

// Registries are the read-only registry rules, never egress.allow's.
func TestRegistriesOnly(t *testing.T) {
	home := t.TempDir()
	cfg := config.Default()
	cfg.Egress.Allow = []string{"everyone.example:443"}
	dirs := Dirs{CA: filepath.Join(t.TempDir(), "ca"), Runtime: t.TempDir()}
	s, err := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin", "GOPROXY": "https://proxy.example.test"}}, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	regs := s.Registries()
	if len(regs) == 0 {
		t.Fatal("no registry found, not even GOPROXY's")
	}
	found := false
	for _, r := range regs {
		if r.Host == "everyone.example" || !slices.Equal(r.Methods, []string{"GET", "HEAD"}) {
			t.Errorf("a registry rule that is not a read-only registry: %+v", r)
		}
		found = found || r.Host == "proxy.example.test"
	}
	if !found {
		t.Errorf("GOPROXY's host is not among %+v", regs)
	}
	cfg.Egress.Registries = false
	off, _ := NewSetup(cfg, &homeview.Host{Home: home, Env: map[string]string{"PATH": "/usr/bin", "GOPROXY": "https://proxy.example.test"}}, dirs, nil)
	if got := off.Registries(); len(got) != 0 {
		t.Errorf("registries off: %+v", got)
	}
}
