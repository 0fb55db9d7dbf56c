package state

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoSandbox: the state tools run in the daemon on its store; they
// take the tool contract from daemon/toolcall and must not link the host of
// the sandboxed tools (the sandbox, its namespaces, the egress proxy, the
// home view).
func TestLinksNoSandbox(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	const mod = "github.com/contextd/contextd/"
	if !slices.Contains(deps, mod+"daemon/toolcall") || !slices.Contains(deps, mod+"daemon/state") {
		t.Fatalf("go list -deps does not list the package or its contract; the check below would prove nothing:\n%s", out)
	}
	for _, p := range []string{"daemon/tools", "daemon/egress", "daemon/netview", "daemon/runner", "daemon/sandbox",
		"daemon/homeview", "daemon/homemount", "daemon/config", "ns", "seccomp"} {
		if slices.Contains(deps, mod+p) {
			t.Errorf("daemon/state links %s", p)
		}
	}
}
