// Package registries finds the package registries the user's toolchains are configured with, and the credentials that belong to each.
package registries

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/contextd/contextd/daemon/homeview"
)

// Registry is a host a toolchain of the user's fetches packages from.
type Registry struct {
	Host   string // lower-case host name or IP literal (no brackets)
	Port   int    // explicit or the scheme's default (443 https, 80 http)
	Scheme string // "https" or "http"
	// Source is a human-readable origin: "npm registry (~/.npmrc)", "npm
	// default", "GOPROXY (environment)".
	Source string
}

// Secret is a credential from the user's toolchain configuration and the
// host it is for.
type Secret struct {
	// Value is exactly the string the scrubbed copy of File replaced with a
	// placeholder (homeview.Redact's value, or the password of a URL as the
	// scrubber's URL rule cuts it: as written, percent escapes and all).
	Value string
	Host  string
	Port  int // 0: any port
	// File is the absolute path of the configuration file it was read from,
	// spelt as homeview spells it, so that it can serve as the vault source.
	File string
	// Key is where in File it was: "//registry.example.com/:_authToken",
	// "servers/server[id=nexus]/password", "index-url password".
	Key string
}

// Found is what Discover found.
type Found struct {
	Registries []Registry
	Secrets    []Secret
	// CAFiles are extra CA bundles the user's tools trust (npm cafile, pip
	// cert, cargo http.cainfo, git http.sslCAInfo): the proxy trusts them
	// upstream.
	CAFiles []string
	// Notes say what was seen but not turned into a rule, and why. They
	// never hold a secret: only file names, keys and host names.
	Notes []string
}

// maxFile bounds a configuration file Discover reads: homeview refuses to
// render a larger one, so nothing in it could have a placeholder.
const maxFile = 1 << 20

// Discover reads the user's toolchain configuration as the tools themselves
// would, with h's home and environment (never the daemon's own). Missing
// files are fine; a file that does not parse adds a Note and is otherwise
// skipped.
func Discover(h *homeview.Host) Found {
	c := &collector{h: h, regs: map[string]bool{}, secrets: map[Secret]bool{}, cas: map[string]bool{}}
	c.npm()
	c.yarn()
	c.golang()
	c.pip()
	c.uv()
	c.poetry()
	c.cargo()
	c.maven()
	c.gradle()
	c.git()
	return c.f
}

type collector struct {
	h       *homeview.Host
	f       Found
	regs    map[string]bool // host:port seen
	secrets map[Secret]bool
	cas     map[string]bool
}

func (c *collector) env(name string) string { return c.h.Env[name] }

func (c *collector) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(c.f.Notes, n) {
		c.f.Notes = append(c.f.Notes, n)
	}
}

// addRegistry records a registry once per host and port: the first source
// to name it is the one shown.
func (c *collector) addRegistry(u hostURL, source string) {
	k := hostPortKey(u.host, u.port)
	if c.regs[k] {
		return
	}
	c.regs[k] = true
	c.f.Registries = append(c.f.Registries, Registry{Host: u.host, Port: u.port, Scheme: u.scheme, Source: source})
}

// addDefault records a registry that a tool uses when nothing else is
// configured.
func (c *collector) addDefault(host, source string) {
	c.addRegistry(hostURL{scheme: "https", host: host, port: 443}, source)
}

func (c *collector) addSecret(s Secret) {
	if s.Value == "" || c.secrets[s] {
		return
	}
	c.secrets[s] = true
	c.f.Secrets = append(c.f.Secrets, s)
}

// addCA records a CA bundle the user's tools trust, if it exists.
func (c *collector) addCA(p, what string) {
	p = c.expandTilde(p)
	if !filepath.IsAbs(p) {
		c.note("%s: not an absolute path; not trusted upstream", what)
		return
	}
	p = filepath.Clean(p)
	if c.cas[p] {
		return
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		c.note("%s: %s is not a readable file; not trusted upstream", what, c.tilde(p))
		return
	}
	c.cas[p] = true
	c.f.CAFiles = append(c.f.CAFiles, p)
}

func hostPortKey(host string, port int) string { return host + ":" + strconv.Itoa(port) }

// home returns a path below the home.
func (c *collector) home(rel string) string { return filepath.Join(c.h.Home, rel) }

// dirVar returns an absolute directory from the environment, or def below
// the home when the variable is unset or not absolute (as homeview and the
// tools themselves fall back).
func (c *collector) dirVar(name, def string) string {
	if v := c.env(name); filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return c.home(def)
}

// configHome is os.UserConfigDir's answer with the caller's environment.
func (c *collector) configHome() string { return c.dirVar("XDG_CONFIG_HOME", ".config") }

// expandTilde replaces a leading "~/" with the home, as npm, git and cargo
// do for path settings.
func (c *collector) expandTilde(p string) string {
	if p == "~" {
		return c.h.Home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(c.h.Home, rest)
	}
	return p
}

// tilde abbreviates a path below the home for human-readable text.
func (c *collector) tilde(p string) string {
	if c.h.Home != "" {
		if rest, ok := strings.CutPrefix(p, filepath.Clean(c.h.Home)+"/"); ok {
			return "~/" + rest
		}
	}
	return p
}

// read returns a file's content; ok is false when it does not exist (or is
// not a regular file). A file that exists but cannot be read adds a note.
func (c *collector) read(p string) ([]byte, bool) {
	f, err := os.Open(p)
	if err != nil {
		if !os.IsNotExist(err) {
			c.note("%s: cannot be read; skipped", c.tilde(p))
		}
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		c.note("%s: cannot be read; skipped", c.tilde(p))
		return nil, false
	}
	if len(b) > maxFile {
		c.note("%s: larger than %d bytes; skipped", c.tilde(p), maxFile)
		return nil, false
	}
	return b, true
}

// redactedValue returns the secret homeview.Redact replaces in text (one
// line, or one XML element), so that a Secret's Value is by construction
// the string the scrubbed copy holds a placeholder for.
func redactedValue(text string) (string, bool) {
	var got string
	homeview.Redact([]byte(text), func(s string) string { got = s; return "\x00" })
	return got, got != ""
}

// refersToEnv reports a value a tool fills in from the environment, in part
// or whole: homeview leaves a whole reference as it is, and a partial one
// would be put back wrongly.
func refersToEnv(v string) bool { return strings.Contains(v, "${") }
