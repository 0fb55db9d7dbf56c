package agentfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only a manifest of ours, in the project itself, that says so, says the
// MCP server is registered; anything else says no, without an error.
func TestMCPRegistered(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "m.json"), []byte(`{"kind":"contextd-agent","mcp":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant func(root string) error
		want  bool
	}{
		{"registered", func(r string) error { return write(r, `{"version":1,"kind":"contextd-agent","mcp":true}`) }, true},
		{"not registered", func(r string) error { return write(r, `{"version":1,"kind":"contextd-agent"}`) }, false},
		{"missing", func(string) error { return nil }, false},
		{"not ours", func(r string) error { return write(r, `{"kind":"other","mcp":true}`) }, false},
		{"damaged", func(r string) error { return write(r, `{"kind":"contextd-agent","mcp":tr`) }, false},
		{"too large", func(r string) error {
			return write(r, `{"kind":"contextd-agent","mcp":true,"pad":"`+strings.Repeat("x", maxManifest)+`"}`)
		}, false},
		{"a link out of the project", func(r string) error {
			return os.Symlink(filepath.Join(outside, "m.json"), filepath.Join(r, ManifestName))
		}, false},
		{"a directory", func(r string) error { return os.Mkdir(filepath.Join(r, ManifestName), 0o755) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := tc.plant(root); err != nil {
				t.Fatal(err)
			}
			if got := MCPRegistered(root); got != tc.want {
				t.Errorf("MCPRegistered = %v, want %v", got, tc.want)
			}
		})
	}
}

func write(root, content string) error {
	return os.WriteFile(filepath.Join(root, ManifestName), []byte(content), 0o644)
}
