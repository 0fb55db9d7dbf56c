package config_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

func TestDefaults(t *testing.T) {
	c, err := config.Parse(nil)
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	d := config.Default()
	if !reflect.DeepEqual(c, d) {
		t.Errorf("empty file gives %+v, want the defaults %+v", c, d)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"idle_timeout", d.IdleTimeout.Duration, 10 * time.Minute},
		{"drain_timeout", d.DrainTimeout.Duration, 30 * time.Second},
		{"log_level", d.LogLevel, "info"},
		{"max_request_bytes", d.MaxRequestBytes, 64 << 20},
		{"workspace_markers", d.WorkspaceMarkers, []string{".git"}},
		{"shell", d.Tools.SafeBash.Shell, "/bin/bash"},
		{"default_timeout", d.Tools.SafeBash.DefaultTimeout.Duration, 120 * time.Second},
		{"max_timeout", d.Tools.SafeBash.MaxTimeout.Duration, 10 * time.Minute},
		{"socket", d.Socket, ""},
		{"allowed_uids", len(d.AllowedUIDs), 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if lvl, err := d.SlogLevel(); err != nil || lvl != slog.LevelInfo {
		t.Errorf("SlogLevel = %v, %v", lvl, err)
	}
	// Default returns a fresh value each time: callers may change it.
	d.WorkspaceMarkers[0] = "changed"
	if config.Default().WorkspaceMarkers[0] != ".git" {
		t.Error("Default shares its slices between calls")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		check func(*config.Config) bool
		bad   []string // substrings of the error; nil when valid
	}{
		{"full", `
socket = "/run/x.sock"
idle_timeout = "0s"
drain_timeout = "1m30s"
allowed_uids = [1001, 1002]
log_level = "debug"
max_request_bytes = 2097152
workspace_markers = [".git", "go.mod"]
[tools.safe_bash]
shell = "/bin/sh"
default_timeout = "5s"
max_timeout = "1h"
`, func(c *config.Config) bool {
			return c.Socket == "/run/x.sock" && c.IdleTimeout.Duration == 0 && c.DrainTimeout.Duration == 90*time.Second &&
				reflect.DeepEqual(c.AllowedUIDs, []uint32{1001, 1002}) && c.LogLevel == "debug" &&
				c.MaxRequestBytes == 2<<20 && reflect.DeepEqual(c.WorkspaceMarkers, []string{".git", "go.mod"}) &&
				c.Tools.SafeBash.Shell == "/bin/sh" && c.Tools.SafeBash.DefaultTimeout.Duration == 5*time.Second &&
				c.Tools.SafeBash.MaxTimeout.Duration == time.Hour
		}, nil},
		{"one key keeps the other defaults", `log_level = "warn"`, func(c *config.Config) bool {
			d := config.Default()
			d.LogLevel = "warn"
			return reflect.DeepEqual(c, d)
		}, nil},
		{"default equal to max", "[tools.safe_bash]\ndefault_timeout = \"10m\"", func(c *config.Config) bool {
			return c.Tools.SafeBash.DefaultTimeout == c.Tools.SafeBash.MaxTimeout
		}, nil},

		{"unknown top-level key", `idle_timout = "5m"`, nil, []string{"idle_timout"}},
		{"unknown nested key", "[tools.safe_bash]\ntimeout = \"5s\"", nil, []string{"tools.safe_bash.timeout"}},
		{"unknown table", "[tools.safe_rm]\nx = 1", nil, []string{"tools.safe_rm"}},
		{"bad duration", `idle_timeout = "ten minutes"`, nil, []string{"idle_timeout", "not a duration"}},
		{"duration without unit", `drain_timeout = "30"`, nil, []string{"drain_timeout"}},
		{"negative duration", `drain_timeout = "-1s"`, nil, []string{"drain_timeout", "negative"}},
		{"duration as number", `idle_timeout = 600`, nil, []string{"idle_timeout"}},
		{"nested bad duration", "[tools.safe_bash]\nmax_timeout = \"forever\"", nil, []string{"max_timeout"}},
		{"default above max", "[tools.safe_bash]\ndefault_timeout = \"11m\"", nil, []string{"default_timeout", "max_timeout"}},
		{"max below default", "[tools.safe_bash]\nmax_timeout = \"1m\"", nil, []string{"default_timeout", "max_timeout"}},
		{"zero timeout", "[tools.safe_bash]\ndefault_timeout = \"0s\"", nil, []string{"timeouts must be positive"}},
		{"bad log level", `log_level = "chatty"`, nil, []string{"log_level", "chatty"}},
		{"request too small", `max_request_bytes = 1000`, nil, []string{"max_request_bytes"}},
		{"relative shell", "[tools.safe_bash]\nshell = \"bash\"", nil, []string{"shell", "absolute"}},
		{"marker with slash", `workspace_markers = ["a/b"]`, nil, []string{"workspace_markers"}},
		{"empty marker", `workspace_markers = [""]`, nil, []string{"workspace_markers"}},
		{"negative uid", `allowed_uids = [-1]`, nil, []string{"allowed_uids"}},
		{"wrong type", `log_level = 3`, nil, []string{"log_level"}},
		{"not TOML", `this is not toml`, nil, []string{"line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.toml))
			if tt.bad == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !tt.check(c) {
					t.Errorf("unexpected config %+v", c)
				}
				return
			}
			if !errors.Is(err, catalog.ErrConfig) {
				t.Fatalf("Parse = %+v, %v; want %s", c, err, catalog.ErrConfig.Code)
			}
			if c != nil {
				t.Error("a config came back with the error")
			}
			for _, s := range tt.bad {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

func TestDurationText(t *testing.T) {
	d := config.Duration{Duration: 90 * time.Second}
	b, err := d.MarshalText()
	if err != nil || string(b) != "1m30s" {
		t.Fatalf("MarshalText = %q, %v", b, err)
	}
	var back config.Duration
	if err := back.UnmarshalText(b); err != nil || back != d {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	// The defaults survive an encode/decode through TOML.
	var sb strings.Builder
	if err := toml.NewEncoder(&sb).Encode(config.Default()); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(sb.String()))
	if err != nil {
		t.Fatalf("re-parse of the encoded defaults: %v\n%s", err, sb.String())
	}
	if !reflect.DeepEqual(c, config.Default()) {
		t.Errorf("defaults changed by a round trip:\n%s", sb.String())
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// systemFile is /etc/contextd/config.toml when this machine has one: Load falls back
// to it, so expectations depend on it.
func systemFile() string {
	const p = "/etc/contextd/config.toml"
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func TestLoadSearchOrder(t *testing.T) {
	home := t.TempDir()
	xdg := t.TempDir()
	t.Setenv("HOME", home)

	// Neither file: defaults (or the system file).
	t.Setenv("XDG_CONFIG_HOME", xdg)
	c, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != systemFile() {
		t.Errorf("Source = %q with no user file", c.Source)
	}
	if systemFile() == "" && !reflect.DeepEqual(c, config.Default()) {
		t.Errorf("no file: %+v, want defaults", c)
	}

	// ~/.config is used when XDG_CONFIG_HOME is unset...
	homeFile := filepath.Join(home, ".config", "contextd", "config.toml")
	write(t, homeFile, `log_level = "warn"`)
	t.Setenv("XDG_CONFIG_HOME", "")
	if got := config.SearchPath(); got[0] != homeFile || got[len(got)-1] != "/etc/contextd/config.toml" {
		t.Errorf("SearchPath = %v", got)
	}
	c, err = config.Load("")
	if err != nil || c.Source != homeFile || c.LogLevel != "warn" {
		t.Fatalf("Load = %+v, %v; want %s", c, err, homeFile)
	}

	// ...and ignored when XDG_CONFIG_HOME is set: with no file there, the next in
	// line is the system file, not ~/.config.
	t.Setenv("XDG_CONFIG_HOME", xdg)
	xdgFile := filepath.Join(xdg, "contextd", "config.toml")
	if got := config.SearchPath(); got[0] != xdgFile || len(got) != 2 {
		t.Errorf("SearchPath = %v, want [%s /etc/contextd/config.toml]", got, xdgFile)
	}
	c, err = config.Load("")
	if err != nil || c.Source != systemFile() {
		t.Fatalf("Load with empty XDG_CONFIG_HOME dir = %+v, %v", c, err)
	}

	// The XDG file wins, alone (files are not merged).
	write(t, xdgFile, `drain_timeout = "5s"`)
	c, err = config.Load("")
	if err != nil || c.Source != xdgFile || c.DrainTimeout.Duration != 5*time.Second || c.LogLevel != "info" {
		t.Fatalf("Load = %+v, %v; want %s alone", c, err, xdgFile)
	}

	// An explicit file beats both.
	explicit := filepath.Join(t.TempDir(), "x.toml")
	write(t, explicit, `idle_timeout = "1s"`)
	c, err = config.Load(explicit)
	if err != nil || c.Source != explicit || c.IdleTimeout.Duration != time.Second || c.DrainTimeout.Duration != 30*time.Second {
		t.Fatalf("Load(explicit) = %+v, %v", c, err)
	}

	// A broken file found by the search is an error naming the file and the key,
	// not a silent fall back to defaults.
	write(t, xdgFile, "bogus_key = 1\n")
	_, err = config.Load("")
	if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), xdgFile) || !strings.Contains(err.Error(), "bogus_key") {
		t.Fatalf("broken user file: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
	}{
		{"explicit file missing", filepath.Join(dir, "missing.toml")},
		{"explicit path is a directory", dir},
	}
	for _, tt := range tests {
		_, err := config.Load(tt.path)
		if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s: %v, want %s naming %s", tt.name, err, catalog.ErrConfig.Code, tt.path)
		}
	}
	// A config path that cannot be examined (a file where a directory should be) is
	// reported, not skipped.
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "file"))
	write(t, filepath.Join(dir, "file"), "")
	if _, err := config.Load(""); !errors.Is(err, catalog.ErrConfig) {
		t.Errorf("XDG_CONFIG_HOME is a file: %v", err)
	}
}

// The commented example shipped in packaging/ documents every key at its default:
// it must parse and give exactly the defaults.
func TestExampleConfigIsTheDefaults(t *testing.T) {
	c, err := config.LoadFile("../../packaging/config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	c.Source = ""
	if !reflect.DeepEqual(c, config.Default()) {
		t.Fatalf("packaging/config.example.toml differs from Default():\n got %+v\nwant %+v", c, config.Default())
	}
}

func TestSize(t *testing.T) {
	for in, want := range map[string]config.Size{"1GiB": 1 << 30, "512MiB": 512 << 20, "64M": 64 << 20, "4096": 4096, "2 GB": 2 << 30} {
		var s config.Size
		if err := s.UnmarshalText([]byte(in)); err != nil || s != want {
			t.Errorf("%q: %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1PiB", "-1", "1.5GiB", "99999999999999999999"} {
		var s config.Size
		if err := s.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q accepted as %d", in, s)
		}
	}
}
