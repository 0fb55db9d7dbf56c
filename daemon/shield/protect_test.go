package shield

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// .git's config and hooks are protected when they exist, and so is a hooks
// directory .git/config points into the workspace; a hooksPath outside the
// workspace is not bound. (Agent configuration: agentcfg_test.go.)
func TestProtected(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".claude/tools", ".codex", ".gemini", ".opencode/plugin", ".git/hooks", ".husky", "src"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{".mcp.json", "opencode.json"} {
		os.WriteFile(filepath.Join(root, f), []byte("{}"), 0o644)
	}
	os.Symlink("/elsewhere", filepath.Join(root, "opencode.jsonc"))
	os.WriteFile(filepath.Join(root, ".git/config"), []byte("[core]\n\tbare = false\n[Core]\n\tHooksPath = \".husky\"\n"), 0o644)
	got := protected(root)
	want := []string{".git/config", ".git/hooks", ".husky"}
	var rel []string
	for _, p := range got {
		r, _ := filepath.Rel(root, p)
		rel = append(rel, r)
	}
	if !slices.Equal(rel, want) {
		t.Errorf("protected %v, want %v", rel, want)
	}
	for _, cfg := range []string{"[core]\n\thooksPath = /usr/share/hooks\n", "[core]\n\thooksPath = ../outside\n", "[alias]\n\thooksPath = src\n"} {
		os.WriteFile(filepath.Join(root, ".git/config"), []byte(cfg), 0o644)
		for _, p := range protected(root) {
			if r, _ := filepath.Rel(root, p); r == "src" || r == ".husky" || r == "../outside" {
				t.Errorf("config %q protects %s", cfg, r)
			}
		}
	}
}
