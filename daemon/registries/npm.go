package registries

import (
	"path/filepath"
	"strconv"
	"strings"
)

const npmDefault = "https://registry.npmjs.org/"

// npmAuthFields are the per-registry settings of .npmrc that hold a
// credential. npm sends _authToken as a bearer token and _auth as basic
// credentials; _password is base64 that npm decodes before it builds the
// basic credentials, so a placeholder in it cannot be put back on the wire,
// but the secret belongs to the host all the same.
var npmAuthFields = []string{"_authToken", "_auth", "_password"}

// npmEntry is one "key = value" line of an .npmrc outside any [section].
type npmEntry struct {
	key   string // with ${VAR} expanded, as npm expands keys
	value string // unquoted, comment cut, ${VAR} expanded
	line  string // as written
	ok    bool   // every ${VAR} of key and value was set
}

// parseNpmrc reads .npmrc as npm's ini parser does: ';' and '#' start a
// comment line, "[name]" starts a section (whose keys npm does not read as
// settings), a value is unquoted or cut at its first unescaped ';' or '#'.
func parseNpmrc(content string, env map[string]string) []npmEntry {
	var out []npmEntry
	inSection := false
	for line := range strings.Lines(content) {
		line = strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(line)
		if t == "" || t[0] == ';' || t[0] == '#' {
			continue
		}
		if t[0] == '[' && strings.HasSuffix(t, "]") {
			inSection = true
			continue
		}
		if inSection {
			continue
		}
		k, v, _ := strings.Cut(t, "=")
		key, kok := expandEnv(iniUnquote(strings.TrimSpace(k)), env)
		val, vok := expandEnv(iniUnquote(strings.TrimSpace(v)), env)
		key = strings.TrimSuffix(key, "[]")
		out = append(out, npmEntry{key: key, value: val, line: line, ok: kok && vok})
	}
	return out
}

// iniUnquote is the ini package's reading of a value: quotes removed, or
// everything from the first unescaped ';' or '#' cut.
func iniUnquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		if v[0] == '"' {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
		return v[1 : len(v)-1]
	}
	var b strings.Builder
	esc := false
	for _, r := range v {
		switch {
		case esc:
			if r != ';' && r != '#' && r != '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
			esc = false
		case r == ';' || r == '#':
			return strings.TrimSpace(b.String())
		case r == '\\':
			esc = true
		default:
			b.WriteRune(r)
		}
	}
	if esc {
		b.WriteByte('\\')
	}
	return strings.TrimSpace(b.String())
}

// npmEnv returns an npm setting from the environment: npm reads
// npm_config_<name> whatever its case, the lower-case spelling first.
func (c *collector) npmEnv(name string) (string, bool) {
	if v := c.env("npm_config_" + name); v != "" {
		return v, true
	}
	for k, v := range c.h.Env {
		if v != "" && strings.EqualFold(k, "npm_config_"+name) {
			return v, true
		}
	}
	return "", false
}

// npmrcPath is the user config npm reads.
func (c *collector) npmrcPath() (string, bool) {
	p, set := c.npmEnv("userconfig")
	if !set {
		return c.home(".npmrc"), true
	}
	p = c.expandTilde(p)
	if !filepath.IsAbs(p) {
		c.note("npm_config_userconfig (environment): a relative path, which npm reads from the working directory; not read")
		return "", false
	}
	return filepath.Clean(p), true
}

func (c *collector) npm() {
	if p, ok := c.npmrcPath(); ok {
		if b, ok := c.read(p); ok {
			c.npmrc(b, c.fileOrigin(p, true))
			return
		}
	}
	c.npmrc(nil, origin{})
}

// npmrc takes the user's .npmrc (nil when there is none) with the npm_config_*
// variables that override it.
func (c *collector) npmrc(b []byte, o origin) {
	entries := parseNpmrc(string(b), c.h.Env)
	// The default registry: the environment's, else the file's, else npm's.
	var def hostURL
	haveDef := false
	if v, ok := c.npmEnv("registry"); ok {
		def, haveDef = c.url(v, "npm_config_registry", "npm registry", envOrigin, true)
	}
	// npm's ini parser keeps the last of a key written twice.
	last := map[string]int{}
	for i, e := range entries {
		last[e.key] = i
	}
	for i, e := range entries {
		name, scoped := strings.CutSuffix(e.key, ":registry")
		if e.key != "registry" && (!scoped || !strings.HasPrefix(name, "@")) || last[e.key] != i {
			continue
		}
		if !e.ok {
			c.note("%s (%s): names an environment variable that is not set; no rule", e.key, o.label)
			continue
		}
		what := "npm registry"
		if scoped {
			what = "npm registry for " + name
		}
		u, ok := c.url(e.value, e.key, what, o, e.key != "registry" || !haveDef)
		if e.key == "registry" && ok && !haveDef {
			def, haveDef = u, true
		}
	}
	if !haveDef {
		def, _ = parseURL(npmDefault)
		c.addRegistry(def, "npm default")
	}
	for _, e := range entries {
		c.npmAuth(e, o, def)
	}
	if v, ok := c.npmEnv("cafile"); ok {
		c.addCA(v, "npm_config_cafile (environment)")
	} else {
		for _, e := range entries {
			if e.key == "cafile" && e.ok && e.value != "" {
				c.addCA(e.value, "cafile ("+o.label+")")
			}
		}
	}
	if v := c.env("NODE_EXTRA_CA_CERTS"); v != "" {
		c.addCA(v, "NODE_EXTRA_CA_CERTS (environment)")
	}
}

// npmAuth takes a credential setting: "//host[:port]/path/:_authToken",
// or an unscoped _authToken, _auth or _password, which belongs to the
// default registry.
func (c *collector) npmAuth(e npmEntry, o origin, def hostURL) {
	field := e.key
	var host string
	port := 0
	if rest, ok := strings.CutPrefix(e.key, "//"); ok {
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return
		}
		field = rest[i+1:]
		if !isNpmAuthField(field) {
			return
		}
		hp, _, _ := strings.Cut(rest[:i], "/")
		u, why := parseURL("https://" + hp)
		if why != "" {
			c.note("%s (%s): the registry in the key is not a host; no rule", field, o.label)
			return
		}
		host, port = u.host, u.port
		if !strings.Contains(strings.TrimPrefix(hp, "["+u.host+"]"), ":") {
			// No port in the key: npm sends it to that host at whatever
			// port a registry URL names, by default the scheme's.
			port = c.portOf(u.host, 443)
		}
	} else {
		if !isNpmAuthField(field) {
			return
		}
		host, port = def.host, def.port
	}
	value, ok := redactedValue(e.line)
	switch {
	case !ok:
		// A reference (${NPM_TOKEN}) or nothing: the copy holds no
		// placeholder, and npm fills it in from the environment.
		return
	case refersToEnv(value):
		c.note("%s (%s): the value is partly taken from the environment; no rule", e.key, o.label)
		return
	}
	c.addSecret(Secret{Value: value, Host: host, Port: port, File: o.file, Key: e.key})
}

func isNpmAuthField(f string) bool {
	for _, a := range npmAuthFields {
		if f == a {
			return true
		}
	}
	return false
}

// portOf returns the port of the registry already found at host, or def
// when there is none or more than one.
func (c *collector) portOf(host string, def int) int {
	port := 0
	for _, r := range c.f.Registries {
		if r.Host == host {
			if port != 0 && port != r.Port {
				return def
			}
			port = r.Port
		}
	}
	if port == 0 {
		return def
	}
	return port
}
