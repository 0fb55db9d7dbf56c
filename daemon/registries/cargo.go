package registries

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// crates.io: the sparse index, the download host, and the API (publish,
// search, owner).
var cratesIO = []string{"index.crates.io", "static.crates.io", "crates.io"}

const cratesIOGitIndex = "https://github.com/rust-lang/crates.io-index"

// cargoFile picks the file cargo reads of name and name.toml in dir: the
// one without the extension when both exist (cargo warns and uses it).
func (c *collector) cargoFile(dir, name string) (string, bool) {
	legacy, current := filepath.Join(dir, name), filepath.Join(dir, name+".toml")
	_, errL := os.Stat(legacy)
	_, errC := os.Stat(current)
	switch {
	case errL == nil && errC == nil:
		c.note("%s and %s both exist: cargo reads only the first, and so does this", c.tilde(legacy), c.tilde(current))
		return legacy, true
	case errL == nil:
		return legacy, true
	case errC == nil:
		return current, true
	}
	return "", false
}

// cargoDoc reads one of cargo's TOML files.
func (c *collector) cargoDoc(dir, name string) (doc map[string]any, b []byte, o origin, ok bool) {
	p, ok := c.cargoFile(dir, name)
	if !ok {
		return nil, nil, o, false
	}
	b, ok = c.read(p)
	if !ok {
		return nil, nil, o, false
	}
	o = c.fileOrigin(p, true)
	if _, err := toml.Decode(string(b), &doc); err != nil {
		c.note("%s: does not parse as TOML%s; skipped", o.label, tomlLine(err))
		return nil, nil, o, false
	}
	return doc, b, o, true
}

// cargo reads $CARGO_HOME/config.toml (registries, source replacement,
// http.cainfo) and $CARGO_HOME/credentials.toml (tokens), with the
// CARGO_* variables that override them. Project configuration
// (.cargo/config.toml in a workspace) is not known when the daemon starts.
func (c *collector) cargo() {
	home := c.dirVar("CARGO_HOME", ".cargo")
	cfg, cfgRaw, cfgO, _ := c.cargoDoc(home, "config")
	regs := table(cfg, "registries")

	// The index of each named registry: the environment's, else the file's.
	// Keyed by the name as a variable spells it, which is how a registry
	// named only in the environment is known.
	index := map[string]hostURL{}
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		if name == "crates-io" {
			continue
		}
		key := "registries." + name + ".index"
		raw, o := str(table(regs, name), "index"), cfgO
		if v := c.env("CARGO_REGISTRIES_" + envName(name) + "_INDEX"); v != "" {
			raw, o, key = v, envOrigin, "CARGO_REGISTRIES_"+envName(name)+"_INDEX"
		}
		if raw == "" {
			continue
		}
		if u, ok := c.cargoIndex(raw, key, "cargo registry "+name, o); ok {
			index[envName(name)] = u
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.h.Env)) {
		n, ok := strings.CutPrefix(k, "CARGO_REGISTRIES_")
		n, ok2 := strings.CutSuffix(n, "_INDEX")
		if _, seen := index[n]; !ok || !ok2 || seen || n == "CRATES_IO" || c.env(k) == "" {
			continue
		}
		if u, ok := c.cargoIndex(c.env(k), k, "cargo registry "+strings.ToLower(n), envOrigin); ok {
			index[n] = u
		}
	}

	// Source replacement: crates.io (or another source) may be replaced
	// by a mirror, in which case cargo does not contact it.
	srcs := table(cfg, "source")
	cratesReplaced := false
	for _, name := range slices.Sorted(maps.Keys(srcs)) {
		s := table(srcs, name)
		if r := str(s, "registry"); r != "" {
			c.cargoIndex(r, "source."+name+".registry", "cargo source "+name, cfgO)
		}
		if name == "crates-io" && str(s, "replace-with") != "" {
			cratesReplaced = true
		}
	}
	if cratesReplaced {
		c.note("source.crates-io.replace-with (%s): crates.io is replaced; the mirror's download host is named by its index's config.json, and is allowed only if it is the index's host", cfgO.label)
	} else {
		protocol := str(table(regs, "crates-io"), "protocol")
		if v := c.env("CARGO_REGISTRIES_CRATES_IO_PROTOCOL"); v != "" {
			protocol = v
		}
		hosts := cratesIO
		if protocol == "git" {
			u, _ := parseURL(cratesIOGitIndex)
			c.addRegistry(u, "cargo default (crates.io git index)")
			hosts = cratesIO[1:]
		}
		for _, h := range hosts {
			c.addDefault(h, "cargo default")
		}
	}

	if v := c.env("CARGO_HTTP_CAINFO"); v != "" {
		c.addCA(v, "CARGO_HTTP_CAINFO (environment)")
	} else if p := str(table(cfg, "http"), "cainfo"); p != "" {
		// cargo reads a relative path from the directory that holds
		// $CARGO_HOME.
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			p = filepath.Join(filepath.Dir(home), p)
		}
		c.addCA(p, "http.cainfo ("+cfgO.label+")")
	}

	hostOf := func(name string) func() (hostURL, bool) {
		return func() (hostURL, bool) {
			if name == "" {
				return hostURL{scheme: "https", host: "crates.io", port: 443}, true
			}
			u, ok := index[envName(name)]
			return u, ok
		}
	}
	// Tokens: credentials.toml, and config.toml, where older setups kept
	// them (homeview scrubs both).
	cred, credRaw, credO, _ := c.cargoDoc(home, "credentials")
	for _, f := range []struct {
		doc map[string]any
		raw []byte
		o   origin
	}{{cred, credRaw, credO}, {cfg, cfgRaw, cfgO}} {
		if tok := str(table(f.doc, "registry"), "token"); tok != "" {
			c.tomlSecret(f.raw, tok, "registry.token", f.o, hostOf(""))
		}
		rs := table(f.doc, "registries")
		for _, name := range slices.Sorted(maps.Keys(rs)) {
			if tok := str(table(rs, name), "token"); tok != "" {
				h := hostOf(name)
				if name == "crates-io" {
					h = hostOf("")
				}
				c.tomlSecret(f.raw, tok, "registries."+name+".token", f.o, h)
			}
		}
	}
}

// cargoIndex takes a registry index URL: "sparse+https://..." for a sparse
// index, else a git repository (cargo fetches an https one over https; one
// over ssh is not for the proxy).
func (c *collector) cargoIndex(raw, key, what string, o origin) (hostURL, bool) {
	raw = strings.TrimPrefix(raw, "sparse+")
	if strings.HasPrefix(raw, "ssh://") || strings.HasPrefix(raw, "git@") || strings.HasPrefix(raw, "git://") {
		c.note("%s (%s): a git index fetched over ssh or git://, not through the proxy; no rule", key, o.label)
		return hostURL{}, false
	}
	if strings.HasPrefix(raw, "file://") {
		return hostURL{}, false
	}
	return c.url(raw, key, what, o, true)
}

// envName is how cargo spells a registry name in a variable.
func envName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// tomlSecret records a credential read from a TOML file as decoded. Its
// Value must be the text the scrubbed copy replaced: homeview.Redact's
// value on the line that holds it, which differs from the decoded string
// when the string has escapes. A value Redact does not see (a key that does
// not name a credential, such as poetry's pypi-token.<name>) is only ever
// replaced by the secret scanner, which sees it as written.
func (c *collector) tomlSecret(raw []byte, decoded, key string, o origin, host func() (hostURL, bool)) {
	u, ok := host()
	if !ok {
		c.note("%s (%s): no registry of that name with a known host; no rule", key, o.label)
		return
	}
	var value string
	for line := range strings.Lines(string(raw)) {
		v, ok := redactedValue(strings.TrimRight(line, "\r\n"))
		if ok && (v == decoded || tomlUnquote(v) == decoded) {
			value = v
			break
		}
	}
	if value == "" {
		if !strings.Contains(string(raw), decoded) {
			c.note("%s (%s): written in a form neither homeview nor the scanner replaces as a whole; no rule", key, o.label)
			return
		}
		value = decoded
	}
	if refersToEnv(value) {
		return
	}
	c.addSecret(Secret{Value: value, Host: u.host, Port: u.port, File: o.file, Key: key})
}

// tomlUnquote decodes the escapes of a TOML basic string's content.
func tomlUnquote(s string) string {
	var v struct{ S string }
	if _, err := toml.Decode("S = \""+s+"\"", &v); err != nil {
		return ""
	}
	return v.S
}

// tomlLine says where a TOML file stopped parsing, without quoting it.
func tomlLine(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) && pe.Position.Line > 0 {
		return fmt.Sprintf(" (line %d)", pe.Position.Line)
	}
	return ""
}

func table(m map[string]any, k string) map[string]any {
	t, _ := m[k].(map[string]any)
	return t
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
