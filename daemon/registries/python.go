package registries

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// etcDir is where system-wide configuration lives (a variable for tests).
var etcDir = "/etc"

const (
	pypiHost  = "pypi.org"
	pypiFiles = "files.pythonhosted.org"
)

// pipConf is one pip configuration file: "section.key" -> value, keys
// normalised as pip does (lower-case, '_' as '-').
type pipConf map[string]string

// parsePipConf reads an ini file as Python's configparser does for pip:
// "[section]" headers, "key = value" or "key: value", comment lines
// starting with '#' or ';', and indented lines that continue the value
// before them (extra-index-url lists one URL a line). ok is false when the
// file does not parse (an option before any section), which makes pip
// refuse it.
func parsePipConf(s string) (conf pipConf, badLine int, ok bool) {
	conf = pipConf{}
	section, key := "", ""
	n := 0
	for line := range strings.Lines(s) {
		n++
		line = strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if t[0] == '#' || t[0] == ';' {
			continue
		}
		if key != "" && (line[0] == ' ' || line[0] == '\t') {
			conf[section+"."+key] += "\n" + t
			continue
		}
		if t[0] == '[' {
			end := strings.IndexByte(t, ']')
			if end < 0 {
				return nil, n, false
			}
			section, key = t[1:end], ""
			continue
		}
		if section == "" {
			return nil, n, false
		}
		i := strings.IndexAny(t, "=:")
		if i <= 0 {
			return nil, n, false
		}
		key = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(t[:i])), "_", "-")
		conf[section+"."+key] = strings.TrimSpace(t[i+1:])
	}
	return conf, 0, true
}

// pipFile is a pip configuration file read, and where.
type pipFile struct {
	conf pipConf
	o    origin
}

// pipFiles lists the configuration files pip loads, in its order (later
// ones override earlier ones): the global files, the user's (the legacy
// ~/.pip/pip.conf, then the XDG one; neither when PIP_CONFIG_FILE names a
// file that exists), the virtualenv's, and PIP_CONFIG_FILE.
func (c *collector) pipFiles() []pipFile {
	env := c.env("PIP_CONFIG_FILE")
	if env == os.DevNull {
		return nil // pip loads no configuration files at all
	}
	type cand struct {
		p        string
		scrubbed bool
	}
	var cands []cand
	dirs := c.env("XDG_CONFIG_DIRS")
	if dirs == "" {
		dirs = filepath.Join(etcDir, "xdg")
	}
	for _, d := range filepath.SplitList(dirs) {
		if filepath.IsAbs(d) {
			cands = append(cands, cand{filepath.Join(d, "pip", "pip.conf"), false})
		}
	}
	cands = append(cands, cand{filepath.Join(etcDir, "pip.conf"), false})
	envExists := false
	if env != "" {
		_, err := os.Stat(env)
		envExists = err == nil
	}
	user := []cand{
		{c.home(".pip/pip.conf"), true},
		{filepath.Join(c.configHome(), "pip", "pip.conf"), true},
	}
	if !envExists {
		cands = append(cands, user...)
	}
	if v := c.env("VIRTUAL_ENV"); filepath.IsAbs(v) {
		cands = append(cands, cand{filepath.Join(v, "pip.conf"), false})
	}
	if env != "" {
		if !filepath.IsAbs(env) {
			c.note("PIP_CONFIG_FILE (environment): not an absolute path; not read")
		} else {
			p := filepath.Clean(env)
			scrubbed := false
			for _, u := range user {
				scrubbed = scrubbed || u.p == p
			}
			cands = append(cands, cand{p, scrubbed})
		}
	}
	var out []pipFile
	for _, cd := range cands {
		b, ok := c.read(cd.p)
		if !ok {
			continue
		}
		if f, ok := c.pipFile(b, c.fileOrigin(cd.p, cd.scrubbed)); ok {
			out = append(out, f)
		}
	}
	return out
}

func (c *collector) pipFile(b []byte, o origin) (pipFile, bool) {
	conf, line, ok := parsePipConf(string(b))
	if !ok {
		c.note("%s: does not parse as pip configuration (line %d); skipped, as pip refuses it", o.label, line)
		return pipFile{}, false
	}
	return pipFile{conf, o}, true
}

func (c *collector) pip() { c.pipFrom(c.pipFiles()) }

// pipFrom takes pip's configuration files, in pip's order, with the PIP_*
// variables that override them.
func (c *collector) pipFrom(files []pipFile) {
	// Every index URL written anywhere gives its password to its own host,
	// whether or not it is the one in force: the copy has a placeholder for
	// it either way.
	for _, f := range files {
		for _, k := range slices.Sorted(maps.Keys(f.conf)) {
			v := f.conf[k]
			_, name, _ := strings.Cut(k, ".")
			if name == "index-url" || name == "extra-index-url" {
				for _, u := range strings.Fields(v) {
					c.url(u, name, "", f.o, false)
				}
			}
		}
	}
	// What pip install uses: the environment, else [install], else
	// [global], the last file that sets it winning within each.
	get := func(name string) (string, origin, bool) {
		if v := c.env("PIP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))); v != "" {
			return v, envOrigin, true
		}
		for _, section := range []string{"install", "global"} {
			for i := len(files) - 1; i >= 0; i-- {
				if v, ok := files[i].conf[section+"."+name]; ok {
					return v, files[i].o, true
				}
			}
		}
		return "", origin{}, false
	}
	if v, o, ok := get("index-url"); ok {
		c.pythonIndex(v, "index-url", o)
	} else {
		c.pypiDefault("pip default")
	}
	if v, o, ok := get("extra-index-url"); ok {
		for _, u := range strings.Fields(v) {
			c.pythonIndex(u, "extra-index-url", o)
		}
	}
	if v, o, ok := get("cert"); ok {
		c.addCA(v, "pip cert ("+o.label+")")
	}
}

// pythonIndex takes an index URL in force. The real PyPI serves its files
// from another host.
func (c *collector) pythonIndex(raw, name string, o origin) {
	key, what := name, "pip "+name
	if o.file == "" {
		key = "PIP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		what = key
	}
	if u, ok := c.url(raw, key, what, o, true); ok && u.host == pypiHost {
		c.addDefault(pypiFiles, what+" ("+o.label+")")
	}
}

func (c *collector) pypiDefault(source string) {
	c.addDefault(pypiHost, source)
	c.addDefault(pypiFiles, source)
}

// uv reads uv's user configuration ($XDG_CONFIG_HOME/uv/uv.toml, or
// UV_CONFIG_FILE) and environment: index-url, extra-index-url, [[index]]
// and the same in [pip]; UV_DEFAULT_INDEX, UV_INDEX_URL, UV_INDEX,
// UV_EXTRA_INDEX_URL.
func (c *collector) uv() {
	if c.env("UV_NO_CONFIG") != "" {
		c.uvEnv(false)
		return
	}
	p, scrubbed := filepath.Join(c.configHome(), "uv", "uv.toml"), true
	if v := c.env("UV_CONFIG_FILE"); v != "" {
		if !filepath.IsAbs(v) {
			c.note("UV_CONFIG_FILE (environment): not an absolute path; not read")
			c.uvEnv(false)
			return
		}
		scrubbed = filepath.Clean(v) == p
		p = filepath.Clean(v)
	}
	b, ok := c.read(p)
	if !ok {
		c.uvEnv(false)
		return
	}
	o := c.fileOrigin(p, scrubbed)
	var doc map[string]any
	if _, err := toml.Decode(string(b), &doc); err != nil {
		c.note("%s: does not parse as TOML%s; skipped", o.label, tomlLine(err))
		c.uvEnv(false)
		return
	}
	hasDefault := false
	take := func(t map[string]any, prefix string) {
		if s, ok := t["index-url"].(string); ok {
			c.url(s, prefix+"index-url", "uv index-url", o, true)
			hasDefault = true
		}
		for _, s := range strings2(t["extra-index-url"]) {
			c.url(s, prefix+"extra-index-url", "uv extra-index-url", o, true)
		}
		idx, _ := t["index"].([]map[string]any)
		for _, e := range idx {
			if s, ok := e["url"].(string); ok {
				c.url(s, prefix+"index.url", "uv index", o, true)
				if d, _ := e["default"].(bool); d {
					hasDefault = true
				}
			}
		}
	}
	take(doc, "")
	if pip, ok := doc["pip"].(map[string]any); ok {
		take(pip, "pip.")
	}
	c.uvEnv(hasDefault)
}

// uvEnv takes uv's index variables; PyPI is the default index unless one
// replaces it.
func (c *collector) uvEnv(hasDefault bool) {
	for _, k := range []string{"UV_DEFAULT_INDEX", "UV_INDEX_URL"} {
		if v := c.env(k); v != "" {
			c.url(v, k, k, envOrigin, true)
			hasDefault = true
		}
	}
	for _, k := range []string{"UV_INDEX", "UV_EXTRA_INDEX_URL"} {
		for _, e := range strings.Fields(c.env(k)) {
			// UV_INDEX entries may be named: "name=https://...".
			if i := strings.Index(e, "="); i >= 0 && i < strings.Index(e, "://") {
				e = e[i+1:]
			}
			c.url(e, k, k, envOrigin, true)
		}
	}
	// PyPI is uv's default index; it is uv's to ask for only when the user
	// has uv (pip's configuration may point elsewhere on purpose).
	if !hasDefault && c.usesUV() {
		c.pypiDefault("uv default")
	}
}

// usesUV reports whether the user has uv: its configuration, a UV_
// variable, or the command on PATH.
func (c *collector) usesUV() bool {
	if _, err := os.Stat(filepath.Join(c.configHome(), "uv", "uv.toml")); err == nil {
		return true
	}
	for k := range c.h.Env {
		if strings.HasPrefix(k, "UV_") {
			return true
		}
	}
	return c.onPath("uv")
}

// onPath reports whether an executable named name is in a directory of
// the caller's PATH.
func (c *collector) onPath(name string) bool {
	for _, d := range filepath.SplitList(c.env("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// poetry reads Poetry's config.toml ($POETRY_CONFIG_DIR, by default
// $XDG_CONFIG_HOME/pypoetry): repositories.<n>.url, and the credentials
// for each: http-basic.<n>.password and pypi-token.<n> (which, for the
// name "pypi", is PyPI's upload host).
func (c *collector) poetry() {
	dir := filepath.Join(c.configHome(), "pypoetry")
	scrubbed := true
	if v := c.env("POETRY_CONFIG_DIR"); filepath.IsAbs(v) {
		scrubbed = filepath.Clean(v) == dir
		dir = filepath.Clean(v)
	}
	p := filepath.Join(dir, "config.toml")
	b, ok := c.read(p)
	if !ok {
		return
	}
	o := c.fileOrigin(p, scrubbed)
	var doc map[string]any
	if _, err := toml.Decode(string(b), &doc); err != nil {
		c.note("%s: does not parse as TOML%s; skipped", o.label, tomlLine(err))
		return
	}
	repos := map[string]hostURL{}
	if rs, ok := doc["repositories"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(rs)) {
			t, _ := rs[name].(map[string]any)
			if s, ok := t["url"].(string); ok {
				if u, ok := c.url(s, "repositories."+name+".url", "poetry repository "+name, o, true); ok {
					repos[name] = u
				}
			}
		}
	}
	repoOf := func(name string) (hostURL, bool) {
		if u, ok := repos[name]; ok {
			return u, true
		}
		if name == "pypi" {
			u, _ := parseURL("https://upload.pypi.org/legacy/")
			return u, true
		}
		return hostURL{}, false
	}
	if hb, ok := doc["http-basic"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(hb)) {
			t, _ := hb[name].(map[string]any)
			if pw, ok := t["password"].(string); ok {
				c.tomlSecret(b, pw, "http-basic."+name+".password", o, func() (hostURL, bool) { return repoOf(name) })
			}
		}
	}
	if pt, ok := doc["pypi-token"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(pt)) {
			if tok, ok := pt[name].(string); ok {
				c.tomlSecret(b, tok, "pypi-token."+name, o, func() (hostURL, bool) { return repoOf(name) })
			}
		}
	}
	if cs, ok := doc["certificates"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(cs)) {
			t, _ := cs[name].(map[string]any)
			if s, ok := t["cert"].(string); ok {
				c.addCA(s, "certificates."+name+".cert ("+o.label+")")
			}
		}
	}
}

// strings2 returns a TOML string or array of strings as a list.
func strings2(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
