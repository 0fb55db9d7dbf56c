package registries

import "strings"

// origin says where a setting was read: a configuration file (scrubbed
// when homeview shows it only as a copy with placeholders) or the
// environment.
type origin struct {
	file     string // absolute path; "" for the environment
	label    string // human-readable: "~/.npmrc", "environment"
	scrubbed bool
}

func (c *collector) fileOrigin(p string, scrubbed bool) origin {
	return origin{file: p, label: c.tilde(p), scrubbed: scrubbed}
}

var envOrigin = origin{label: "environment"}

// url takes an index or registry URL read under key from o: the registry
// it names (when asRegistry), and the credential in its userinfo. what
// names the setting in the Source text ("npm registry"). ok is false when
// it is not an http(s) URL; the note says so without quoting it, as it may
// hold a password.
func (c *collector) url(raw, key, what string, o origin, asRegistry bool) (hostURL, bool) {
	u, why := parseURL(raw)
	if why != "" {
		c.note("%s (%s): %s; no rule", key, o.label, why)
		return u, false
	}
	if asRegistry {
		c.addRegistry(u, what+" ("+o.label+")")
	}
	if pw, ok := u.password(); ok {
		switch {
		case o.scrubbed:
			c.addSecret(Secret{Value: pw, Host: u.host, Port: u.port, File: o.file, Key: key + " password"})
		case o.file == "":
			c.note("%s (environment): the URL holds a credential for %s; it is not in a scrubbed file, so the proxy has no placeholder for it", key, u.hostPort())
		default:
			c.note("%s (%s): the URL holds a credential for %s, and the file is shown as it is, not scrubbed", key, o.label, u.hostPort())
		}
	}
	return u, true
}

// expandEnv replaces ${NAME} (and npm's ${NAME?}, yarn's ${NAME:-default})
// with the variable from env, as npm and yarn do when they read their
// configuration. ok is false when a variable is unset and has no default.
func expandEnv(s string, env map[string]string) (string, bool) {
	ok := true
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), ok
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), ok
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		switch v, set := env[name]; {
		case set && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case optional:
		default:
			ok = false
		}
		s = s[i+j+1:]
	}
}
