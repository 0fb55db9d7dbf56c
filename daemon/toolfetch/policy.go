// Package toolfetch is the host's side of `contextd tool install | update | remove`: the fetch and the build each in a sandbox of their own, what came out checked as untrusted, the user's approval, and the commit into the tool store and its lock.
package toolfetch

import (
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/toolmanifest"
)

// Policy is the most [plugins] lets any tool's manifest ask for.
func Policy(cfg *config.Plugins) toolmanifest.Policy {
	p := toolmanifest.Policy{
		AllowEgress:        cfg.AllowEgress,
		AllowedCredentials: cfg.AllowCredentials,
		AllowedReadOnly:    cfg.AllowReadOnly,
		MaxMemory:          uint64(cfg.MaxMemory),
		MaxTasks:           cfg.MaxTasks,
		MaxTimeout:         cfg.MaxTimeout.Duration,
	}
	switch cfg.Workspace {
	case "none":
		p.MaxWorkspace = toolmanifest.AccessNone
	case "read-only":
		p.MaxWorkspace = toolmanifest.AccessReadOnly
	default:
		p.MaxWorkspace = toolmanifest.AccessReadWrite
	}
	return p
}

// CompileEgress parses a manifest's egress rules with the egress proxy's
// own parser, which the runtime will use: a rule the manifest's shape check
// let through but the proxy would refuse is refused at install.
func CompileEgress(m *toolmanifest.Manifest) ([]egress.Rule, error) {
	var out []egress.Rule
	for _, r := range m.Permissions.Egress {
		rule, err := egress.ParseRule(r, "tool "+m.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: permissions.egress: %v: %w", toolmanifest.FileName, err, catalog.ErrBadInput)
		}
		out = append(out, rule)
	}
	return out, nil
}
