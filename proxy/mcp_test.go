package proxy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/proxy"
)

// `contextd-proxy mcp` hands over to the MCP binary next to its own, and
// says so when it is missing. (The hand-over itself, an exec, is exercised by
// the e2e suite: here it would replace the test.)
func TestMainMCP(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, _ = filepath.EvalSymlinks(self)
	if _, err := os.Stat(filepath.Join(filepath.Dir(self), proxy.MCPBinary)); err == nil {
		t.Skip("an MCP binary sits next to the test binary; running mcp would exec it")
	}
	tests := []struct {
		argv []string
		code int
		err  string // stderr prefix
		says string // stderr substring
	}{
		{[]string{"contextd-proxy", "mcp"}, 69, "CTXD-E080: ", proxy.MCPBinary + " is missing"},
	}
	for _, tt := range tests {
		r := run(t, "", tt.argv...)
		if r.code != tt.code || !strings.HasPrefix(r.stderr, tt.err) || !strings.Contains(r.stderr, tt.says) || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stderr %q... holding %q", tt.argv, r.code, r.stdout, r.stderr, tt.code, tt.err, tt.says)
		}
	}
}

// The symlinked tools start a process per call: the MCP SDK (about 5 ms of
// package initialisation) stays in MCPBinary, out of contextd-proxy.
func TestProxyDoesNotLinkTheMCPSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/contextd/contextd/cmd/contextd-proxy").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/modelcontextprotocol/") || strings.HasPrefix(p, "github.com/google/jsonschema-go") {
			t.Errorf("contextd-proxy links %s", p)
		}
	}
}
