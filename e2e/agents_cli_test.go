//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The real Codex CLI, Gemini CLI and OpenCode (npm, at the versions
// e2e/codexjs, e2e/geminijs and e2e/opencodejs pin) against projects wired by
// `contextd-proxy install`: each CLI's own `mcp list` shows contextd
// (connected, where the CLI checks), its configuration shows its built-ins
// off, and uninstall gives every file back. None of them logs in or reaches
// a model: these commands only read configuration and start the MCP server.

// pinnedCLI is one agent CLI installed from its lock file.
type pinnedCLI struct {
	once sync.Once
	dir  string // e2e/<dir>
	bin  string // the executable, relative to the cache
	path string
	err  error
}

var (
	codexCLI    = &pinnedCLI{dir: "codexjs", bin: "node_modules/.bin/codex"}
	geminiCLI   = &pinnedCLI{dir: "geminijs", bin: "node_modules/.bin/gemini"}
	opencodeCLI = &pinnedCLI{dir: "opencodejs", bin: "node_modules/opencode-linux-x64/bin/opencode"}
)

// get installs the CLI with `npm ci` into /var/cache/contextd-e2e/<dir>
// (once per lock file) and returns its executable.
func (c *pinnedCLI) get(t *testing.T) string {
	t.Helper()
	c.once.Do(func() {
		cache := filepath.Join("/var/cache/contextd-e2e", c.dir)
		if c.err = os.MkdirAll(cache, 0o755); c.err != nil {
			return
		}
		if c.err = os.Chmod(filepath.Dir(cache), 0o755); c.err != nil {
			return
		}
		for _, name := range []string{"package.json", "package-lock.json"} {
			b, err := os.ReadFile(filepath.Join(env.repo, "e2e", c.dir, name))
			if err != nil {
				c.err = err
				return
			}
			if c.err = os.WriteFile(filepath.Join(cache, name), b, 0o644); c.err != nil {
				return
			}
		}
		if c.err = npmCI(cache); c.err != nil {
			return
		}
		c.path = filepath.Join(cache, c.bin)
		if _, err := os.Stat(c.path); err != nil {
			c.err = err
		}
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.path
}

// cliVars is the environment the CLIs and install run with: the CLIs on
// PATH (in a directory of links, so that install --agent auto finds them by
// name), Codex's home and Gemini's trusted folders in the test's own
// directory, and nothing that phones home.
func cliVars(t *testing.T, name string, bins ...string) []string {
	t.Helper()
	state := filepath.Join(env.home, name+"-state")
	mustCode(t, userSh(t, "rm -rf ~/"+name+"-state && mkdir -p ~/"+name+"-state/bin ~/"+name+"-state/codex"), 0)
	t.Cleanup(func() { userSh(t, "rm -rf ~/"+name+"-state") })
	for _, b := range bins {
		link := filepath.Join(state, "bin", strings.TrimSuffix(filepath.Base(b), ".exe"))
		mustCode(t, userSh(t, "ln -s "+agentQ(b)+" "+agentQ(link)), 0)
	}
	return []string{
		"PATH=" + filepath.Join(state, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"CODEX_HOME=" + filepath.Join(state, "codex"),
		"GEMINI_CLI_TRUSTED_FOLDERS_PATH=" + filepath.Join(state, "gemini-trusted.json"),
		"GEMINI_TELEMETRY_ENABLED=false", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"NO_COLOR=1",
	}
}

// stateFiles is the state directory's files install may write (Codex's
// config.toml, Gemini's trusted folders).
func stateFiles(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"codex/config.toml", "gemini-trusted.json"} {
		if b, err := os.ReadFile(filepath.Join(env.home, name+"-state", p)); err == nil {
			out[p] = string(b)
		}
	}
	return out
}

func lineWith(out, sub string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestAgentCodexCLI: install --agent codex in a project with the user's own
// .codex/config.toml; `codex mcp list` shows contextd (it does not connect);
// `codex debug prompt-input` (what the model would get) has no shell and
// contextd's namespace with the instructions its server gave in the MCP
// handshake; uninstall.
func TestAgentCodexCLI(t *testing.T) {
	codex := codexCLI.get(t)
	vars := cliVars(t, "codex", codex)
	proj := agentProject(t, "proj-codex", map[string]string{
		".codex/config.toml": "# the team's Codex settings\n[mcp_servers.docs]\ncommand = \"docs-mcp\"   # keep\n",
		"AGENTS.md":          "# Agents\n\nRun the tests.\n",
	})
	proxy := filepath.Join(env.bin, "contextd-proxy")
	before, beforeState := agentTree(t, proj), stateFiles(t, "codex")

	r := runAs(t, proj, vars, "", "codex", "--version")
	mustCode(t, r, 0)
	mustContain(t, "codex --version", r.stdout, "0.169.0")
	// Before install, the model would get a shell.
	r = runAs(t, proj, vars, "", "codex", "debug", "prompt-input")
	mustCode(t, r, 0)
	mustContain(t, "codex debug prompt-input before install", r.stdout, "exec_command")

	// --yes: the project's own settings are the user's (install asks).
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "codex", "--yes")
	mustCode(t, r, 0)
	mustContain(t, "install's report", r.stdout, "set sandbox_mode = \"read-only\"", "added features", "added mcp_servers.contextd", "trusted this project")

	r = runAs(t, proj, vars, "", "codex", "mcp", "list")
	mustCode(t, r, 0)
	line := lineWith(r.stdout, "contextd")
	if !strings.Contains(line, proxy) || !strings.Contains(line, "enabled") {
		t.Fatalf("codex mcp list does not show contextd:\n%s", r)
	}
	t.Logf("codex mcp list: %q", line)
	r = runAs(t, proj, vars, "", "codex", "mcp", "list", "--json")
	mustCode(t, r, 0)
	var servers []struct {
		Name      string `json:"name"`
		Enabled   bool   `json:"enabled"`
		Transport struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"transport"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &servers); err != nil {
		t.Fatalf("codex mcp list --json: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
		if s.Name == "contextd" && (!s.Enabled || s.Transport.Command != proxy || strings.Join(s.Transport.Args, " ") != "mcp") {
			t.Errorf("contextd as Codex reads it: %+v", s)
		}
	}
	if strings.Join(names, ",") != "contextd,docs" {
		t.Errorf("servers %v, want contextd and the user's docs", names)
	}
	// The tools the model would get: no shell, no image reader; contextd's
	// tools when Codex reached the server.
	r = runAs(t, proj, vars, "", "codex", "debug", "prompt-input")
	mustCode(t, r, 0)
	for _, tool := range []string{"exec_command", "write_stdin", "view_image"} {
		if strings.Contains(r.stdout, "`"+tool+"`") || strings.Contains(r.stdout, `"name": "`+tool+`"`) {
			t.Errorf("codex still offers %s after install", tool)
		}
	}
	// Codex started contextd's server and ran the MCP handshake: the
	// namespace it offers carries the server's own instructions.
	mustContain(t, "codex debug prompt-input (contextd's tools, connected)", r.stdout,
		"- mcp__contextd: contextd runs commands and file access in a sandbox")
	mustContain(t, "codex debug prompt-input (sandbox)", r.stdout, "read-only")

	first := agentTree(t, proj)
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "codex")
	mustCode(t, r, 0)
	agentSameTree(t, "second install", agentTree(t, proj), first)

	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
	agentSameTree(t, "Codex's home after uninstall", stateFiles(t, "codex"), beforeState)
}

// TestAgentGeminiCLI: install --agent gemini; `gemini mcp list` connects to
// contextd (install trusted the folder); the built-ins are excluded in the
// settings Gemini reads; uninstall.
func TestAgentGeminiCLI(t *testing.T) {
	gemini := geminiCLI.get(t)
	vars := cliVars(t, "gemini", gemini)
	proj := agentProject(t, "proj-gemini", map[string]string{
		".gemini/settings.json": "{\n  // ours\n  \"general\": {\"vimMode\": true}\n}\n",
	})
	proxy := filepath.Join(env.bin, "contextd-proxy")
	before, beforeState := agentTree(t, proj), stateFiles(t, "gemini")

	r := runAs(t, proj, vars, "", "gemini", "--version")
	mustCode(t, r, 0)
	mustContain(t, "gemini --version", r.stdout, "0.61.0")

	// --yes: the project's own settings are the user's (install asks).
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "gemini", "--yes")
	mustCode(t, r, 0)
	mustContain(t, "install's report", r.stdout, "added mcpServers.contextd", "added run_shell_command to tools.exclude", "trusted this folder")

	r = runAs(t, proj, vars, "", "gemini", "mcp", "list")
	mustCode(t, r, 0)
	line := lineWith(r.String(), "contextd:")
	if !strings.Contains(line, proxy+" mcp") || !strings.Contains(line, "Connected") || strings.Contains(line, "Disconnected") {
		t.Fatalf("gemini mcp list does not show contextd connected:\n%s", r)
	}
	t.Logf("gemini mcp list: %q", line)
	var settings struct {
		Tools struct {
			Exclude []string `json:"exclude"`
		} `json:"tools"`
	}
	// What Gemini reads: comments stripped (install keeps the user's).
	text := readAs(t, proj, ".gemini/settings.json")
	mustContain(t, "settings.json", text, "// ours")
	if err := json.Unmarshal([]byte(strings.Replace(text, "// ours\n", "", 1)), &settings); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"run_shell_command", "write_file", "replace", "read_file", "read_many_files", "grep_search", "glob"} {
		if !strings.Contains(","+strings.Join(settings.Tools.Exclude, ",")+",", ","+tool+",") {
			t.Errorf("tools.exclude lacks %s: %v", tool, settings.Tools.Exclude)
		}
	}

	first := agentTree(t, proj)
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "gemini")
	mustCode(t, r, 0)
	agentSameTree(t, "second install", agentTree(t, proj), first)

	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
	agentSameTree(t, "trusted folders after uninstall", stateFiles(t, "gemini"), beforeState)
}

// TestAgentOpenCodeCLI: install --agent opencode into a JSONC file;
// `opencode mcp list` connects to contextd; `opencode debug agent build`
// shows bash, read, edit, write, grep and glob off; uninstall.
func TestAgentOpenCodeCLI(t *testing.T) {
	opencode := opencodeCLI.get(t)
	vars := cliVars(t, "opencode", opencode)
	proj := agentProject(t, "proj-opencode", map[string]string{
		// With "$schema": OpenCode adds it to a file that lacks it, on any
		// run (1.18), which no uninstall can take back.
		"opencode.jsonc": "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // mine\n  \"permission\": {\"webfetch\": \"ask\",},\n}\n",
	})
	proxy := filepath.Join(env.bin, "contextd-proxy")
	before := agentTree(t, proj)

	r := runAs(t, proj, vars, "", "opencode", "--version")
	mustCode(t, r, 0)
	mustContain(t, "opencode --version", r.stdout, "1.18.33")

	// --yes: the project's own settings are the user's (install asks).
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "opencode", "--yes")
	mustCode(t, r, 0)
	mustContain(t, "install's report", r.stdout, "added mcp.contextd", "added permission.bash", "AGENTS.md")

	r = runAs(t, proj, vars, "", "opencode", "mcp", "list")
	mustCode(t, r, 0)
	line := lineWith(r.String(), "contextd")
	if !strings.Contains(line, "connected") || strings.Contains(line, "failed") {
		t.Fatalf("opencode mcp list does not show contextd connected:\n%s", r)
	}
	t.Logf("opencode mcp list: %q", line)
	r = runAs(t, proj, vars, "", "opencode", "debug", "agent", "build")
	mustCode(t, r, 0)
	var agent struct {
		Tools map[string]bool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &agent); err != nil {
		t.Fatalf("opencode debug agent build: %v\n%s", err, r)
	}
	for _, tool := range []string{"bash", "read", "edit", "write", "grep", "glob"} {
		if on, ok := agent.Tools[tool]; !ok || on {
			t.Errorf("OpenCode's %s is not off: %v", tool, agent.Tools)
		}
	}

	first := agentTree(t, proj)
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "opencode")
	mustCode(t, r, 0)
	agentSameTree(t, "second install", agentTree(t, proj), first)

	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
}

// TestAgentAutoFreshProject: in a fresh project, `contextd-proxy install`
// (auto) wires every agent whose CLI is on PATH; each CLI's mcp list shows
// contextd; `contextd status` lists them with their built-ins off;
// uninstall leaves the project as it was.
func TestAgentAutoFreshProject(t *testing.T) {
	bins := []string{codexCLI.get(t), geminiCLI.get(t), opencodeCLI.get(t)}
	vars := cliVars(t, "auto", bins...)
	proj := agentProject(t, "proj-auto", nil)
	proxy := filepath.Join(env.bin, "contextd-proxy")
	before, beforeState := agentTree(t, proj), stateFiles(t, "auto")

	r := runAs(t, proj, vars, "", proxy, "install")
	mustCode(t, r, 0)
	mustContain(t, "install's report", r.stdout, "--agent auto: wiring codex, gemini, opencode")

	for _, c := range []struct{ cli, want string }{{"codex", "enabled"}, {"gemini", "Connected"}, {"opencode", "connected"}} {
		r = runAs(t, proj, vars, "", c.cli, "mcp", "list")
		mustCode(t, r, 0)
		line := lineWith(r.String(), "contextd")
		if !strings.Contains(line, c.want) {
			t.Errorf("%s mcp list in a fresh project:\n%s", c.cli, r)
		}
		t.Logf("%s mcp list: %q", c.cli, line)
	}
	r = runAs(t, proj, vars, "", filepath.Join(env.bin, "contextd"), "status", "--no-sandbox-check")
	mustContain(t, "contextd status", r.stdout, "codex", "gemini", "opencode", "built-ins off")
	t.Logf("contextd status:\n%s", r.stdout)

	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
	agentSameTree(t, "the CLIs' user files after uninstall", stateFiles(t, "auto"), beforeState)
}
