package toolmanifest

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Permissions lists what the tool asks for, one sentence each, in the
// order install prints them for the user to confirm.
func Permissions(m *Manifest) []string {
	p := m.Permissions
	out := []string{workspaceSentence(p.Workspace)}
	for _, r := range p.ReadOnly {
		out = append(out, readOnlySentence(r))
	}
	if len(p.Egress) == 0 {
		out = append(out, "no network beyond its own loopback")
	}
	for _, r := range p.Egress {
		out = append(out, egressSentence(r))
	}
	for _, c := range p.Credentials {
		out = append(out, credentialSentence(c))
	}
	for _, h := range p.Host {
		out = append(out, hostSentence(h))
	}
	out = append(out, memorySentence(p.Memory), tasksSentence(p.Tasks), timeoutSentence(p.Timeout))
	if m.Build != nil {
		out = append(out, buildSentence(m.Build))
	}
	return out
}

// Widens lists what next asks for that old did not, one sentence each; an
// empty list means the update needs no new confirmation. A read-only path
// under one old already had, or an egress rule old listed, is not new.
func Widens(old, next *Manifest) []string {
	o, n := old.Permissions, next.Permissions
	var out []string
	if n.Workspace > o.Workspace {
		out = append(out, workspaceSentence(n.Workspace))
	}
	for _, r := range n.ReadOnly {
		if !underAny(r, o.ReadOnly) {
			out = append(out, readOnlySentence(r))
		}
	}
	for _, r := range n.Egress {
		if !slices.Contains(o.Egress, r) {
			out = append(out, egressSentence(r))
		}
	}
	for _, c := range n.Credentials {
		if !slices.Contains(o.Credentials, c) {
			out = append(out, credentialSentence(c))
		}
	}
	for _, h := range n.Host {
		if !slices.Contains(o.Host, h) {
			out = append(out, hostSentence(h))
		}
	}
	if n.Memory > o.Memory {
		out = append(out, memorySentence(n.Memory))
	}
	if n.Tasks > o.Tasks {
		out = append(out, tasksSentence(n.Tasks))
	}
	if n.Timeout > o.Timeout {
		out = append(out, timeoutSentence(n.Timeout))
	}
	if next.Build != nil {
		var had []string
		if old.Build != nil {
			had = old.Build.Toolchains
		}
		for _, tc := range next.Build.Toolchains {
			if !slices.Contains(had, tc) {
				out = append(out, fmt.Sprintf("its build may use the %s toolchain's caches and reach its registries", tc))
			}
		}
	}
	return out
}

// underAny reports whether p is one of dirs or below one of them.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		d = path.Clean(d)
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func workspaceSentence(a Access) string {
	switch a {
	case AccessReadOnly:
		return "read the workspace"
	case AccessReadWrite:
		return "read and write the workspace"
	}
	return "no access to the workspace"
}

func readOnlySentence(p string) string { return fmt.Sprintf("read %s", p) }

func egressSentence(r string) string { return fmt.Sprintf("connect to %s", r) }

func credentialSentence(c string) string {
	return fmt.Sprintf("use the credential %s (it sees a placeholder; the egress proxy sends the value)", c)
}

func hostSentence(h string) string {
	switch h {
	case HostMemoryRead:
		return "read the project's memories (and the global ones) during a call"
	case HostMemoryWrite:
		return "store memories in the project, which later sessions' agents read"
	case HostCheckpoints:
		return "save the project's checkpoints and restore them by id"
	}
	return "use the daemon's " + h
}

func memorySentence(n uint64) string { return fmt.Sprintf("use up to %s of memory", sizeText(n)) }

func tasksSentence(n uint64) string { return fmt.Sprintf("run up to %d processes and threads", n) }

func timeoutSentence(d time.Duration) string { return fmt.Sprintf("run up to %s per call", d) }

func buildSentence(b *Build) string {
	if len(b.Toolchains) == 0 {
		return "build once at install, with no network: " + strings.Join(b.Command, " ")
	}
	return fmt.Sprintf("build once at install with the %s toolchains' caches and registries: %s",
		strings.Join(b.Toolchains, ", "), strings.Join(b.Command, " "))
}

// sizeText writes n bytes in the largest binary unit that divides it.
func sizeText(n uint64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
