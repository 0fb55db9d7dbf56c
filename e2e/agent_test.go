//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// The agent integration, as the test user in projects of its own:
// `contextd-proxy install --agent claude` merging into the user's files,
// the tools it installs, the PreToolUse hook, uninstall; then the real Claude
// Code client (npm @anthropic-ai/claude-code at the version e2e/claudejs pins)
// reporting contextd's MCP server as connected.

// agentProject makes ~/NAME as the test user, a git project holding files
// (path -> content), and returns its path.
func agentProject(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(env.home, name)
	mustCode(t, userSh(t, "rm -rf ~/"+name+" && mkdir -p ~/"+name+"/.git"), 0)
	for p, content := range files {
		full := filepath.Join(dir, p)
		script := fmt.Sprintf("mkdir -p %s && cat > %s", agentQ(filepath.Dir(full)), agentQ(full))
		mustCode(t, runAs(t, env.home, nil, content, "bash", "-c", script), 0)
	}
	t.Cleanup(func() { userSh(t, "rm -rf ~/"+name) })
	return dir
}

func agentQ(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// agentTree is every path under dir with its content or symlink target.
func agentTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[r] = "-> " + tgt
		case fi.IsDir():
			out[r] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[r] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func agentSameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		for p, w := range want {
			if got[p] != w {
				t.Errorf("%s: %s is\n%s\nwant\n%s", what, p, got[p], w)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: %s is left over", what, p)
			}
		}
	}
}

// The user's own files, in their own formatting.
var agentUserFiles = map[string]string{
	".mcp.json":             "{\n    \"mcpServers\": {\n        \"github\": {\n            \"command\": \"npx\",\n            \"args\": [\"-y\", \"@modelcontextprotocol/server-github\"]\n        }\n    }\n}\n",
	".claude/settings.json": "{\n  \"permissions\": {\"allow\": [\"Bash(make:*)\"]},\n  \"hooks\": {\n    \"PostToolUse\": [{\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", \"command\": \"gofmt -l .\"}]}]\n  }\n}\n",
	"CLAUDE.md":             "# The project\n\nAlways run `make test` before you say you are done.\n",
}

func hookPayload(cwd, tool string, input any) string {
	b, _ := json.Marshal(struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Cwd            string `json:"cwd"`
		PermissionMode string `json:"permission_mode"`
		HookEventName  string `json:"hook_event_name"`
		ToolName       string `json:"tool_name"`
		ToolInput      any    `json:"tool_input"`
		ToolUseID      string `json:"tool_use_id"`
	}{"e2e-session", "/tmp/e2e.jsonl", cwd, "default", "PreToolUse", tool, input, "toolu_e2e"})
	return string(b)
}

// TestAgentInstallClaude: install for Claude Code twice (the second run
// changes nothing), a tool through its symlink, the hook's answers, and
// uninstall giving back the user's files byte for byte.
func TestAgentInstallClaude(t *testing.T) {
	proj := agentProject(t, "proj-agent", agentUserFiles)
	before := agentTree(t, proj)
	proxy := filepath.Join(env.bin, "contextd-proxy")

	r := runAs(t, proj, nil, "", proxy, "install", "--agent", "claude")
	mustCode(t, r, 0)
	mustContain(t, "install's report", r.stdout, "added mcpServers.contextd", "added a hooks.PreToolUse hook", "appended the contextd section", "created 36 files")

	var mcp map[string]map[string]map[string]any
	if err := json.Unmarshal([]byte(readAs(t, proj, ".mcp.json")), &mcp); err != nil {
		t.Fatal(err)
	}
	if mcp["mcpServers"]["github"] == nil || mcp["mcpServers"]["contextd"]["command"] != proxy {
		t.Errorf(".mcp.json: %v", mcp)
	}
	settings := readAs(t, proj, ".claude/settings.json")
	mustContain(t, "settings.json", settings, `"PostToolUse"`, `"Bash(make:*)"`, `"PreToolUse"`, hookMatcherJSON, `"command": "`+proxy+` hook"`)
	md := readAs(t, proj, "CLAUDE.md")
	if !strings.HasPrefix(md, agentUserFiles["CLAUDE.md"]+"\n<!-- contextd:begin -->") || !strings.HasSuffix(md, "<!-- contextd:end -->\n") {
		t.Errorf("CLAUDE.md:\n%s", md)
	}

	first := agentTree(t, proj)
	r = runAs(t, proj, nil, "", proxy, "install", "--agent", "claude")
	mustCode(t, r, 0)
	agentSameTree(t, "second install", agentTree(t, proj), first)

	// The tools are there and work.
	r = runAs(t, proj, nil, "", filepath.Join(proj, ".claude/tools/safe_bash/safe_bash"), "echo agent $(id -un) in $(basename $PWD)")
	mustCode(t, r, 0)
	mustContain(t, "safe_bash", r.stdout, "agent "+testUser+" in proj-agent")

	// The hook, as Claude Code runs it: in the project, input on stdin.
	r = runAs(t, proj, nil, hookPayload(proj, "Bash", map[string]any{"command": "ls -la", "description": "List files"}), proxy, "hook")
	mustCode(t, r, 2)
	mustContain(t, "the hook's refusal", r.stderr, "Bash", "mcp__contextd__safe_bash")
	if strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "not reachable") {
		t.Errorf("refusal with a running daemon: %q", r.stderr)
	}
	r = runAs(t, proj, nil, hookPayload(proj, "Write", map[string]any{"file_path": proj + "/x", "content": "x"}), proxy, "hook")
	mustCode(t, r, 2)
	mustContain(t, "the hook's refusal of Write", r.stderr, "mcp__contextd__safe_read", "mcp__contextd__safe_write")
	for _, tool := range []string{"mcp__contextd__safe_bash", "mcp__github__create_issue", "Task"} {
		r = runAs(t, proj, nil, hookPayload(proj, tool, map[string]any{"command": "ls"}), proxy, "hook")
		if r.code != 0 || r.stderr != "" || r.stdout != "" {
			t.Errorf("hook for %s: %s", tool, r)
		}
	}
	// A daemon that cannot be reached: the refusal says how to start it.
	r = runAs(t, proj, []string{"CONTEXTD_SOCKET=" + env.runtime + "/contextd/none.sock"}, hookPayload(proj, "Bash", map[string]any{"command": "ls"}), proxy, "hook")
	mustCode(t, r, 2)
	mustContain(t, "refusal without a daemon", r.stderr, "not reachable", "systemctl --user enable --now contextd.socket")
	// Input it cannot read: a non-blocking error.
	r = runAs(t, proj, nil, "not json", proxy, "hook")
	mustCode(t, r, 1)

	r = runAs(t, proj, nil, "", proxy, "uninstall")
	mustCode(t, r, 0)
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
}

// hookMatcherJSON is the matcher install writes, as it appears in the file.
const hookMatcherJSON = `"matcher": "Bash|Read|Write|Edit|MultiEdit|NotebookEdit|Grep|Glob"`

// readAs reads a file of the project (as root: the test only looks).
func readAs(t *testing.T, proj, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(proj, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var claudejs struct {
	once sync.Once
	bin  string // the claude executable, runnable by the test user
	err  error
}

// claudeBin installs e2e/claudejs (Claude Code at the pinned version) with
// `npm ci` into a cache directory the test user can read, once per lock file
// (a stamp records the lock's hash), and returns its claude executable.
func claudeBin(t *testing.T) string {
	t.Helper()
	claudejs.once.Do(func() { claudejs.bin, claudejs.err = installClaudeJS() })
	if claudejs.err != nil {
		t.Fatal(claudejs.err)
	}
	return claudejs.bin
}

// installClaudeJS installs Claude Code at the version e2e/claudejs pins, in a
// cache outside the checkout (its native binary is large, and a clone need
// not fetch it again). Its postinstall puts the binary for this machine in
// place of its placeholder.
func installClaudeJS() (string, error) {
	src := filepath.Join(env.repo, "e2e", "claudejs")
	cache := "/var/cache/contextd-e2e/claudejs"
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(filepath.Dir(cache), 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(cache, name), b, 0o644); err != nil {
			return "", err
		}
	}
	if err := npmCI(cache); err != nil {
		return "", err
	}
	return filepath.Join(cache, "node_modules", ".bin", "claude"), nil
}

// claudeEnv keeps Claude Code from updating itself or sending anything it
// does not need for `claude mcp` (no account is used), and gives a server
// two minutes to connect (the default, 30 s, is short for a cold wrapped
// server on a loaded machine: socket activation, the sandbox, node loading
// it).
func claudeEnv(bin string) []string {
	return []string{
		"PATH=" + filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"MCP_TIMEOUT=120000",
	}
}

// agentUserMCPOffline is the user's .mcp.json of agentUserFiles with a
// server that needs no network: `claude mcp list` may start the project's
// servers, and npx would fetch one from the registry.
const agentUserMCPOffline = "{\n    \"mcpServers\": {\n        \"github\": {\n            \"command\": \"true\",\n            \"args\": [\"github-stub\"]\n        }\n    }\n}\n"

// serverLine is the line of `claude mcp list` about the server name.
func serverLine(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+": ") {
			return line
		}
	}
	return ""
}

// TestAgentClaudeCodeConnects: with the claude CLI on PATH, install registers
// the MCP server in Claude Code's local scope, and the real client, which
// starts `contextd-proxy mcp` and runs the MCP handshake, reports it as
// connected. Uninstall takes the registration back.
func TestAgentClaudeCodeConnects(t *testing.T) {
	claude := claudeBin(t)
	vars := claudeEnv(claude)
	proj := agentProject(t, "proj-claude", map[string]string{".mcp.json": agentUserMCPOffline})
	proxy := filepath.Join(env.bin, "contextd-proxy")
	before := agentTree(t, proj)

	r := runAs(t, proj, vars, "", "claude", "--version")
	mustCode(t, r, 0)
	mustContain(t, "claude --version", r.stdout, "2.1.330")
	// Claude Code keeps local registrations in ~/.claude.json by project path:
	// one left by an earlier run that stopped half-way is not this run's.
	forget := func() { runAs(t, proj, vars, "", "claude", "mcp", "remove", "--scope", "local", "contextd") }
	forget()
	t.Cleanup(forget)

	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "claude")
	mustCode(t, r, 0)
	mustContain(t, "install", r.String(), "claude mcp (local scope)", "registered contextd")

	start := time.Now()
	r = runAs(t, proj, vars, "", "claude", "mcp", "list")
	mustCode(t, r, 0)
	line := serverLine(r.stdout, "contextd")
	if !strings.Contains(line, proxy+" mcp") || !strings.Contains(line, "Connected") || strings.Contains(line, "Failed") {
		t.Fatalf("claude mcp list does not report contextd as connected:\n%s", r)
	}
	t.Logf("claude mcp list: %q in %v", line, time.Since(start).Round(time.Millisecond))
	r = runAs(t, proj, vars, "", "claude", "mcp", "get", "contextd")
	mustCode(t, r, 0)
	mustContain(t, "claude mcp get", r.stdout, "Local config", "Connected")

	// A second install sees the registration and leaves it.
	r = runAs(t, proj, vars, "", proxy, "install", "--agent", "claude")
	mustCode(t, r, 0)
	mustContain(t, "second install", r.String(), "claude mcp (local scope)     unchanged")

	r = runAs(t, proj, vars, "", proxy, "uninstall")
	mustCode(t, r, 0)
	mustContain(t, "uninstall", r.String(), "removed contextd")
	r = runAs(t, proj, vars, "", "claude", "mcp", "list")
	if line := serverLine(r.stdout, "contextd"); line != "" {
		t.Errorf("contextd is still registered after uninstall: %s", line)
	}
	agentSameTree(t, "after uninstall", agentTree(t, proj), before)
}
