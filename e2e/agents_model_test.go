//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The four real agent CLIs, pinned as in agents_cli_test.go, each in a
// project wired by `contextd-proxy install`, run non-interactively against
// the scripted model of modelstub_test.go: the model calls contextd's tools
// through the CLI, the CLI runs them through `contextd-proxy mcp` and the
// daemon, and sends the results back. What the CLI offered the model, and
// what it sent back, are the stub's records. driveCLI runs any script with
// any of modelCLIs.
//
// Approvals are per run (flags and environment) so that what install wrote
// stays as the user gets it; the CLIs' homes and caches live in the test's
// state directory.

// modelLoop is one run's script and what it must produce.
type modelLoop struct {
	token  string // a GitHub token the command prints; it must not reach the model
	marker string // printed before the token
	final  string // the model's last words
	turns  []turnFunc
}

// newModelLoop is a two-turn script: call safe_bash to print a fresh
// GitHub token (assembled by the shell, so the call itself does not hold
// it), then end with final text.
func newModelLoop(t *testing.T) *modelLoop {
	l := &modelLoop{
		token:  "ghp_" + randomFrom(t, alnum, 36),
		marker: "stub-marker-" + randomFrom(t, alnum, 8),
		final:  "stub-final-" + randomFrom(t, alnum, 8),
	}
	cmd := fmt.Sprintf("printf '%%s %%s%%s\\n' %s %s %s", l.marker, l.token[:20], l.token[20:])
	l.turns = []turnFunc{
		func(stubRequest) stubReply { return callTool("safe_bash", map[string]any{"command": cmd}) },
		func(stubRequest) stubReply { return finalText(l.final) },
	}
	return l
}

// check asserts what the stub saw and what the CLI printed: contextd's tools
// offered under prefix, the command's output back with the token redacted,
// the token nowhere in what reached the model, the final text in out.
func (l *modelLoop) check(t *testing.T, c modelCLI, m *modelStub, out string) {
	t.Helper()
	cli, prefix := c.name, c.prefix
	first, ok := m.Turn(0)
	if !ok {
		t.Fatalf("%s never asked the model with tools", cli)
	}
	var ours []string
	for _, n := range append(first.Tools, first.Deferred...) {
		if strings.Contains(n, "contextd") {
			ours = append(ours, n)
		}
	}
	sort.Strings(ours)
	t.Logf("%s named contextd's tools as: %s (%d of them deferred)", cli, strings.Join(ours, " "), len(first.Deferred))
	for _, tool := range []string{"safe_bash", "safe_read", "safe_write", "memory_search", "continue"} {
		if first.NamedBySuffix(tool) != prefix+tool {
			t.Errorf("%s did not offer %s%s: %v, deferred %v", cli, prefix, tool, first.Tools, first.Deferred)
		}
	}
	second, ok := m.Turn(1)
	if !ok {
		t.Fatalf("%s never sent safe_bash's result back", cli)
	}
	res := second.LastResult()
	t.Logf("%s sent back: %q", cli, res)
	mustContain(t, cli+"'s tool result", res, l.marker+" [REDACTED:")
	for _, q := range m.Requests() {
		if strings.Contains(string(q.Body), l.token) {
			t.Errorf("%s sent the token to the model (%s %s)", cli, q.API, q.Path)
		}
	}
	mustContain(t, cli+"'s output", out, l.final)
}

// cliHomePaths are where the CLIs keep state in a home by default.
var cliHomePaths = []string{".claude", ".claude.json", ".codex", ".gemini",
	".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"}

// homeKept fails the test if, at its end, the test user's home has entries
// it did not have at its start, at its top or in the CLIs' usual places.
func homeKept(t *testing.T) {
	list := func() map[string]bool {
		out := map[string]bool{}
		ents, err := os.ReadDir(env.home)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out[e.Name()] = true
		}
		for _, p := range cliHomePaths {
			filepath.WalkDir(filepath.Join(env.home, p), func(path string, _ fs.DirEntry, err error) error {
				if err == nil {
					out[strings.TrimPrefix(path, env.home+"/")] = true
				}
				return nil
			})
		}
		return out
	}
	before := list()
	t.Cleanup(func() {
		for n := range list() {
			if !before[n] {
				t.Errorf("the test left ~/%s in the test user's home", n)
			}
		}
	})
}

// writeAs writes content to path as the test user.
func writeAs(t *testing.T, path, content string) {
	t.Helper()
	mustCode(t, runAs(t, env.home, nil, content, "bash", "-c", "mkdir -p "+agentQ(filepath.Dir(path))+" && cat > "+agentQ(path)), 0)
}

// modelCLI is one agent CLI as the model tests drive it.
type modelCLI struct {
	id     string // the subtest's name, and the start of its directories' names
	name   string // for messages
	agent  string // install's --agent
	prefix string // what the CLI puts before the name of a contextd tool
	bin    func(t *testing.T) string
	// run is the environment and command line of one non-interactive run
	// of prompt against the model at url, with the CLI's state in state.
	// Each approves contextd's tools for the run only.
	run func(t *testing.T, url, state, prompt string) (vars, argv []string)
	// final is the model's last text as the CLI printed it.
	final func(t *testing.T, r result) string
}

// modelCLIs are the four CLIs, each as its own test's subtest.
var modelCLIs = []modelCLI{claudeModel, claudeEagerModel, codexModel, geminiModel, opencodeModel}

// driveCLI installs contextd for cli (`contextd-proxy install --agent`) in a
// fresh project, runs the CLI once against a stub playing turns, uninstalls,
// and returns the stub, the run, and the final text the CLI printed. What
// the CLI leaves in the test user's home is removed; a new entry left in its
// usual places fails the test.
func driveCLI(t *testing.T, cli modelCLI, turns ...turnFunc) (*modelStub, result, string) {
	t.Helper()
	homeKept(t)
	bin := cli.bin(t)
	stub := newModelStub(t, turns...)
	name := cli.id + "-model"
	base := cliVars(t, name, bin)
	state := filepath.Join(env.home, name+"-state")
	base = append(base,
		"XDG_CONFIG_HOME="+state+"/config", "XDG_DATA_HOME="+state+"/data",
		"XDG_CACHE_HOME="+state+"/cache", "XDG_STATE_HOME="+state+"/state",
	)
	extra, argv := cli.run(t, stub.URL(), state, "Run the script.")
	vars := append(base, extra...)
	proj := agentProject(t, "proj-"+name, nil)
	proxy := filepath.Join(env.bin, "contextd-proxy")
	r := runAs(t, proj, vars, "", proxy, "install", "--agent", cli.agent)
	mustCode(t, r, 0)
	t.Cleanup(func() { mustCode(t, runAs(t, proj, vars, "", proxy, "uninstall"), 0) })

	r = runAs(t, proj, vars, "", argv...)
	t.Logf("%s ran in %v; the model stub got:\n%s", cli.name, r.elapsed.Round(time.Millisecond), stub.Summary())
	if r.code != 0 {
		// The CLI's own logs say more than its exit (OpenCode's "Unexpected
		// server error" names only a ref).
		logs := runAs(t, env.home, nil, "", "bash", "-c", "find "+agentQ(state)+" -name '*.log' -exec tail -n 60 {} +")
		t.Logf("%s's logs:\n%s", cli.name, logs.stdout)
	}
	mustCode(t, r, 0)
	return stub, r, cli.final(t, r)
}

// claudeModel: `claude -p` against the stub's Messages API. By default
// Claude Code offers MCP tools only by name, in a prompt, to be loaded
// through its own ToolSearch tool first (the stub does that for a turn
// that calls one).
var claudeModel = modelCLI{
	id: "claude", name: "Claude Code", agent: "claude", prefix: "mcp__contextd__", bin: claudeBin,
	run: func(_ *testing.T, url, state, prompt string) ([]string, []string) {
		return []string{
				"CLAUDE_CONFIG_DIR=" + state + "/claude",
				"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
				"MCP_TIMEOUT=120000",
				"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=dummy",
			},
			[]string{"claude", "-p", prompt, "--output-format", "json", "--allowedTools", "mcp__contextd"}
	},
	final: claudeFinal,
}

// claudeEagerModel is claudeModel with tool search off: every tool offered
// in full from the first request.
var claudeEagerModel = modelCLI{
	id: "claude-eager", name: "Claude Code (tool search off)", agent: "claude", prefix: "mcp__contextd__", bin: claudeBin,
	run: func(t *testing.T, url, state, prompt string) ([]string, []string) {
		vars, argv := claudeModel.run(t, url, state, prompt)
		return append(vars, "ENABLE_TOOL_SEARCH=false"), argv
	},
	final: claudeFinal,
}

// claudeFinal is the result of `claude -p --output-format json`.
func claudeFinal(t *testing.T, r result) string {
	var out struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.IsError {
		t.Errorf("claude's JSON result (%v): %s", err, r)
	}
	return out.Result
}

// codexModel: `codex exec` against the stub's Responses API, as a provider
// of its own. Codex offers each MCP server's tools in a namespace
// (mcp__contextd) and asks before it calls a tool that does not say it only
// reads, which exec cannot: the run approves contextd's tools. The project
// is no git repository (its .git is empty), which exec refuses unless told.
var codexModel = modelCLI{
	id: "codex", name: "Codex", agent: "codex", prefix: "mcp__contextd" + namespaceSep, bin: codexCLI.get,
	run: func(_ *testing.T, url, _, prompt string) ([]string, []string) {
		return []string{"CONTEXTD_STUB_KEY=dummy"},
			[]string{"codex", "exec", "--skip-git-repo-check",
				"-c", "model_provider=stub",
				"-c", "model_providers.stub.name=stub",
				"-c", "model_providers.stub.base_url=" + url + "/v1",
				"-c", "model_providers.stub.env_key=CONTEXTD_STUB_KEY",
				"-c", "model_providers.stub.wire_api=responses",
				"-c", `mcp_servers.contextd.default_tools_approval_mode="approve"`,
				"-m", "stub-model", prompt}
	},
	final: func(_ *testing.T, r result) string { return r.stdout },
}

// geminiModel: `gemini -p` against the stub's generateContent. Gemini CLI
// takes GOOGLE_GEMINI_BASE_URL for its "gateway" sign-in, which its
// non-interactive mode refuses; the API key sign-in, chosen in its user
// settings (in GEMINI_CLI_HOME), takes the same base URL. With no one to
// ask, it offers the model only the tools its policy allows: a policy file
// of the run's allows contextd's.
var geminiModel = modelCLI{
	id: "gemini", name: "Gemini CLI", agent: "gemini", prefix: "mcp_contextd_", bin: geminiCLI.get,
	run: func(t *testing.T, url, state, prompt string) ([]string, []string) {
		writeAs(t, state+"/gemini/.gemini/settings.json", `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n")
		writeAs(t, state+"/contextd-allow.toml", "[[rule]]\nmcpName = \"contextd\"\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 100\n")
		return []string{"GEMINI_CLI_HOME=" + state + "/gemini", "GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=dummy"},
			[]string{"gemini", "-p", prompt, "--policy", state + "/contextd-allow.toml"}
	},
	final: func(_ *testing.T, r result) string { return r.stdout },
}

// opencodeModel: `opencode run` against the stub's Messages API, through a
// provider of the run's own configuration (OPENCODE_CONFIG_CONTENT) on
// OpenCode's bundled Anthropic SDK; no model list is fetched. OpenCode runs
// MCP tools without asking.
var opencodeModel = modelCLI{
	id: "opencode", name: "OpenCode", agent: "opencode", prefix: "contextd_", bin: opencodeCLI.get,
	run: func(t *testing.T, url, _, prompt string) ([]string, []string) {
		cfg, err := json.Marshal(map[string]any{
			"provider": map[string]any{"stub": map[string]any{
				"npm": "@ai-sdk/anthropic", "name": "stub",
				"options": map[string]any{"baseURL": url + "/v1", "apiKey": "dummy"},
				"models":  map[string]any{"stub-model": map[string]any{"name": "stub-model", "tool_call": true}},
			}},
			"model": "stub/stub-model", "small_model": "stub/stub-model",
		})
		if err != nil {
			t.Fatal(err)
		}
		return []string{"OPENCODE_CONFIG_CONTENT=" + string(cfg), "OPENCODE_DISABLE_MODELS_FETCH=1"},
			[]string{"opencode", "run", "-m", "stub/stub-model", prompt}
	},
	final: func(_ *testing.T, r result) string { return r.stdout },
}

// TestModelAgents: each CLI, in a project wired by install, runs a model's
// call of safe_bash printing a GitHub token: it offered contextd's tools,
// the result it sent back has the output with the token redacted, the
// token never reached the model, and it printed the model's last words.
func TestModelAgents(t *testing.T) {
	for _, cli := range modelCLIs {
		t.Run(cli.id, func(t *testing.T) {
			loop := newModelLoop(t)
			stub, _, final := driveCLI(t, cli, loop.turns...)
			loop.check(t, cli, stub, final)
		})
	}
}
