package tools

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// protectedPaths are workspace paths that every tool call sees read-only, because
// something on the host later runs what they contain, outside any sandbox:
//   - .git/hooks are run by the user's git, and so is the directory
//     core.hooksPath names when it lies in the workspace (.husky);
//   - .git/config can name programs git runs (core.fsmonitor, core.hooksPath,
//     core.sshCommand, aliases with "!"), on every `git status` of an editor.
//
// A call that could rewrite them would have its payload run unsandboxed on the
// next git command. The agents' and editors' own configuration (.claude,
// .codex, .vscode/tasks.json...) is workspace.HostRunPaths, shielded whether
// it exists or not (agentcfg.go).
var protectedPaths = []string{
	".git/config", ".git/hooks",
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
	if hp := hooksPath(filepath.Join(root, ".git/config")); hp != "" {
		if !filepath.IsAbs(hp) {
			hp = filepath.Join(root, hp)
		}
		hp = filepath.Clean(hp)
		if hp != root && strings.HasPrefix(hp, root+"/") {
			add(hp)
		}
	}
	return out
}

// hooksPath returns core.hooksPath from a repository's config file, "" when
// it sets none. It reads the plain form git writes (`[core]` then
// `hooksPath = X`, the key case-insensitive); a value it cannot read leaves
// the hooks to .git/hooks, which is protected anyway.
func hooksPath(config string) string {
	f, err := os.Open(config)
	if err != nil {
		return ""
	}
	defer f.Close()
	inCore, val := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inCore = strings.EqualFold(strings.TrimSpace(strings.Trim(line, "[]")), "core")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if inCore && ok && strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			val = strings.Trim(strings.TrimSpace(v), `"`) // the last one wins, as in git
		}
	}
	return val
}
