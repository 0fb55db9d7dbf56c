package shield

import "github.com/contextd/contextd/daemon/gitguard"

// Paths of the workspace that the host runs later, outside any sandbox, are
// kept from calls in two groups, each with its own owner:
//   - git's (config, hooks, the core.hooksPath directory, and their submodule
//     and worktree counterparts): gitProtected, protect_git.go, with the
//     fingerprint of daemon/gitguard as a second line;
//   - the agents' and editors' own configuration (.claude, .mcp.json, .codex,
//     .vscode/tasks.json...): workspace.HostRunPaths, shielded whether it
//     exists or not (shield.go).
//
// A call that could rewrite them would have its payload run unsandboxed on
// the next agent start or git command.

// Protected is protected, for contextd sandbox show.
func Protected(root string) []string { return protected(root) }

// protected returns git's read-only paths of the workspace root, for the
// sandbox's read-only binds.
func protected(root string) []string {
	ro, _ := gitProtected(root, gitguard.Find(root))
	return ro
}
