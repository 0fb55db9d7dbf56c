package config_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The configuration is plain data: it links no feature of contextd (each
// compiles its own section, daemon/configcheck), only the leaves below.
func TestConfigIsALeaf(t *testing.T) {
	const module = "github.com/contextd/contextd/"
	allowed := []string{"daemon/config", "catalog", "mcp/interceptspec", "internal/bytesize"}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var linked []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			linked = append(linked, rel)
			if !slices.Contains(allowed, rel) {
				t.Errorf("daemon/config links %s; it may link only %v", rel, allowed)
			}
		}
	}
	if !slices.Contains(linked, "daemon/config") {
		t.Fatalf("go list -deps did not list daemon/config itself: %q", out)
	}
}
