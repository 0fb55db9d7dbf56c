package workspace

import (
	"fmt"
	"path"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// HostRun is a path in a project that a program on the host reads and acts
// on by itself, outside any sandbox: an agent's or an editor's own
// configuration. A sandboxed call that could write one would have its
// payload run on the host the next time that program starts there (or at
// once, for the ones it watches).
type HostRun struct {
	// Path is slash-separated, relative to a directory of the workspace:
	// the root for the sandbox's placeholders and read-only binds, any
	// directory for safe_write's refusal by name.
	Path string
	// Dir: the entry is a directory, and all of it is host-run.
	Dir bool
	Why string
}

// hostRun is the list, reviewed in one place. Instructions read by an agent
// (CLAUDE.md, AGENTS.md, GEMINI.md) are not on it: they are text a model
// reads, not something the host executes, and agents edit them as work.
// The rest of .vscode (extensions.json, launch.json, snippets) stays
// writable too: VS Code runs nothing of it unless the user asks.
var hostRun = []HostRun{
	// Claude Code: settings*.json hold hooks (shell commands run on every
	// tool use) and permissions; tools/ holds the symlinks the agent
	// executes; agents/ and commands/ are loaded as its own behaviour.
	{".claude", true, "Claude Code's settings (hooks, permissions) and tools, run on the host"},
	// Claude Code starts the MCP servers named here (after one approval).
	{".mcp.json", false, "the MCP servers Claude Code starts on the host"},
	// Codex CLI: config.toml's notify command and [mcp_servers] run on the
	// host; `contextd-proxy install` trusts the project for it.
	{".codex", true, "Codex CLI's configuration (notify commands, MCP servers), run on the host"},
	// Gemini CLI: settings.json's mcpServers and hooks run on the host.
	{".gemini", true, "Gemini CLI's settings (MCP servers, hooks), run on the host"},
	// OpenCode: MCP servers, plugins and commands named in its project file.
	{"opencode.json", false, "OpenCode's configuration (MCP servers, plugins), run on the host"},
	{"opencode.jsonc", false, "OpenCode's configuration (MCP servers, plugins), run on the host"},
	// OpenCode loads .opencode/plugin/*.js as code in its own process.
	{".opencode", true, "OpenCode's plugins and agents, loaded on the host"},
	// VS Code runs a task with "runOptions": {"runOn": "folderOpen"} when
	// the folder is opened, without asking once the workspace is trusted.
	{".vscode/tasks.json", false, "VS Code tasks (runOn folderOpen runs them when the folder opens)"},
	// VS Code's extensions run the executables its settings name
	// (interpreters, linters, terminal profiles, git.path) as soon as they
	// change; which keys do cannot be told from the file, so all of it.
	{".vscode/settings.json", false, "VS Code settings, some of which name executables its extensions run"},
}

// HostRunPaths returns the list (a copy), for the sandbox's placeholders
// and `contextd sandbox show`.
func HostRunPaths() []HostRun { return append([]HostRun(nil), hostRun...) }

// HostRunAt says which entry rel (slash-separated, relative to the root,
// clean) is or lies in, at any depth: sub/.claude/settings.json is Claude
// Code's configuration for an agent started in sub. Names are compared
// without case, so that a case-insensitive directory (ext4 casefold, a
// mounted vfat) cannot let .CODEX/config.toml name .codex/config.toml.
func HostRunAt(rel string) (HostRun, bool) {
	comps := strings.Split(path.Clean(strings.Trim(rel, "/")), "/")
	for _, h := range hostRun {
		want := strings.Split(h.Path, "/")
		for i := 0; i+len(want) <= len(comps); i++ {
			match := true
			for j, w := range want {
				if !strings.EqualFold(comps[i+j], w) {
					match = false
					break
				}
			}
			// A file entry is the file itself, not a path through a
			// directory of that name (which nothing reads).
			if match && (h.Dir || i+len(want) == len(comps)) {
				return h, true
			}
		}
	}
	return HostRun{}, false
}

// refuseHostRun is the error for a write to rel (as actually opened,
// shown as display).
func refuseHostRun(display, rel string) error {
	h, ok := HostRunAt(rel)
	if !ok {
		return nil
	}
	how := ""
	if display != rel {
		how = fmt.Sprintf(" (it resolves to %s)", rel)
	}
	return fmt.Errorf("%s%s is configuration a program on the host runs (%s: %s); no sandboxed tool may write it: edit it yourself, outside the agent: %w",
		display, how, h.Path, h.Why, catalog.ErrPolicy)
}
