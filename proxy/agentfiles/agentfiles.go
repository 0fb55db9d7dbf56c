// Package agentfiles names what `contextd-proxy install` leaves in a project for the hook to find, so that the hook reads it without linking the installer.
package agentfiles

import (
	"encoding/json"
	"io"
	"path/filepath"

	"github.com/contextd/contextd/workspace"
)

// ManifestName is the file at the project root that records what install
// added to the agent's files, so that uninstall takes back exactly that.
const ManifestName = ".contextd-agent.json"

// ManifestKind is the manifest's "kind": a file without it is not ours.
const ManifestKind = "contextd-agent"

// HookMatcher is the PreToolUse matcher install writes: Claude Code's
// built-in tools that contextd replaces.
const HookMatcher = "Bash|Read|Write|Edit|MultiEdit|NotebookEdit|Grep|Glob"

// MCPServerName is the name contextd's MCP face is registered under; Claude
// Code calls its tools mcp__contextd__<tool>.
const MCPServerName = "contextd"

// maxManifest bounds what is read of a manifest: install writes a few kB.
const maxManifest = 1 << 20

// MCPRegistered reports whether the manifest at the project root says that
// install registered contextd's MCP server for Claude Code there (the
// hook's messages then name the mcp__contextd__ tools). A manifest that is
// missing, damaged, not ours, too large, or reached through a link out of
// the project says no.
func MCPRegistered(root string) bool {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	ws, err := workspace.OpenHost(real)
	if err != nil {
		return false
	}
	defer ws.Close()
	f, err := ws.OpenRead(ManifestName)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil || len(b) > maxManifest {
		return false
	}
	var m struct {
		Kind string `json:"kind"`
		MCP  bool   `json:"mcp"`
	}
	return json.Unmarshal(b, &m) == nil && m.Kind == ManifestKind && m.MCP
}
