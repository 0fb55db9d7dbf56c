package toolmanifest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
)

// Policy is the most the user's configuration lets any tool ask for. It is
// plain data; the configuration fills it in.
type Policy struct {
	MaxWorkspace Access
	// AllowEgress are the hosts a tool's egress rules may name: "*" any,
	// "*.example.com" any subdomain of example.com, or a host exactly. A
	// rule naming "*.sub.example.com" falls under "*.example.com".
	AllowEgress []string
	// AllowedCredentials are the credential names a tool may ask for.
	AllowedCredentials []string
	// AllowedReadOnly are the host directories a tool's read_only paths
	// may lie in (or be).
	AllowedReadOnly []string
	MaxMemory       uint64
	MaxTasks        uint64
	MaxTimeout      time.Duration
}

// DefaultPolicy lets a tool work in the workspace with modest limits, and
// nothing beyond it: no network, no credential, no other host path.
func DefaultPolicy() Policy {
	return Policy{
		MaxWorkspace: AccessReadWrite,
		MaxMemory:    1 << 30,
		MaxTasks:     512,
		MaxTimeout:   10 * time.Minute,
	}
}

// Check refuses a manifest that asks for more than p allows. The error
// wraps catalog.ErrPolicy and names every excess, each with the manifest's
// key, so that one reading shows all the author or the user must change.
func (p Policy) Check(m *Manifest) error {
	mp := m.Permissions
	var excess []string
	if mp.Workspace > p.MaxWorkspace {
		excess = append(excess, fmt.Sprintf("permissions.workspace = %q, at most %q is allowed", mp.Workspace, p.MaxWorkspace))
	}
	for _, r := range mp.ReadOnly {
		if !underAny(r, p.AllowedReadOnly) {
			excess = append(excess, fmt.Sprintf("permissions.read_only %q is in no allowed directory", r))
		}
	}
	for _, r := range mp.Egress {
		if !p.allowsHost(egressHost(r)) {
			excess = append(excess, fmt.Sprintf("permissions.egress %q names a host not allowed", r))
		}
	}
	for _, c := range mp.Credentials {
		if !slices.Contains(p.AllowedCredentials, c) {
			excess = append(excess, fmt.Sprintf("permissions.credentials %q is not allowed", c))
		}
	}
	if mp.Memory > p.MaxMemory {
		excess = append(excess, fmt.Sprintf("permissions.memory %s is above %s", sizeText(mp.Memory), sizeText(p.MaxMemory)))
	}
	if mp.Tasks > p.MaxTasks {
		excess = append(excess, fmt.Sprintf("permissions.tasks %d is above %d", mp.Tasks, p.MaxTasks))
	}
	if mp.Timeout > p.MaxTimeout {
		excess = append(excess, fmt.Sprintf("permissions.timeout %s is above %s", mp.Timeout, p.MaxTimeout))
	}
	if len(excess) == 0 {
		return nil
	}
	return fmt.Errorf("tool %s asks for more than the configuration allows: %s (raise the limits under [plugins] in the configuration, or ask less in %s): %w",
		m.Name, strings.Join(excess, "; "), FileName, catalog.ErrPolicy)
}

// allowsHost reports whether a rule's host, itself possibly a wildcard,
// falls under one of p's patterns.
func (p Policy) allowsHost(host string) bool {
	for _, pat := range p.AllowEgress {
		pat = strings.TrimSuffix(strings.ToLower(pat), ".")
		switch {
		case pat == "*":
			return true
		case strings.HasPrefix(pat, "*."):
			if strings.HasSuffix(host, pat[1:]) && host != pat[1:] {
				return true
			}
		case host == pat:
			return true
		}
	}
	return false
}
