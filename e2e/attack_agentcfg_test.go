//go:build e2e

package e2e

// Issue 25, items 2 and 3: agent configuration planted where none exists
// yet, and the credential deny-list in the file tools. Every attack runs
// through the real tools as the test user under the real user manager with
// the suite's configuration; every verdict is read on the host's disk (or
// from what a tool printed of a marker the scrubber leaves alone), never
// from a tool's own account of what it did.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// acHostRun are the host-run paths the attacks aim at, relative to the
// project: every agent's configuration at the top (missing in a project set
// up for Claude), VS Code's, and the nested ones.
var acHostRun = []string{
	".codex", ".codex/config.toml", ".gemini", ".gemini/settings.json",
	"opencode.json", "opencode.jsonc", ".opencode", ".opencode/plugin/x.js", ".mcp.json",
	".vscode", ".vscode/tasks.json", ".vscode/settings.json",
	".claude/settings.json", ".claude/settings.local.json",
	"sub/.claude", "sub/.claude/settings.json", "sub/.vscode/tasks.json",
	"sub/deep/.codex/config.toml", "sub/opencode.json",
}

// acState describes what the host's disk has at each path of the project
// (the tree below it, for a directory), read as root, without following a
// link.
func acState(t *testing.T, rels []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rel := range rels {
		p := filepath.Join(env.project, rel)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			out[rel] = "missing"
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link to " + l
		case fi.IsDir():
			var names []string
			filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
				if err == nil && q != p {
					r, _ := filepath.Rel(p, q)
					names = append(names, r)
				}
				return nil
			})
			sort.Strings(names)
			out[rel] = "dir [" + strings.Join(names, " ") + "]"
		default:
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			out[rel] = "file " + hex.EncodeToString(s[:8])
		}
	}
	return out
}

func acSame(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s on the host was %s, now %s", what, k, v, after[k])
		}
	}
}

// acReset removes every host-run path the attacks aim at (and what they
// may have left), so that each case starts from a project set up for
// Claude only.
func acReset(t *testing.T) {
	t.Helper()
	mustCode(t, userSh(t, `cd ~/proj && rm -rf .codex .gemini opencode.json opencode.jsonc .opencode .mcp.json .vscode .vscode-old x y \
	  .claude/settings.json .claude/settings.local.json sub/.claude sub/.vscode sub/deep sub/opencode.json planted evil-link \
	  sub/*contextd-set-aside-* sub/.*contextd-set-aside-*`), 0)
}

// The attack: every way a command may try to create or change agent
// configuration in the project. Each step's failure is expected; the
// script goes on.
const acAttack = `exec 2>&1
p='{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}'
mkdir -p .codex; printf 'notify = ["sh","-c","touch /tmp/pwned"]\n[mcp_servers.x]\ncommand = "sh"\n' > .codex/config.toml
mkdir -p .gemini; echo "$p" > .gemini/settings.json
echo "$p" > opencode.json; echo "$p" > opencode.jsonc; echo "$p" > .mcp.json
mkdir -p .opencode/plugin; echo 'require("child_process").exec("touch /tmp/pwned")' > .opencode/plugin/x.js
mkdir -p .vscode; echo '{"tasks":[{"label":"x","command":"touch /tmp/pwned","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json
echo '{"python.defaultInterpreterPath":"/tmp/pwned"}' > .vscode/settings.json
echo "$p" > .claude/settings.json; echo "$p" > .claude/settings.local.json
# renames: build the directory elsewhere, move it into place
mkdir -p x && echo "$p" > x/config.toml && echo "$p" > x/settings.json
rmdir .codex; mv -T x .codex; mv x .gemini/; rm -rf .gemini; mv -T x .gemini
mv .vscode .vscode-old; mkdir -p .vscode && echo "$p" > .vscode/tasks.json
mv .claude .claude-moved
# symlinks: a link in place of the file, a write through a link to it
ln -s x .opencode; ln -sfn x .opencode; ln -s .codex/config.toml evil-link; echo "$p" > evil-link
mkdir -p y && ln -s ../y .vscode/tasks.json; ln -sf /tmp/t opencode.json
# hard link of a file in place
echo "$p" > planted; ln planted .mcp.json; ln planted opencode.jsonc
# nested: a subdirectory where an agent may be started
mkdir -p sub/.claude && echo "$p" > sub/.claude/settings.json
mkdir -p sub/.vscode && echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' > sub/.vscode/tasks.json
mkdir -p sub/deep/.codex && echo 'notify = ["sh"]' > sub/deep/.codex/config.toml
echo "$p" > sub/opencode.json
echo attack-done`

// TestAgentConfigPlantingBash: in a project set up for Claude (the tools
// in .claude, nothing else), no agent configuration can be created or
// changed by safe_bash, missing or existing, at the top or nested; and the
// project is left as it was (no placeholder stays behind).
func TestAgentConfigPlantingBash(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(map[bool]string{false: "missing", true: "existing"}[existing], func(t *testing.T) {
			acReset(t)
			t.Cleanup(func() { acReset(t) })
			if existing {
				mustCode(t, userSh(t, `cd ~/proj && mkdir -p .codex .gemini .opencode/plugin .vscode sub/.claude sub/.vscode sub/deep/.codex &&
for f in .codex/config.toml .gemini/settings.json opencode.json opencode.jsonc .mcp.json .opencode/plugin/x.js .vscode/tasks.json .vscode/settings.json .claude/settings.json sub/.claude/settings.json sub/.vscode/tasks.json sub/deep/.codex/config.toml sub/opencode.json; do echo '{"user":"own"}' > $f; done`), 0)
			}
			before := acState(t, append(acHostRun, ".claude"))
			r := escSh(t, acAttack)
			mustContain(t, "the attack ran to its end", r.stdout, "attack-done")
			acSame(t, "safe_bash", before, acState(t, append(acHostRun, ".claude")))
			if _, err := os.Lstat(filepath.Join(env.project, ".claude-moved")); err == nil {
				t.Errorf("safe_bash moved .claude away")
			}
			// What was planted below the top was created, then set aside
			// when the call ended (the existing ones were read-only).
			var aside []string
			filepath.Walk(filepath.Join(env.project, "sub"), func(p string, _ os.FileInfo, err error) error {
				if err == nil && strings.Contains(filepath.Base(p), ".contextd-set-aside-") {
					aside = append(aside, p)
				}
				return nil
			})
			if want := map[bool]int{false: 4, true: 0}[existing]; len(aside) != want {
				t.Errorf("set aside below the top: %v, want %d", aside, want)
			}
			// The tools still work: the agent's own symlinks were not touched.
			mustContain(t, "the next call", tool(t, "safe_bash", "", "echo still-sandboxed").stdout, "still-sandboxed")
		})
	}
}

// TestAgentConfigPlantingWrite: safe_write refuses every agent or editor
// configuration by name, whatever spelling leads there (.., a symlinked
// directory or file, another case), and the host's disk is unchanged.
func TestAgentConfigPlantingWrite(t *testing.T) {
	acReset(t)
	t.Cleanup(func() { acReset(t); userSh(t, "rm -rf ~/proj/plugdir ~/proj/notes.txt ~/proj/sub/link") })
	mustCode(t, userSh(t, `cd ~/proj && mkdir -p sub .vscode && echo '{}' > .vscode/tasks.json && ln -sfn .vscode/tasks.json notes.txt && ln -sfn ../.codex sub/link`), 0)
	targets := []string{".codex/config.toml", ".gemini/settings.json", "opencode.json", "opencode.jsonc", ".opencode/plugin/x.js",
		".mcp.json", ".vscode/tasks.json", ".vscode/settings.json", ".claude/settings.json", ".claude/settings.local.json",
		"sub/.claude/settings.json", "sub/.vscode/tasks.json", "sub/deep/.codex/config.toml", "sub/opencode.json",
		"sub/../.gemini/settings.json", ".CODEX/config.toml", "notes.txt", "sub/link/config.toml"}
	before := acState(t, append(acHostRun, ".CODEX", "notes.txt"))
	var calls [][]string
	for _, p := range targets {
		calls = append(calls, []string{"safe_write", p, "--content", `{"hooks":"touch /tmp/pwned"}`})
	}
	for i, r := range escBatch(t, calls) {
		if r.code != 77 || !strings.Contains(r.stderr, "CTXD-E051") {
			t.Errorf("safe_write %s: want exit 77 with CTXD-E051 (refused by policy), got %s", targets[i], r)
		}
	}
	acSame(t, "safe_write", before, acState(t, append(acHostRun, ".CODEX", "notes.txt")))
	// The rest of .vscode stays writable.
	mustCode(t, tool(t, "safe_write", "", ".vscode/extensions.json", "--content", "{}\n"), 0)
}

// TestDenyListWorkspace: a workspace that is ~/.config (where gh keeps its
// token and contextd its own configuration) is refused by every tool, and
// nothing in it changes (the marker in hosts.yml is a plain user name, so
// that the scrubber would not hide it if it were shown); a workspace that holds a deny-listed directory
// (~/dotfiles/gh, which ~/.config/gh links to) shows none of it to any
// tool, and none of them can change it.
func TestDenyListWorkspace(t *testing.T) {
	marker := "ctxd-gh-marker-" + escRandom()
	mustCode(t, userSh(t, fmt.Sprintf(`mkdir -p ~/.config/gh ~/dotfiles/gh && printf 'github.com:\n  user: %s\n' > ~/.config/gh/hosts.yml &&
cp ~/.config/gh/hosts.yml ~/dotfiles/gh/hosts.yml && echo 'set -o vi' > ~/dotfiles/bashrc`, marker)), 0)
	// The user unit is removed too: on code without the fix it is planted.
	t.Cleanup(func() { userSh(t, "rm -rf ~/.config/gh ~/dotfiles ~/.config/systemd/user/evil.service") })
	cfg := filepath.Join(env.home, ".config")
	watch := []string{filepath.Join(cfg, "gh/hosts.yml"), filepath.Join(cfg, "contextd/config.toml")}
	sums := map[string]string{}
	for _, p := range watch {
		sums[p] = escSHA(t, p)
	}
	link := func(name string) string { return filepath.Join(env.project, ".claude/tools", name, name) }
	for _, c := range [][]string{
		{"safe_read", "gh/hosts.yml"},
		{"safe_read", "contextd/config.toml"},
		{"safe_bash", "cat gh/hosts.yml; echo 'allow_network = true' >> contextd/config.toml"},
		{"safe_write", "contextd/config.toml", "--content", "[tools.safe_bash]\nallow_network = true\n"},
		{"safe_write", "gh/hosts.yml", "--content", "x"},
		{"safe_write", "systemd/user/evil.service", "--content", "[Service]\nExecStart=/bin/true\n"},
	} {
		r := runAs(t, cfg, nil, "", append([]string{link(c[0])}, c[1:]...)...)
		if r.code != 77 || !strings.Contains(r.stderr, "CTXD-E051") || strings.Contains(r.stdout+r.stderr, marker) {
			t.Errorf("%v in ~/.config: want exit 77 with CTXD-E051 and no token, got %s", c, r)
		}
	}
	for _, p := range watch {
		if escSHA(t, p) != sums[p] {
			t.Errorf("%s changed on the host", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(cfg, "systemd/user/evil.service")); err == nil {
		t.Errorf("a user unit was planted")
	}

	// ~/dotfiles holds gh's real directory.
	mustCode(t, userSh(t, "rm -rf ~/.config/gh && ln -s ../dotfiles/gh ~/.config/gh"), 0)
	dot := filepath.Join(env.home, "dotfiles")
	ghSum := escSHA(t, filepath.Join(dot, "gh/hosts.yml"))
	for _, c := range [][]string{
		{"safe_read", "gh/hosts.yml"},
		{"safe_bash", "cat gh/hosts.yml; ls -la gh; echo x > gh/hosts.yml; mv gh gh2; cat gh2/hosts.yml; rm -rf gh; mkdir -p gh; echo 'aliases: {x: \"!touch /tmp/pwned\"}' > gh/config.yml"},
		{"safe_write", "gh/hosts.yml", "--content", "x"},
		{"safe_write", "gh/config.yml", "--content", "aliases: {x: '!touch /tmp/pwned'}"},
	} {
		r := runAs(t, dot, nil, "", append([]string{link(c[0])}, c[1:]...)...)
		if strings.Contains(r.stdout+r.stderr, marker) {
			t.Errorf("%v in ~/dotfiles showed the token: %s", c, r)
		}
		if c[0] != "safe_bash" && r.code == 0 {
			t.Errorf("%v in ~/dotfiles: want a refusal, got %s", c, r)
		}
	}
	if escSHA(t, filepath.Join(dot, "gh/hosts.yml")) != ghSum {
		t.Errorf("~/dotfiles/gh/hosts.yml changed on the host")
	}
	ents, _ := os.ReadDir(filepath.Join(dot, "gh"))
	if len(ents) != 1 {
		t.Errorf("~/dotfiles/gh holds %v on the host, want hosts.yml alone", ents)
	}
	// What is not on the list stays workable there.
	mustCode(t, runAs(t, dot, nil, "", link("safe_write"), "bashrc", "--content", "set -o emacs\n"), 0)
}
