package tools

import (
	"os"
	"path/filepath"
)

// protectedPaths are workspace paths that every tool call sees read-only, because
// something on the host later runs what they contain, outside any sandbox:
//   - .claude holds the agent's own tools (.claude/tools/<tool>/<tool>, the
//     symlinks to contextd-proxy that the agent executes) and its settings
//     (permissions, hooks);
//   - .mcp.json (Claude Code), .codex/config.toml (Codex CLI), .gemini/
//     settings.json (Gemini CLI), opencode.json(c) and .opencode/ (OpenCode:
//     its plugins are code it loads) name the MCP servers and hooks the
//     agent starts on the host; contextd-proxy install writes them, and an
//     installed project is marked trusted;
//   - git's entries (hooks, config, and their submodule and worktree
//     counterparts) are listed apart, by gitProtected (protect_git.go).
//
// A call that could rewrite them would have its payload run unsandboxed on the
// next agent call or git command.
var protectedPaths = []string{
	".claude", ".mcp.json",
	".codex", ".gemini", "opencode.json", "opencode.jsonc", ".opencode",
}

// Protected is protected, for contextd sandbox show.
func Protected(root string) []string { return protected(root) }

// protected returns the protected paths of the workspace root that exist and are
// not symlinks, for the sandbox's read-only binds. (A symlink cannot be protected
// this way: the link itself lives in the writable workspace. Paths that do not
// exist yet are not protected either; docs/sandbox.md says so.)
func protected(root string) []string {
	var out []string
	add := func(p string) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			out = append(out, p)
		}
	}
	for _, d := range protectedPaths {
		add(filepath.Join(root, d))
	}
	ro, _ := gitProtected(root)
	return append(out, ro...)
}
