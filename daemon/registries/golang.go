package registries

import (
	"path"
	"path/filepath"
	"strings"
)

const (
	goProxyDefault = "https://proxy.golang.org,direct"
	goSumDBDefault = "sum.golang.org"
)

// golang reads the go command's module settings: the environment first,
// then the file `go env -w` writes ($GOENV, by default
// os.UserConfigDir()/go/env), then the go command's defaults (which
// $GOROOT/go.env spells out).
func (c *collector) golang() {
	file := map[string]string{}
	var fo origin
	switch p := c.env("GOENV"); {
	case p == "off":
	case p != "" && !filepath.IsAbs(p):
		c.note("GOENV (environment): not an absolute path; go's env file not read")
	case p == "" && c.env("XDG_CONFIG_HOME") != "" && !filepath.IsAbs(c.env("XDG_CONFIG_HOME")):
		// os.UserConfigDir refuses a relative XDG_CONFIG_HOME, and the go
		// command then reads no env file.
		c.note("XDG_CONFIG_HOME (environment): not an absolute path; go's env file not read")
	default:
		if p == "" {
			p = filepath.Join(c.configHome(), "go", "env")
		}
		if b, ok := c.read(filepath.Clean(p)); ok {
			// homeview shows this file as it is (it is not meant to hold
			// credentials).
			fo = c.fileOrigin(filepath.Clean(p), false)
			file = parseGoEnv(string(b))
		}
	}
	get := func(k string) (string, origin, bool) {
		if v := c.env(k); v != "" {
			return v, envOrigin, true
		}
		if v, ok := file[k]; ok && v != "" {
			return v, fo, true
		}
		return "", origin{}, false
	}

	proxy, o, set := get("GOPROXY")
	what := "GOPROXY"
	if !set {
		proxy, o, what = goProxyDefault, origin{label: "Go default"}, "Go default"
	}
	for _, e := range strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' }) {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case e == "direct":
			if set {
				c.note("GOPROXY (%s): \"direct\": modules the proxies do not serve come from their version-control hosts, which are not known in advance; no rule", o.label)
			}
		case e == "off":
			c.note("GOPROXY (%s): \"off\": the go command downloads no modules from there on", o.label)
		case strings.HasPrefix(e, "file://") || filepath.IsAbs(e):
		default:
			// As the go command does: a bare host (and path) means https.
			if !strings.Contains(e, ":/") && strings.ContainsAny(e, ".:/") && !path.IsAbs(e) {
				e = "https://" + e
			}
			src := what
			if set {
				src = "GOPROXY (" + o.label + ")"
			}
			if u, ok := c.url(e, "GOPROXY", "GOPROXY", o, false); ok {
				c.addRegistry(u, src)
			}
		}
	}

	sumdb, o, set := get("GOSUMDB")
	if !set {
		sumdb, o = goSumDBDefault, origin{label: "Go default"}
	}
	if u, ok := c.goSumDB(sumdb, o); ok {
		src := "Go default checksum database"
		if set {
			src = "GOSUMDB (" + o.label + ")"
		}
		c.addRegistry(u, src)
	}

	for _, k := range []string{"GOPRIVATE", "GONOPROXY", "GONOSUMDB"} {
		if v, o, ok := get(k); ok {
			c.note("%s (%s): modules matching %s come from their version-control hosts, which are not known in advance; no rule", k, o.label, strings.Join(strings.Split(v, ","), " "))
		}
	}
}

// goSumDB works out where the go command fetches a checksum database:
// GOSUMDB is "off", a name ("sum.golang.org"), "name+key", or either
// followed by the database's URL.
func (c *collector) goSumDB(v string, o origin) (hostURL, bool) {
	f := strings.Fields(v)
	if len(f) == 0 || f[0] == "off" {
		return hostURL{}, false
	}
	if len(f) >= 2 {
		return c.url(f[1], "GOSUMDB", "GOSUMDB", o, false)
	}
	name, _, _ := strings.Cut(f[0], "+")
	u, why := parseURL("https://" + name)
	if why != "" {
		c.note("GOSUMDB (%s): the name is not a host; no rule", o.label)
		return hostURL{}, false
	}
	return u, true
}

// parseGoEnv reads the go env file as the go command does: KEY=VALUE lines
// whose key starts with an upper-case letter; anything else is skipped.
func parseGoEnv(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || k[0] < 'A' || k[0] > 'Z' {
			continue
		}
		out[k] = v
	}
	return out
}
