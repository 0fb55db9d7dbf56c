// Package pluginpolicy is what [plugins] allows a plugin tool: the ceilings its manifest is checked against, at install and at each instance's start, and its egress rules as the proxy reads them.
package pluginpolicy

import (
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/toolmanifest"
)

// Of is the most [plugins] lets a tool's manifest ask for: the
// installer checks a manifest against it, and an instance is started only
// while its approved manifest still fits (the configuration may have
// narrowed since).
func Of(p *config.Plugins) toolmanifest.Policy {
	access := toolmanifest.AccessReadWrite
	switch p.Workspace {
	case "none":
		access = toolmanifest.AccessNone
	case "read-only":
		access = toolmanifest.AccessReadOnly
	}
	return toolmanifest.Policy{
		MaxWorkspace:       access,
		AllowEgress:        p.AllowEgress,
		AllowedCredentials: p.AllowCredentials,
		AllowedReadOnly:    p.AllowReadOnly,
		MaxMemory:          uint64(p.MaxMemory),
		MaxTasks:           p.MaxTasks,
		MaxTimeout:         p.MaxTimeout.Duration,
	}
}

// CompileEgress turns a manifest's egress rules into the proxy's, each
// naming the tool as its source.
func CompileEgress(name string, rules []string) ([]egress.Rule, error) {
	out := make([]egress.Rule, 0, len(rules))
	for _, s := range rules {
		r, err := egress.ParseRule(s, "tool "+name)
		if err != nil {
			return nil, fmt.Errorf("%s: permissions.egress %q: %v: %w", toolmanifest.FileName, s, err, catalog.ErrBadInput)
		}
		out = append(out, r)
	}
	return out, nil
}
