package registries

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

const yarnDefault = "https://registry.yarnpkg.com"

// yarn reads yarn berry's user configuration, ~/.yarnrc.yml: the registry
// (npmRegistryServer, per scope in npmScopes) and the tokens for it
// (npmAuthToken, npmAuthIdent; per scope, and per registry in
// npmRegistries).
func (c *collector) yarn() {
	p := c.home(".yarnrc.yml")
	b, ok := c.read(p)
	if !ok {
		return
	}
	o := c.fileOrigin(p, true)
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		c.note("%s: does not parse as YAML; skipped", o.label)
		return
	}
	lines := strings.Split(string(b), "\n")
	root := mapping(&doc)
	if root == nil {
		return
	}
	y := yarnFile{c: c, o: o, lines: lines}
	server, ok := c.yarnServer(y, root, "npmRegistryServer", "")
	if v := c.env("YARN_NPM_REGISTRY_SERVER"); v != "" {
		server, ok = c.url(v, "YARN_NPM_REGISTRY_SERVER", "yarn registry", envOrigin, true)
	}
	if !ok {
		server, _ = parseURL(yarnDefault)
		c.addRegistry(server, "yarn default")
	}
	y.auth(root, "", server)
	if scopes := mapping(value(root, "npmScopes")); scopes != nil {
		for i := 0; i+1 < len(scopes.Content); i += 2 {
			name := scopes.Content[i].Value
			scope := mapping(scopes.Content[i+1])
			if scope == nil {
				continue
			}
			s, ok := c.yarnServer(y, scope, "npmScopes."+name+".npmRegistryServer", "for @"+name)
			if !ok {
				s = server
			}
			y.auth(scope, "npmScopes."+name+".", s)
		}
	}
	if regs := mapping(value(root, "npmRegistries")); regs != nil {
		for i := 0; i+1 < len(regs.Content); i += 2 {
			raw := regs.Content[i].Value
			if strings.HasPrefix(raw, "//") {
				raw = "https:" + raw
			}
			key := "npmRegistries[" + redactKey(regs.Content[i].Value) + "]."
			u, ok := c.url(raw, strings.TrimSuffix(key, "."), "yarn registry", o, false)
			if sub := mapping(regs.Content[i+1]); ok && sub != nil {
				y.auth(sub, key, u)
			}
		}
	}
	for _, k := range []string{"httpsCaFilePath", "caFilePath"} {
		if n := value(root, k); n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
			c.addCA(n.Value, k+" ("+o.label+")")
		}
	}
}

type yarnFile struct {
	c     *collector
	o     origin
	lines []string
}

// yarnServer takes the npmRegistryServer of a mapping, if it has one.
func (c *collector) yarnServer(y yarnFile, m *yaml.Node, key, what string) (hostURL, bool) {
	n := value(m, "npmRegistryServer")
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return hostURL{}, false
	}
	v, ok := expandEnv(n.Value, c.h.Env)
	if !ok {
		c.note("%s (%s): names an environment variable that is not set; no rule", key, y.o.label)
		return hostURL{}, false
	}
	label := "yarn registry"
	if what != "" {
		label += " " + what
	}
	return c.url(v, key, label, y.o, true)
}

// auth takes the tokens of a mapping, for server.
func (y yarnFile) auth(m *yaml.Node, prefix string, server hostURL) {
	for _, k := range []string{"npmAuthToken", "npmAuthIdent"} {
		n := value(m, k)
		if n == nil || n.Kind != yaml.ScalarNode || n.Line < 1 || n.Line > len(y.lines) {
			continue
		}
		v, ok := redactedValue(y.lines[n.Line-1])
		switch {
		case !ok:
			if n.Value != "" && !refersToEnv(n.Value) {
				// Written in a form homeview's line reading does not
				// see (a flow mapping, a block scalar).
				y.c.note("%s%s (%s): not replaced in the scrubbed copy as written; no rule", prefix, k, y.o.label)
			}
			continue
		case refersToEnv(v):
			y.c.note("%s%s (%s): the value is partly taken from the environment; no rule", prefix, k, y.o.label)
			continue
		}
		y.c.addSecret(Secret{Value: v, Host: server.host, Port: server.port, File: y.o.file, Key: prefix + k})
	}
}

// mapping returns n (or the document n holds) when it is a mapping.
func mapping(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

// value returns the value of key in mapping m.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// redactKey strips the userinfo of a URL used as a key, so that a note may
// quote it.
func redactKey(k string) string {
	if u, why := parseURL(strings.Replace(k, "//", "https://", 1)); why == "" && !strings.Contains(k, "://") {
		return "//" + u.hostPort()
	}
	if u, why := parseURL(k); why == "" {
		return u.scheme + "://" + u.hostPort()
	}
	return "…"
}
