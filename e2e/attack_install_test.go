//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Attacks on `contextd-proxy install` and `uninstall` from inside a project:
// an agent (or a command it ran in the sandbox) plants agent configuration
// where none was, and links out of the project, before the user's next
// install. What counts is on the host: marker files a planted command would
// create when the real agent CLI starts it, the files outside the project
// (bytes and mtime), and the user's Codex and Gemini trust files.

// victim is a file of the test user's outside the project.
type victim struct {
	path  string
	data  string
	mtime time.Time
}

func plantVictim(t *testing.T, path, data string) *victim {
	t.Helper()
	script := "cat > " + agentQ(path) + " && touch -d '2020-01-02 03:04:05' " + agentQ(path)
	mustCode(t, runAs(t, env.home, nil, data, "bash", "-c", script), 0)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return &victim{path: path, data: data, mtime: fi.ModTime()}
}

func (v *victim) check(t *testing.T, when string) {
	t.Helper()
	fi, err := os.Lstat(v.path)
	if err != nil {
		t.Fatalf("%s: %s: %v", when, v.path, err)
	}
	b, _ := os.ReadFile(v.path)
	if string(b) != v.data || !fi.ModTime().Equal(v.mtime) {
		t.Errorf("%s: %s outside the project was written (mtime %s):\n%s", when, v.path, fi.ModTime(), b)
	}
}

func noMarker(t *testing.T, when string, markers ...string) {
	t.Helper()
	for _, m := range markers {
		if _, err := os.Lstat(m); err == nil {
			t.Errorf("%s: %s exists: a planted command ran on the host", when, m)
		}
	}
}

// TestAttackInstallPlantedConfig: in a project set up for Claude, the agent
// plants Codex and Gemini CLI configuration whose MCP servers would create a
// marker, and OpenCode's; the user's next `install` (default --agent auto, no
// terminal) refuses naming --yes, trusts nothing, and the real CLIs, started
// in the project, never run the planted servers. Only the user's --yes
// adopts them: then they do run (the control that shows the markers work).
func TestAttackInstallPlantedConfig(t *testing.T) {
	codex, gemini, opencode := codexCLI.get(t), geminiCLI.get(t), opencodeCLI.get(t)
	vars := cliVars(t, "attack", codex, gemini, opencode)
	state := filepath.Join(env.home, "attack-state")
	// The record of what the user accepted, in this test's own directory.
	vars = append(vars, "XDG_STATE_HOME="+filepath.Join(state, "xdg"))
	proxy := filepath.Join(env.bin, "contextd-proxy")
	proj := agentProject(t, "proj-attack", map[string]string{"CLAUDE.md": "# Project\n"})
	r := runAs(t, proj, vars, "", proxy, "install", "--agent", "claude")
	mustCode(t, r, 0)

	codexMarker := filepath.Join(state, "marker-codex")
	geminiMarker := filepath.Join(state, "marker-gemini")
	plant := map[string]string{
		".codex/config.toml": "notify = [\"sh\", \"-c\", \"touch " + filepath.Join(state, "marker-notify") + "\"]\n" +
			"[mcp_servers.helper]\ncommand = \"sh\"\nargs = [\"-c\", \"touch " + codexMarker + "\"]\n",
		".gemini/settings.json": `{"mcpServers": {"helper": {"command": "sh", "args": ["-c", "touch ` + geminiMarker + `"]}}}` + "\n",
		"opencode.json":         `{"mcp": {"helper": {"type": "local", "command": ["sh", "-c", "true"]}}}` + "\n",
	}
	for p, c := range plant {
		full := filepath.Join(proj, p)
		mustCode(t, runAs(t, proj, nil, c, "bash", "-c", "mkdir -p "+agentQ(filepath.Dir(full))+" && cat > "+agentQ(full)), 0)
	}
	before := agentTree(t, proj)
	beforeState := stateFiles(t, "attack")

	// No terminal, no --yes: refused, nothing written, nothing trusted.
	r = runAs(t, proj, vars, "", proxy, "install")
	if r.code == 0 {
		t.Fatalf("install adopted the planted configuration:\n%s", r)
	}
	mustContain(t, "install's refusal", r.String(), "--yes", "mcp_servers.helper", "notify", "mcpServers.helper", "mcp.helper")
	agentSameTree(t, "the project after the refusal", agentTree(t, proj), before)
	agentSameTree(t, "the trust files after the refusal", stateFiles(t, "attack"), beforeState)

	// The user starts the agents: the planted servers stay off (Codex
	// starts a trusted project's MCP servers for prompt-input, Gemini CLI
	// connects to them for mcp list).
	runAs(t, proj, vars, "", "codex", "debug", "prompt-input")
	runAs(t, proj, vars, "", "gemini", "mcp", "list")
	noMarker(t, "after the refusal", codexMarker, geminiMarker)

	// The control: with the user's consent the same configuration is
	// adopted and trusted, and the CLIs do start it.
	r = runAs(t, proj, vars, "", proxy, "install", "--yes")
	mustCode(t, r, 0)
	mustContain(t, "install --yes", r.stdout, "trusted this project", "trusted this folder")
	runAs(t, proj, vars, "", "codex", "debug", "prompt-input")
	runAs(t, proj, vars, "", "gemini", "mcp", "list")
	for _, m := range []string{codexMarker, geminiMarker} {
		if _, err := os.Lstat(m); err != nil {
			t.Errorf("control: %s was not created after install --yes; the markers prove nothing", m)
		}
	}
	// A re-run asks nothing: the files are as the user accepted them.
	r = runAs(t, proj, vars, "", proxy, "install")
	mustCode(t, r, 0)
	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
}

// TestAttackInstallSymlinksOut: links planted in the project to the user's
// files (AGENTS.md -> ~/.bashrc, .contextd-agent.json ->
// ~/.ssh/authorized_keys, .codex -> a directory of the user's): neither
// install nor uninstall writes outside the project (bytes and mtime of the
// files there unchanged).
func TestAttackInstallSymlinksOut(t *testing.T) {
	codex := codexCLI.get(t)
	vars := cliVars(t, "attacklink", codex)
	state := filepath.Join(env.home, "attacklink-state")
	vars = append(vars, "XDG_STATE_HOME="+filepath.Join(state, "xdg"))
	proxy := filepath.Join(env.bin, "contextd-proxy")
	proj := agentProject(t, "proj-attacklink", map[string]string{"CLAUDE.md": "# Project\n"})

	bashrc := plantVictim(t, filepath.Join(state, "bashrc"), "export PATH=$HOME/bin:$PATH\n")
	keys := plantVictim(t, filepath.Join(state, "authorized_keys"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2e2e user@host\n")
	mustCode(t, userSh(t, "mkdir -p "+agentQ(filepath.Join(state, "dotcodex"))), 0)
	cfg := plantVictim(t, filepath.Join(state, "dotcodex", "config.toml"), "model = \"o3\"\n")
	links := map[string]string{"AGENTS.md": bashrc.path, ".contextd-agent.json": keys.path, ".codex": filepath.Dir(cfg.path)}
	for l, target := range links {
		mustCode(t, userSh(t, "ln -s "+agentQ(target)+" "+agentQ(filepath.Join(proj, l))), 0)
	}
	checkAll := func(when string) {
		t.Helper()
		for _, v := range []*victim{bashrc, keys, cfg} {
			v.check(t, when)
		}
	}
	for _, args := range [][]string{{"install"}, {"install", "--yes"}, {"install", "--agent", "codex", "--yes"}, {"uninstall"}} {
		r := runAs(t, proj, vars, "", append([]string{proxy}, args...)...)
		if r.code == 0 && args[0] == "install" {
			t.Errorf("%v succeeded with links out of the project:\n%s", args, r)
		}
		if args[0] == "install" && !strings.Contains(r.stderr, "leads out of the project") {
			t.Errorf("%v: the refusal does not say a link leads out of the project:\n%s", args, r)
		}
		checkAll(strings.Join(args, " "))
	}
	if s := stateFiles(t, "attacklink")["codex/config.toml"]; strings.Contains(s, proj) {
		t.Errorf("the project was trusted:\n%s", s)
	}

	// A real install, then the agent swaps AGENTS.md (holding contextd's
	// section) for a link to a copy of it outside: uninstall leaves the copy.
	for l := range links {
		mustCode(t, userSh(t, "rm "+agentQ(filepath.Join(proj, l))), 0)
	}
	r := runAs(t, proj, vars, "", proxy, "install", "--agent", "codex")
	mustCode(t, r, 0)
	copyOut := plantVictim(t, filepath.Join(state, "agents-copy"), readAs(t, proj, "AGENTS.md"))
	mustCode(t, userSh(t, "rm "+agentQ(filepath.Join(proj, "AGENTS.md"))+" && ln -s "+agentQ(copyOut.path)+" "+agentQ(filepath.Join(proj, "AGENTS.md"))), 0)
	r = runAs(t, proj, vars, "", proxy, "uninstall")
	if r.code == 0 {
		t.Errorf("uninstall succeeded through AGENTS.md -> %s:\n%s", copyOut.path, r)
	}
	copyOut.check(t, "uninstall")
	checkAll("uninstall")
}
