package install_test

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/install"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/agents")

// agentCase is one merge fixture: testdata/agents/<dir>/before is the
// project (and _home/ the user's Codex home and Gemini trusted-folders file),
// <dir>/<after> what install makes of it.
type agentCase struct {
	dir   string
	agent string
	force bool
	err   error  // install refuses, changing nothing
	after string // golden directory; default "after"
	warn  string // a warning install must give
}

var agentCases = []agentCase{
	{dir: "codex-comments", agent: install.AgentCodex},
	{dir: "codex-crlf", agent: install.AgentCodex},
	{dir: "codex-user-entry", agent: install.AgentCodex, err: catalog.ErrConflict},
	{dir: "codex-user-entry", agent: install.AgentCodex, force: true, after: "after-force"},
	{dir: "codex-sandbox", agent: install.AgentCodex, err: catalog.ErrConflict},
	{dir: "codex-sandbox", agent: install.AgentCodex, force: true, after: "after-force"},
	{dir: "codex-invalid", agent: install.AgentCodex, err: catalog.ErrConflict},
	{dir: "codex-invalid", agent: install.AgentCodex, force: true, err: catalog.ErrConflict},
	{dir: "codex-inline", agent: install.AgentCodex, force: true, err: catalog.ErrConflict},
	{dir: "codex-untrusted", agent: install.AgentCodex, warn: "does not trust this project"},
	{dir: "gemini-comments", agent: install.AgentGemini},
	{dir: "gemini-trailing-comma", agent: install.AgentGemini, err: catalog.ErrConflict},
	{dir: "gemini-user-entry", agent: install.AgentGemini, err: catalog.ErrConflict},
	{dir: "gemini-user-entry", agent: install.AgentGemini, force: true, after: "after-force"},
	{dir: "gemini-exclude-not-array", agent: install.AgentGemini, force: true, err: catalog.ErrConflict},
	{dir: "opencode-jsonc", agent: install.AgentOpenCode},
	{dir: "opencode-user-permission", agent: install.AgentOpenCode, err: catalog.ErrConflict},
	{dir: "opencode-user-permission", agent: install.AgentOpenCode, force: true, after: "after-force"},
	{dir: "opencode-invalid", agent: install.AgentOpenCode, force: true, err: catalog.ErrConflict},
	{dir: "auto-three", agent: install.AgentAuto},
}

// agentEnv is a project and a home for one case.
type agentEnv struct {
	root, home, bin string
	o               install.Options
}

func newAgentEnv(t *testing.T, dir, agent string, force bool) *agentEnv {
	t.Helper()
	root, bin := project(t, nil)
	home := filepath.Join(filepath.Dir(root), "home")
	nobin := filepath.Join(filepath.Dir(root), "nobin")
	for _, d := range []string{home, nobin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := &agentEnv{root: root, home: home, bin: bin}
	src := filepath.Join("testdata", "agents", dir, "before")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, env.place(r), env.fill(string(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	env.o = install.Options{Project: root, Proxy: bin, NoClaudeCLI: true, Agent: agent, Force: force, Yes: true, StateDir: filepath.Join(filepath.Dir(root), "state"),
		CodexHome: filepath.Join(home, "codex"), GeminiTrust: filepath.Join(home, "gemini", "trustedFolders.json"), Path: nobin}
	return env
}

// place maps a fixture path to where it goes: _home/ into the home.
func (e *agentEnv) place(r string) string {
	if rest, ok := strings.CutPrefix(r, "_home/"); ok {
		return filepath.Join(e.home, rest)
	}
	return filepath.Join(e.root, r)
}

func (e *agentEnv) fill(s string) string {
	return strings.NewReplacer("@ROOT@", e.root, "@PROXY@", e.bin, "@HOME@", e.home).Replace(s)
}

func (e *agentEnv) blank(s string) string {
	return strings.NewReplacer(e.bin, "@PROXY@", e.root, "@ROOT@", e.home, "@HOME@").Replace(s)
}

// files is every regular file of the project and the home (by fixture
// path), without the tools install writes for Claude Code and its record.
func (e *agentEnv) files(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for prefix, dir := range map[string]string{"": e.root, "_home/": e.home} {
		for p, v := range snapshot(t, dir) {
			if strings.HasPrefix(v, "dir") || strings.HasPrefix(v, "->") || strings.HasPrefix(p, ".git") ||
				strings.HasPrefix(p, ".claude/tools") || p == install.AgentManifestName {
				continue
			}
			out[prefix+p] = v[strings.IndexByte(v, ' ')+1:]
		}
	}
	return out
}

func (e *agentEnv) all(t *testing.T) map[string]string {
	t.Helper()
	out := snapshot(t, e.root)
	for p, v := range snapshot(t, e.home) {
		out["_home/"+p] = v
	}
	return out
}

// TestAgentMergeFixtures: for each agent, install merges into the user's
// files as the golden files show (comments, layout, line endings and their
// entries kept), refuses invalid files and entries the user wrote (unless
// --force) without changing anything, changes no byte on a second run, and
// uninstall gives every file back byte for byte.
func TestAgentMergeFixtures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range agentCases {
		name := tc.dir
		if tc.force {
			name += "-force"
		}
		t.Run(name, func(t *testing.T) {
			env := newAgentEnv(t, tc.dir, tc.agent, tc.force)
			before := env.all(t)
			rep, err := install.Setup(ctx, env.o)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("install: %v, want %v", err, tc.err)
				}
				sameTree(t, "after a refused install", env.all(t), before)
				return
			}
			if err != nil {
				t.Fatalf("install: %v", err)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(rep.Warnings, "\n"), tc.warn) {
				t.Errorf("no warning %q in %q", tc.warn, rep.Warnings)
			}
			after := tc.after
			if after == "" {
				after = "after"
			}
			golden := filepath.Join("testdata", "agents", tc.dir, after)
			got := env.files(t)
			if *update {
				os.RemoveAll(golden)
				for p, c := range got {
					writeFile(t, filepath.Join(golden, p), env.blank(c))
				}
			}
			want := map[string]string{}
			filepath.WalkDir(golden, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					r, _ := filepath.Rel(golden, p)
					want[r] = env.fill(readFile(t, p))
				}
				return nil
			})
			sameTree(t, "after install (golden "+golden+"; go test -update rewrites it)", got, want)

			first := env.all(t)
			if _, err := install.Setup(ctx, env.o); err != nil {
				t.Fatalf("second install: %v", err)
			}
			sameTree(t, "second install", env.all(t), first)

			u := env.o
			u.Agent, u.Force = "", false
			if _, err := install.Uninstall(ctx, u); err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			sameTree(t, "after uninstall", env.all(t), before)
		})
	}
}

// TestAgentSectionsShort: the instruction sections are read at the start of
// every session; each stays under a token ceiling and says when to use which
// tool.
func TestAgentSectionsShort(t *testing.T) {
	const ceiling = 350
	c := budget.Default()
	if err := c.Load(); err != nil {
		t.Fatal(err)
	}
	root, bin := project(t, nil)
	for _, agent := range []string{install.AgentClaude, install.AgentCodex, install.AgentGemini, install.AgentOpenCode} {
		o := opts(root, bin)
		o.Agent, o.NoTrust = agent, true
		if _, err := install.Setup(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"CLAUDE.md", "AGENTS.md", "GEMINI.md"} {
		s := readFile(t, filepath.Join(root, f))
		if n := c.Count([]byte(s)); n > ceiling {
			t.Errorf("%s: the section is %d tokens, more than %d", f, n, ceiling)
		} else {
			t.Logf("%s: %d tokens", f, n)
		}
		for _, words := range []string{"safe_bash", "safe_read", "safe_write", "continue", "memory_search", "checkpoint_save"} {
			if !strings.Contains(s, words) {
				t.Errorf("%s does not mention %s:\n%s", f, words, s)
			}
		}
	}
}

// --agent auto with nothing found wires Claude Code, as before; a CLI on the
// search path is found.
func TestDetectAgents(t *testing.T) {
	root, _ := project(t, nil)
	bin := t.TempDir()
	got := install.DetectAgents(root, func(string) (string, error) { return "", os.ErrNotExist })
	if strings.Join(got, ",") != install.AgentClaude {
		t.Errorf("nothing found: %v", got)
	}
	writeFile(t, filepath.Join(root, "opencode.json"), "{}")
	writeFile(t, filepath.Join(bin, "gemini"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(bin, "gemini"), 0o755)
	look := func(name string) (string, error) {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if got := strings.Join(install.DetectAgents(root, look), ","); got != "gemini,opencode" {
		t.Errorf("opencode.json and gemini on PATH: %v", got)
	}
}

// TestProjectAgents: status reads each wired agent's files as they are now:
// a built-in switched back on by hand shows.
func TestProjectAgents(t *testing.T) {
	env := newAgentEnv(t, "auto-three", install.AgentAuto, false)
	if _, err := install.Setup(context.Background(), env.o); err != nil {
		t.Fatal(err)
	}
	o := env.o
	o.Agent = install.AgentOpenCode
	if _, err := install.Setup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	root, states, err := install.ProjectAgents(filepath.Join(env.root, ".codex"))
	if err != nil || root != env.root {
		t.Fatalf("root %s, %v", root, err)
	}
	got := map[string]install.AgentState{}
	for _, s := range states {
		got[s.Agent] = s
	}
	for _, a := range []string{"claude", "codex", "gemini", "opencode"} {
		if s := got[a]; !s.MCP || !s.BuiltinsOff {
			t.Errorf("%s: %+v", a, s)
		}
	}
	cfg := filepath.Join(env.root, ".codex", "config.toml")
	writeFile(t, cfg, strings.Replace(readFile(t, cfg), "shell_tool = false", "shell_tool = true", 1))
	_, states, _ = install.ProjectAgents(env.root)
	for _, s := range states {
		if s.Agent == "codex" && (s.BuiltinsOff || !strings.Contains(s.Detail, "shell_tool")) {
			t.Errorf("codex with the shell back on: %+v", s)
		}
	}
}
