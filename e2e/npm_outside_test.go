//go:build e2e

package e2e

// npm outside a node project (issue 26): in a Go repository, npm inside
// safe_bash reads the user's ~/.npmrc as it does outside the sandbox.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goWorkspace makes a Go repository of the test user's: go.mod and a .git,
// no package.json anywhere.
func goWorkspace(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(env.home, "gorepo-"+devTag(8))
	top, err := devMkdirAll(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	devPlant(t, filepath.Join(dir, "go.mod"), "module example.com/gorepo\n\ngo 1.21\n", 0o644)
	return dir
}

// TestEgressNpmOutsideNodeProject: the user's ~/.npmrc names a private
// registry (on the host's loopback) with a token. In a workspace with go.mod
// and no package.json, `npm config get registry` inside safe_bash answers
// that registry, `npm view` gets the package from it with the real token put
// back on the wire by the proxy, and the sandbox sees only a placeholder.
// Before, npm inside saw no ~/.npmrc there and went to registry.npmjs.org,
// which the proxy refuses when the user's configuration names another
// registry.
func TestEgressNpmOutsideNodeProject(t *testing.T) {
	token := "npm_" + devTag(36)
	reg := startRegistry(t, token, nil)
	devPlant(t, filepath.Join(env.home, ".npmrc"), fmt.Sprintf("registry=%s\n//127.0.0.1:%d/:_authToken=%s\n", reg.url, reg.port, token), 0o600)
	withConfig(t, "")
	ws := goWorkspace(t)
	marker := "npm-outside-" + devTag(6)
	// What the sandbox sees goes to workspace files the test reads on the
	// host: the call's own output is scrubbed, which would hide a token the
	// sandbox held.
	script := fmt.Sprintf(`test ! -e package.json || exit 9
cp ~/.npmrc seen.npmrc; npm config get registry > seen.registry
npm view %s version # %s`, egressPkg, marker)
	r := bashIn(t, ws, script)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatalf("the sandboxed command left no %s: %v; the call: %s", name, err, r)
		}
		return string(b)
	}
	if got := strings.TrimSpace(read("seen.registry")); got != reg.url {
		t.Errorf("npm config get registry in a workspace without package.json: %q, want the user's %q", got, reg.url)
	}
	if r.code != 0 || strings.TrimSpace(r.stdout) != "1.0.0" {
		t.Fatalf("npm view %s in a workspace without package.json: %s\nregistry saw: %q", egressPkg, r, reg.seen())
	}
	npmrc := read("seen.npmrc")
	if strings.Contains(npmrc, token) || !strings.Contains(npmrc, "_authToken=[REDACTED:") {
		t.Errorf("~/.npmrc inside should hold a placeholder, not the token: %q", npmrc)
	}
	seen := reg.seen()
	if len(seen) == 0 {
		t.Fatal("the user's registry got no request")
	}
	for _, a := range seen {
		if a != "Bearer "+token {
			t.Errorf("the registry got Authorization %q, want the real token", a)
		}
	}
	for _, c := range auditEgress(t, marker) {
		if !c.Allowed {
			t.Errorf("refused: %+v", c)
		}
	}
}
