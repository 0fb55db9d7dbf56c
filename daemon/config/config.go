// Package config loads contextd's TOML configuration. Every key has a default that
// works with no file at all; docs/config.md and packaging/config.example.toml
// document each one.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
)

// Duration is a time.Duration written as a Go duration string ("90s", "10m").
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (examples: \"90s\", \"10m\", \"1h\")", b)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Config is the whole configuration. Zero values are replaced by the defaults in
// Default; see docs/config.md.
type Config struct {
	// Socket is the path the daemon binds when not socket-activated, and the path
	// the proxy connects to. Default: $XDG_RUNTIME_DIR/contextd/contextd.sock.
	Socket string `toml:"socket"`
	// IdleTimeout: the daemon exits after this long without a call in flight, and
	// socket activation starts it again on the next call. "0s" never exits.
	IdleTimeout Duration `toml:"idle_timeout"`
	// DrainTimeout: on SIGTERM, calls in flight get this long to finish before they
	// are cancelled (their commands killed) and reported as CTXD-E014.
	DrainTimeout Duration `toml:"drain_timeout"`
	// AllowedUIDs are other users allowed through the peer check. Empty: only the
	// daemon's own uid.
	AllowedUIDs []uint32 `toml:"allowed_uids"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// MaxRequestBytes bounds one request (a safe_write's content travels in it).
	MaxRequestBytes int `toml:"max_request_bytes"`
	// WorkspaceMarkers: the workspace of a call is the nearest ancestor of its
	// working directory holding one of these names; without one, the working
	// directory itself.
	WorkspaceMarkers []string `toml:"workspace_markers"`

	Tools Tools `toml:"tools"`

	// Source is the file the configuration was read from ("" for defaults only).
	Source string `toml:"-"`
}

// Tools holds per-tool settings.
type Tools struct {
	SafeBash SafeBash `toml:"safe_bash"`
}

// SafeBash configures safe_bash.
type SafeBash struct {
	// Shell runs the command as `Shell -c COMMAND`.
	Shell string `toml:"shell"`
	// DefaultTimeout applies when a call gives none.
	DefaultTimeout Duration `toml:"default_timeout"`
	// MaxTimeout is the most a call may ask for.
	MaxTimeout Duration `toml:"max_timeout"`
}

// Default returns the configuration used when no file sets a key.
func Default() *Config {
	return &Config{
		IdleTimeout:      Duration{10 * time.Minute},
		DrainTimeout:     Duration{30 * time.Second},
		LogLevel:         "info",
		MaxRequestBytes:  64 << 20,
		WorkspaceMarkers: []string{".git"},
		Tools: Tools{SafeBash: SafeBash{
			Shell:          "/bin/bash",
			DefaultTimeout: Duration{120 * time.Second},
			MaxTimeout:     Duration{10 * time.Minute},
		}},
	}
}

// SearchPath is where Load looks, in order; the first file that exists is used,
// alone (files are not merged). XDG_CONFIG_HOME defaults to ~/.config.
func SearchPath() []string {
	var paths []string
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		paths = append(paths, filepath.Join(x, "contextd", "config.toml"))
	} else if h, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(h, ".config", "contextd", "config.toml"))
	}
	return append(paths, "/etc/contextd/config.toml")
}

// Load reads the configuration. With explicit set, that file must exist; otherwise
// the first file of SearchPath that exists is read, and none at all means defaults.
func Load(explicit string) (*Config, error) {
	if explicit != "" {
		return LoadFile(explicit)
	}
	for _, p := range SearchPath() {
		if _, err := os.Stat(p); err == nil {
			return LoadFile(p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("config %s: %w: %v", p, catalog.ErrConfig, err)
		}
	}
	return Default(), nil
}

// LoadFile reads one file on top of the defaults.
func LoadFile(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w: %v", path, catalog.ErrConfig, err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Source = path
	return c, nil
}

// Parse decodes TOML on top of the defaults. Unknown keys are errors, so a typo does
// not silently leave a default in force.
func Parse(b []byte) (*Config, error) {
	c := Default()
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", catalog.ErrConfig, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%w: unknown key(s) %s", catalog.ErrConfig, strings.Join(keys, ", "))
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", catalog.ErrConfig, err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if _, err := c.SlogLevel(); err != nil {
		return err
	}
	if c.MaxRequestBytes < 1<<20 {
		return fmt.Errorf("max_request_bytes = %d: must be at least 1048576 (1 MiB)", c.MaxRequestBytes)
	}
	sb := c.Tools.SafeBash
	if !filepath.IsAbs(sb.Shell) {
		return fmt.Errorf("tools.safe_bash.shell = %q: must be an absolute path", sb.Shell)
	}
	if sb.DefaultTimeout.Duration <= 0 || sb.MaxTimeout.Duration <= 0 {
		return errors.New("tools.safe_bash timeouts must be positive")
	}
	if sb.DefaultTimeout.Duration > sb.MaxTimeout.Duration {
		return fmt.Errorf("tools.safe_bash.default_timeout (%s) is above max_timeout (%s)", sb.DefaultTimeout, sb.MaxTimeout)
	}
	for _, m := range c.WorkspaceMarkers {
		if m == "" || strings.ContainsRune(m, '/') {
			return fmt.Errorf("workspace_markers: %q must be a plain file name", m)
		}
	}
	return nil
}

// SlogLevel maps log_level to a slog level.
func (c *Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return 0, fmt.Errorf("log_level = %q: use debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}
