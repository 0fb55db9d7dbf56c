package config

import (
	"fmt"
	"path/filepath"
	"time"
)

// Plugins configures the plugin tools (`contextd tool install`): the most
// any tool's manifest may ask for, how long an idle instance is kept, and
// the bounds of fetching a tool's source. The plugin runtime
// (daemon/plugins) turns the ceilings into toolmanifest.Policy and checks
// them at load.
type Plugins struct {
	// Workspace is the most of the workspace a tool may get: "none",
	// "read-only" or "read-write".
	Workspace string `toml:"workspace"`
	// AllowEgress are the hosts a tool's permissions.egress may name: "*"
	// any, "*.example.com" any subdomain, or a host exactly. Empty: no
	// tool gets the network.
	AllowEgress []string `toml:"allow_egress"`
	// AllowCredentials are the environment variables (of the daemon) a tool
	// may ask for by name; it sees them as placeholders.
	AllowCredentials []string `toml:"allow_credentials"`
	// AllowReadOnly are the host directories a tool's read_only paths must
	// lie in.
	AllowReadOnly []string `toml:"allow_read_only"`
	// MaxMemory, MaxTasks and MaxTimeout bound a tool's limits.
	MaxMemory  Size     `toml:"max_memory"`
	MaxTasks   uint64   `toml:"max_tasks"`
	MaxTimeout Duration `toml:"max_timeout"`
	// IdleStop ends an instance (its whole sandbox) after this long without
	// a call; the next call starts a fresh one.
	IdleStop Duration `toml:"idle_stop"`
	// MaxTokens is the response budget of a plugin tool's call.
	MaxTokens int `toml:"max_tokens"`
	// FetchMaxBytes and FetchMaxFiles bound what a tool's source may
	// unpack to; FetchTimeout bounds its fetch, BuildTimeout its build.
	FetchMaxBytes Size     `toml:"fetch_max_bytes"`
	FetchMaxFiles int      `toml:"fetch_max_files"`
	FetchTimeout  Duration `toml:"fetch_timeout"`
	BuildTimeout  Duration `toml:"build_timeout"`
}

func defaultPlugins() Plugins {
	return Plugins{
		Workspace:        "read-write",
		AllowEgress:      []string{},
		AllowCredentials: []string{},
		AllowReadOnly:    []string{},
		MaxMemory:        1 << 30,
		MaxTasks:         512,
		MaxTimeout:       Duration{10 * time.Minute},
		IdleStop:         Duration{5 * time.Minute},
		MaxTokens:        DefaultMaxTokens,
		FetchMaxBytes:    256 << 20,
		FetchMaxFiles:    20000,
		FetchTimeout:     Duration{5 * time.Minute},
		BuildTimeout:     Duration{15 * time.Minute},
	}
}

func (p *Plugins) validate() error {
	switch p.Workspace {
	case "none", "read-only", "read-write":
	default:
		return fmt.Errorf("plugins.workspace = %q: must be \"none\", \"read-only\" or \"read-write\"", p.Workspace)
	}
	for _, d := range p.AllowReadOnly {
		if !filepath.IsAbs(d) || filepath.Clean(d) == "/" {
			return fmt.Errorf("plugins.allow_read_only: %q must be an absolute path and not /", d)
		}
	}
	switch {
	case p.MaxMemory < 16<<20:
		return fmt.Errorf("plugins.max_memory = %d: at least 16MiB", p.MaxMemory)
	case p.MaxTasks < 8:
		return fmt.Errorf("plugins.max_tasks = %d: at least 8", p.MaxTasks)
	case p.MaxTimeout.Duration < time.Second:
		return fmt.Errorf("plugins.max_timeout = %s: at least 1s", p.MaxTimeout)
	case p.IdleStop.Duration < time.Second:
		return fmt.Errorf("plugins.idle_stop = %s: at least 1s", p.IdleStop)
	case p.MaxTokens < 100:
		return fmt.Errorf("plugins.max_tokens = %d: must be at least 100", p.MaxTokens)
	case p.FetchMaxBytes < 1<<20:
		return fmt.Errorf("plugins.fetch_max_bytes = %d: at least 1MiB", p.FetchMaxBytes)
	case p.FetchMaxFiles < 1:
		return fmt.Errorf("plugins.fetch_max_files = %d: at least 1", p.FetchMaxFiles)
	case p.FetchTimeout.Duration < time.Second:
		return fmt.Errorf("plugins.fetch_timeout = %s: at least 1s", p.FetchTimeout)
	case p.BuildTimeout.Duration < time.Second:
		return fmt.Errorf("plugins.build_timeout = %s: at least 1s", p.BuildTimeout)
	}
	return nil
}
