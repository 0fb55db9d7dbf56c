package registries

import (
	"path/filepath"
	"strings"
)

// git reads the CA bundles git trusts for https (http.sslCAInfo, also in
// URL-specific [http "<url>"] sections) from the user's git configuration:
// $XDG_CONFIG_HOME/git/config, then ~/.gitconfig. Git hosts are not
// package registries: no rules.
func (c *collector) git() {
	if v := c.env("GIT_SSL_CAINFO"); v != "" {
		c.addCA(v, "GIT_SSL_CAINFO (environment)")
	}
	for _, p := range []string{filepath.Join(c.configHome(), "git", "config"), c.home(".gitconfig")} {
		b, ok := c.read(p)
		if !ok {
			continue
		}
		for _, v := range gitSSLCAInfo(string(b)) {
			c.addCA(v, "http.sslCAInfo ("+c.tilde(p)+")")
		}
	}
}

// gitSSLCAInfo returns the http.sslCAInfo values of a git config file.
// Section and key names are case-insensitive; a value may be quoted and
// followed by a comment.
func gitSSLCAInfo(s string) []string {
	var out []string
	section := ""
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if t[0] == '[' {
			end := strings.IndexByte(t, ']')
			if end < 0 {
				section = ""
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSpace(t[1:end]), " ")
			section = strings.ToLower(name)
			// "[http] sslCAInfo = x" on one line.
			t = strings.TrimSpace(t[end+1:])
			if t == "" {
				continue
			}
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok || section != "http" || !strings.EqualFold(strings.TrimSpace(k), "sslcainfo") {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			if end := strings.IndexByte(v[1:], '"'); end >= 0 {
				v = v[1 : 1+end]
			}
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
