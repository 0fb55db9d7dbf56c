package netview

import (
	"fmt"
	"maps"
	"slices"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
)

// Rules are the configuration's egress settings compiled: every rule list
// parsed and every credential destination read, once. A Setup is built on
// them; daemon/configcheck compiles them when a configuration loads, so
// that a rule that does not parse stops contextd there.
type Rules struct {
	// Allow is [egress] allow: rules for every sandboxed program.
	Allow []egress.Rule
	// SafeBash is tools.safe_bash.egress_allow.
	SafeBash []egress.Rule
	// Servers holds mcp.servers.NAME.egress_allow, by server name.
	Servers map[string][]egress.Rule
	// Credentials are [egress.credential_env]'s variables, by name.
	Credentials []CredentialEnv
}

// CredentialEnv is one variable of [egress.credential_env]: its name, and
// where its value may be sent, as written and as read (each Credential
// without Placeholder or Secret: those are a call's).
type CredentialEnv struct {
	Name    string
	Written []string
	Targets []egress.Credential
}

// Compile reads cfg's egress rules ([egress] allow, tools.safe_bash and
// each MCP server's egress_allow) and the destinations of
// [egress.credential_env]. An error names the key and wraps
// catalog.ErrConfig.
func Compile(cfg *config.Config) (*Rules, error) {
	r := &Rules{Servers: map[string][]egress.Rule{}}
	var err error
	if r.Allow, err = parseRules("egress.allow", cfg.Egress.Allow); err != nil {
		return nil, err
	}
	if r.SafeBash, err = parseRules("tools.safe_bash.egress_allow", cfg.Tools.SafeBash.EgressAllow); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.MCP.Servers)) {
		if r.Servers[name], err = parseRules("mcp.servers."+name+".egress_allow", cfg.MCP.Servers[name].EgressAllow); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Egress.CredentialEnv)) {
		ce := CredentialEnv{Name: name, Written: cfg.Egress.CredentialEnv[name]}
		for _, h := range ce.Written {
			t, err := egress.ParseCredentialTarget(h)
			if err != nil {
				return nil, fmt.Errorf("%w: egress.credential_env.%s: %v", catalog.ErrConfig, name, err)
			}
			ce.Targets = append(ce.Targets, t)
		}
		r.Credentials = append(r.Credentials, ce)
	}
	return r, nil
}

// parseRules parses a configured rule list, naming the key of a bad one.
func parseRules(key string, list []string) ([]egress.Rule, error) {
	var out []egress.Rule
	for _, a := range list {
		r, err := egress.ParseRule(a, key)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", catalog.ErrConfig, key, err)
		}
		out = append(out, r)
	}
	return out, nil
}
