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
//   - .git/hooks are run by the user's git;
//   - .git/config can name programs git runs (core.fsmonitor, core.hooksPath,
//     core.sshCommand, aliases with "!"), on every `git status` of an editor.
//
// A call that could rewrite them would have its payload run unsandboxed on the
// next agent call or git command.
var protectedPaths = []string{".claude", ".git/config", ".git/hooks"}

// protected returns the protected paths of the workspace root that exist and are
// not symlinks, for the sandbox's read-only binds. (A symlink cannot be protected
// this way: the link itself lives in the writable workspace. Paths that do not
// exist yet are not protected either; docs/sandbox.md says so.)
func protected(root string) []string {
	var out []string
	for _, d := range protectedPaths {
		p := filepath.Join(root, d)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			out = append(out, p)
		}
	}
	return out
}
