package plugins

import (
	"fmt"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/plugins/pluginpolicy"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// Health is one installed tool as `contextd status` and `doctor` show it:
// what the lock pins, what it may do, and whether an instance of it could
// start now.
type Health struct {
	Name        string    `json:"name"`
	Version     string    `json:"version,omitempty"`
	Source      string    `json:"source"`
	Resolved    string    `json:"resolved"`
	Checksum    string    `json:"checksum"`
	Installed   time.Time `json:"installed"`
	Permissions []string  `json:"permissions"`
	OK          bool      `json:"ok"`
	// Problem says why an instance would not start: its tree changed since
	// install, its manifest cannot be read, or the configuration narrowed
	// below what it was approved for.
	Problem string `json:"problem,omitempty"`
}

// Inspect checks every installed tool as an instance's start would (its
// tree against the lock's checksum, its approved manifest against
// [plugins]), without starting any.
func Inspect(store toolstore.Store, cfg *config.Config) ([]Health, error) {
	lock, err := store.Load()
	if err != nil {
		return nil, err
	}
	pol := pluginpolicy.Of(&cfg.Plugins)
	var out []Health
	for _, name := range lock.Names() {
		t := lock.Tools[name]
		h := Health{Name: name, Version: t.Version, Source: t.Source, Resolved: t.Resolved, Checksum: t.Checksum, Installed: t.Installed}
		h.Problem = inspectOne(store, pol, t, &h)
		h.OK = h.Problem == ""
		out = append(out, h)
	}
	return out, nil
}

func inspectOne(store toolstore.Store, pol toolmanifest.Policy, t *toolstore.Tool, h *Health) string {
	m, err := store.Approved(t)
	if err != nil {
		return err.Error()
	}
	h.Permissions = toolmanifest.Permissions(m)
	if _, err := pluginpolicy.CompileEgress(t.Name, m.Permissions.Egress); err != nil {
		return err.Error()
	}
	if err := pol.Check(m); err != nil {
		return fmt.Sprintf("approved for more than [plugins] allows now: %v", err)
	}
	if err := store.Verify(t); err != nil {
		return err.Error()
	}
	return ""
}
