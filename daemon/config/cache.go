package config

import (
	"fmt"
	"path/filepath"
	"time"
)

// Cache configures the writable layers over the user's toolchain caches
// (Go's module and build caches, npm's, pip's, cargo's, Maven's and
// Gradle's): the sandbox shows each as the read-only lower layer of an
// overlay, and what calls write to it goes to an upper layer kept here, per
// workspace, so that the next call is warm too and the user's own caches
// are never written.
type Cache struct {
	// Enabled keeps the upper layers between calls. Off: each call's writes
	// to the caches go to a throwaway layer, dropped when it ends.
	Enabled bool `toml:"enabled"`
	// Path holds the layers. Empty: $XDG_CACHE_HOME/contextd/layers
	// (~/.cache/contextd/layers). It must be on a file system that can hold
	// an overlay's upper layer in a user namespace (user xattrs: ext4, xfs,
	// btrfs, tmpfs from Linux 6.6; not NFS).
	Path string `toml:"path"`
	// MaxSize bounds one workspace's layers; past it, whole caches are
	// dropped, least recently used first.
	MaxSize Size `toml:"max_size"`
	// MaxAge: a workspace's layers are removed once none was used for this
	// long.
	MaxAge Duration `toml:"max_age"`
}

func defaultCache() Cache {
	return Cache{Enabled: true, MaxSize: 2 << 30, MaxAge: Duration{14 * 24 * time.Hour}}
}

func (c *Cache) validate() error {
	if c.Path != "" && (!filepath.IsAbs(c.Path) || filepath.Clean(c.Path) == "/") {
		return fmt.Errorf("cache.path = %q: must be an absolute path and not /", c.Path)
	}
	if c.MaxSize < 16<<20 {
		return fmt.Errorf("cache.max_size = %d: at least 16MiB", c.MaxSize)
	}
	if c.MaxAge.Duration < time.Hour {
		return fmt.Errorf("cache.max_age = %s: at least 1h (write days in hours: \"336h\" is 14 days)", c.MaxAge)
	}
	return nil
}
