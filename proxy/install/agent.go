package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/proxy/agentfiles"
	"github.com/contextd/contextd/proxy/cli"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolstore"
	"github.com/contextd/contextd/workspace"
)

// The agents install knows how to wire.
const (
	AgentAuto     = "auto"
	AgentClaude   = "claude"
	AgentCodex    = "codex"
	AgentGemini   = "gemini"
	AgentOpenCode = "opencode"
	AgentNone     = "none"
)

// agentNames lists the agents --agent takes, for messages.
const agentNames = "auto, claude, codex, gemini, opencode or none"

func knownAgent(a string) bool {
	switch a {
	case AgentAuto, AgentClaude, AgentCodex, AgentGemini, AgentOpenCode, AgentNone:
		return true
	}
	return false
}

// The names install shares with the hook, which reads them without linking
// this package (agentfiles).
const (
	AgentManifestName = agentfiles.ManifestName
	HookMatcher       = agentfiles.HookMatcher
	MCPServerName     = agentfiles.MCPServerName
)

// Options says what Setup and Uninstall do. The zero value of every field is a
// documented default.
type Options struct {
	// Agent is auto, claude, codex, gemini, opencode or none. Default:
	// claude (the command line's default is auto).
	Agent string
	// Project is the project root. Default: the nearest ancestor of the working
	// directory holding .git (as the daemon finds a workspace), else the
	// working directory.
	Project string
	// ToolsDir is where the tool symlinks go (relative to the working
	// directory, or absolute). Default: <project>/.claude/tools.
	ToolsDir string
	// Proxy is the absolute path of contextd-proxy. Required by Setup.
	Proxy string
	// Force replaces a contextd entry the user wrote (in .mcp.json,
	// opencode.json or CLAUDE.md) instead of refusing; uninstall puts the
	// user's entry back.
	Force bool
	// Claude is the claude CLI to register the server with (`claude mcp add
	// --scope local`). Default: "claude" looked up on PATH; nothing is run when
	// it is not there.
	Claude string
	// NoClaudeCLI never runs the claude CLI.
	NoClaudeCLI bool
	// NoTrust leaves the agents' trust settings alone (Codex reads a
	// project's .codex/config.toml, Gemini CLI its .gemini/settings.json,
	// only in a trusted folder); the report then says how to trust it.
	NoTrust bool
	// CodexHome is Codex's home, holding the user's config.toml. Default:
	// $CODEX_HOME, else ~/.codex.
	CodexHome string
	// GeminiTrust is Gemini CLI's trusted-folders file. Default:
	// $GEMINI_CLI_TRUSTED_FOLDERS_PATH, else ~/.gemini/trustedFolders.json.
	GeminiTrust string
	// Path is the search path --agent auto looks for the agents' CLIs in.
	// Default: $PATH.
	Path string
	// Yes adopts configuration contextd did not write (foreign entries, see
	// foreign.go) without asking: the user reviewed it (--yes).
	Yes bool
	// Confirm shows the foreign entries to the user and returns their
	// answer; nil (no terminal) refuses them unless Yes.
	Confirm func(foreign []string) bool
	// StateDir keeps the record of the agent files install wrote, outside
	// any project (a sandboxed agent cannot forge it), and which plugin
	// tools the project enables (toolstore.EnabledName). Default:
	// $XDG_STATE_HOME/contextd, else ~/.local/state/contextd.
	StateDir string
	// Tools are the installed plugin tools the project enables (--tools).
	// Default: every installed one.
	Tools []string
	// NoPlugins enables no plugin tool (--no-plugins).
	NoPlugins bool
	// ToolStore is the tool store plugin tools come from. Default:
	// toolstore.Default().
	ToolStore string
}

// choice is the plugin tools the options enable.
func (o *Options) choice() toolstore.Choice {
	switch {
	case o.NoPlugins:
		return toolstore.Choice{}
	case o.Tools != nil:
		return toolstore.Choice{Tools: slices.Clone(o.Tools)}
	}
	return toolstore.Choice{All: true}
}

func (o *Options) store() (toolstore.Store, error) {
	if o.ToolStore != "" {
		return toolstore.Store{Root: o.ToolStore}, nil
	}
	return toolstore.Default()
}

// enablement is the record of which plugin tools each project enables.
func (o *Options) enablement() (toolstore.Enablement, bool) {
	dir := o.stateDir()
	return toolstore.Enablement{Path: filepath.Join(dir, toolstore.EnabledName)}, dir != ""
}

// plugins reads the plugin tools the project enables from the store.
func (o *Options) plugins(rep *AgentReport) ([]Plugin, error) {
	store, err := o.store()
	if err != nil {
		return nil, err
	}
	plugins, warnings, err := StorePlugins(store, o.choice())
	for _, w := range warnings {
		rep.warn("%s", w)
	}
	return plugins, err
}

// recordChoice records which plugin tools the project enables, for the MCP
// server and the daemon; an unchanged choice writes nothing.
func (o *Options) recordChoice(root string, rep *AgentReport) {
	e, ok := o.enablement()
	if !ok {
		rep.warn("no place outside the project to record which plugin tools it enables (HOME and XDG_STATE_HOME are unset or relative); the MCP server serves every installed one")
		return
	}
	c := o.choice()
	if cur, err := e.Of(root); err == nil && cur.All == c.All && slices.Equal(cur.Tools, slices.Compact(slices.Sorted(slices.Values(c.Tools)))) {
		return
	}
	if err := e.Set(root, c); err != nil {
		rep.warn("could not record which plugin tools the project enables: %v", err)
	}
}

// AgentReport is what Setup or Uninstall did.
type AgentReport struct {
	Root     string   // the project root
	Actions  []Action // paths relative to Root (or absolute outside it)
	Warnings []string // things left alone or that failed without stopping the rest
}

func (r *AgentReport) did(path, what string) { r.Actions = append(r.Actions, Action{path, what}) }
func (r *AgentReport) warn(format string, a ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, a...))
}

// agentManifest is the project-level record. Entries are kept in the order they
// were first made; uninstall undoes them in reverse.
type agentManifest struct {
	Version int      `json:"version"`
	Kind    string   `json:"kind"` // "contextd-agent"
	Proxy   string   `json:"proxy"`
	Agents  []string `json:"agents"`
	// MCP: Claude Code knows contextd's MCP server in this project (the hook
	// then names the mcp__contextd__ tools).
	MCP       bool        `json:"mcp,omitempty"`
	ToolsDirs []string    `json:"tools_dirs,omitempty"`
	JSON      []jsonEntry `json:"json,omitempty"`
	TOML      []tomlEntry `json:"toml,omitempty"`
	Markdown  []mdEntry   `json:"markdown,omitempty"`
	// ClaudeLocal: install ran `claude mcp add --scope local contextd`.
	ClaudeLocal bool `json:"claude_mcp_local,omitempty"`
	// Dirs install created (relative to the root), removed again when empty.
	Dirs []string `json:"dirs_created,omitempty"`
}

// jsonEntry is one thing added to a JSON file: the member at Path, or (Append)
// an element of the array at Path.
type jsonEntry struct {
	File   string          `json:"file"`
	Path   []string        `json:"path"`
	Append bool            `json:"append,omitempty"`
	Value  json.RawMessage `json:"value"`
	// Existed is how many of the containers on the way (Path for an append,
	// Path without its last key for a member) were there before install;
	// uninstall removes the others again when they are left empty.
	Existed     int  `json:"existed"`
	CreatedFile bool `json:"created_file,omitempty"`
	// Replaced is the text of the user's own entry that --force replaced.
	Replaced string `json:"replaced,omitempty"`
	// ByValue: one of several elements install added to the array at Path
	// (Gemini's tools.exclude), told apart by their values.
	ByValue bool `json:"by_value,omitempty"`
}

// mdEntry is the marked section appended to a Markdown file.
type mdEntry struct {
	File        string `json:"file"`
	SHA256      string `json:"sha256"`
	Prefix      string `json:"prefix"` // blank line(s) written before the section
	CreatedFile bool   `json:"created_file,omitempty"`
	Replaced    string `json:"replaced,omitempty"`
}

// FindRoot is the project root for a working directory: the nearest ancestor
// holding .git, else the directory itself.
func FindRoot(cwd string) (string, error) {
	pl, err := workspace.Find(cwd, []string{".git"})
	if err != nil {
		return "", err
	}
	return pl.LogicalRoot, nil
}

func (o *Options) resolve() (root string, err error) {
	switch {
	case o.Agent == "":
		o.Agent = AgentClaude
	case !knownAgent(o.Agent):
		return "", fmt.Errorf("unknown agent %q (%s): %w", o.Agent, agentNames, catalog.ErrUsage)
	}
	if o.Project != "" {
		root, err = filepath.Abs(o.Project)
		if err != nil {
			return "", fmt.Errorf("project %s: %v: %w", o.Project, err, catalog.ErrUsage)
		}
		fi, err := os.Stat(root)
		if err != nil || !fi.IsDir() {
			return "", fmt.Errorf("project %s is not a directory: %w", o.Project, catalog.ErrUsage)
		}
		return root, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %v: %w", err, catalog.ErrIO)
	}
	return FindRoot(cwd)
}

// rel names p relative to root when it lies inside it, else absolutely.
func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return r
	}
	return p
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// Setup wires the project for an agent (for auto, every agent found): for
// Claude Code the tools, the MCP server in .mcp.json, the PreToolUse hook in
// .claude/settings.json and a section of CLAUDE.md; for Codex CLI, Gemini CLI
// and OpenCode the MCP server, their built-in shell and file tools off, and a
// section of AGENTS.md or GEMINI.md (agents_codex.go, agents_gemini.go,
// agents_opencode.go). It plans every edit first: when a file is not valid
// for its format or holds a different contextd entry (without Force), it
// returns an error wrapping ErrConflict and has changed nothing.
func Setup(ctx context.Context, o Options) (*AgentReport, error) {
	if !filepath.IsAbs(o.Proxy) {
		return nil, fmt.Errorf("proxy path %q is not absolute: %w", o.Proxy, catalog.ErrInternal)
	}
	root, err := o.resolve()
	if err != nil {
		return nil, err
	}
	rep := &AgentReport{Root: root}
	agents := []string{o.Agent}
	var byFileOnly map[string]string
	if o.Agent == AgentAuto {
		agents, byFileOnly = detectAgents(root, o.lookPath())
		rep.did(".", "--agent auto: wiring "+strings.Join(agents, ", "))
	}
	m, _, err := loadAgentManifest(root)
	if err != nil {
		return nil, err
	}
	m.Proxy = o.Proxy
	for _, a := range agents {
		if !slices.Contains(m.Agents, a) {
			m.Agents = append(m.Agents, a)
		}
	}
	slices.Sort(m.Agents)
	withTools := slices.Contains(agents, AgentClaude) || slices.Contains(agents, AgentNone)

	// Plan: every file edit in memory, nothing written yet.
	edits, cfg, err := planEdits(root, agents, o, m)
	if err != nil {
		return nil, err
	}
	plugins, err := o.plugins(rep)
	if err != nil {
		return rep, err
	}

	// Configuration contextd did not write is adopted (and the project
	// trusted) only with the user's consent.
	accepted, err := checkForeign(root, o, agents, cfg, byFileOnly)
	if err != nil {
		return rep, err
	}

	// Record first: if anything below fails half-way, uninstall still knows
	// everything that may have been written.
	recordSetup(root, o, m, agents, edits, withTools)
	if err := writeAgentManifest(root, m); err != nil {
		return rep, err
	}

	if err := applyEdits(root, edits, rep); err != nil {
		return rep, err
	}
	if err := recordSeen(root, o, cfg, accepted); err != nil {
		rep.warn("could not record the agents' files install wrote (%v); the next install asks about them again", err)
	}
	o.recordChoice(root, rep)
	var toolErr error
	if withTools {
		td := toolsDir(root, o.ToolsDir)
		trep, err := installTools(root, td, o.Proxy, plugins)
		if trep != nil {
			summarize(rep, root, td, trep.Actions)
		}
		if err != nil && !errors.Is(err, catalog.ErrConflict) {
			return rep, err
		}
		toolErr = err
	}
	if slices.Contains(agents, AgentClaude) && !o.NoClaudeCLI {
		if added, ok := claudeRegister(ctx, o.claudeBin(), root, o.Proxy, m.ClaudeLocal, rep); ok && added != m.ClaudeLocal {
			m.ClaudeLocal = added
			if err := writeAgentManifest(root, m); err != nil {
				return rep, err
			}
		}
	}
	return rep, toolErr
}

// planEdits plans the file edits of every agent, each file once, in the
// order first planned; cfg maps each agent to its own configuration file's
// edit (foreign.go).
func planEdits(root string, agents []string, o Options, m *agentManifest) (edits []*fileEdit, cfg map[string]*fileEdit, err error) {
	planned := map[string]bool{} // a file two agents share (AGENTS.md) is planned once
	cfg = map[string]*fileEdit{}
	for _, a := range agents {
		es, err := planAgent(root, a, o, m)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := agentDirs[a]; ok && len(es) > 0 {
			cfg[a] = es[0]
		}
		for _, e := range es {
			if !planned[e.abs] {
				planned[e.abs] = true
				edits = append(edits, e)
			}
		}
	}
	return edits, cfg, nil
}

// recordSetup records in m every entry the edits make, the tools directory
// when withTools, and each directory that writing them creates.
func recordSetup(root string, o Options, m *agentManifest, agents []string, edits []*fileEdit, withTools bool) {
	for _, e := range edits {
		e.record(m)
	}
	if slices.Contains(agents, AgentClaude) {
		m.MCP = true
	}
	var dirs []string
	if withTools {
		td := toolsDir(root, o.ToolsDir)
		dirs = append(dirs, missingDirs(root, td)...)
		if r := rel(root, td); !slices.Contains(m.ToolsDirs, r) {
			m.ToolsDirs = append(m.ToolsDirs, r)
		}
	}
	for _, e := range edits {
		if !e.changed || e.exists {
			continue
		}
		dir := filepath.Dir(e.abs)
		if _, err := os.Lstat(dir); err != nil && rel(root, dir) == dir {
			// A user-level file's own directory (~/.codex, ~/.gemini), as
			// far as install creates it.
			dirs = append(dirs, dir)
		}
		dirs = append(dirs, missingDirs(root, dir)...)
	}
	for _, d := range dirs {
		if r := rel(root, d); !slices.Contains(m.Dirs, r) {
			m.Dirs = append(m.Dirs, r)
		}
	}
}

// applyEdits writes each edit that changes its file, reporting the actions
// and warnings of all of them.
func applyEdits(root string, edits []*fileEdit, rep *AgentReport) error {
	for _, e := range edits {
		for _, a := range e.actions {
			rep.did(e.rel, a)
		}
		rep.Warnings = append(rep.Warnings, e.warnings...)
		if !e.changed {
			continue
		}
		if err := e.write(root); err != nil {
			return err
		}
	}
	return nil
}

// planAgent plans the file edits for one agent.
func planAgent(root, agent string, o Options, m *agentManifest) ([]*fileEdit, error) {
	switch agent {
	case AgentClaude:
		mcp, err := planMember(root, ".mcp.json", false, []string{"mcpServers", MCPServerName}, claudeMCPValue(o.Proxy), m, o.Force)
		if err != nil {
			return nil, err
		}
		hook, err := planElement(root, filepath.Join(".claude", "settings.json"), []string{"hooks", "PreToolUse"}, claudeHookValue(o.Proxy), m)
		if err != nil {
			return nil, err
		}
		md, err := planSection(root, "CLAUDE.md", claudeSection(rel(root, toolsDir(root, o.ToolsDir))), m, o.Force)
		if err != nil {
			return nil, err
		}
		return []*fileEdit{mcp, hook, md}, nil
	case AgentOpenCode:
		return planOpenCodeAgent(root, o, m)
	case AgentCodex:
		return planCodex(root, o, m)
	case AgentGemini:
		return planGemini(root, o, m)
	}
	return nil, nil
}

func (o *Options) lookPath() func(string) (string, error) {
	path := o.Path
	if path == "" {
		path = os.Getenv("PATH")
	}
	return func(bin string) (string, error) {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				continue
			}
			p := filepath.Join(dir, bin)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return p, nil
			}
		}
		return "", exec.ErrNotFound
	}
}

// DetectAgents is what --agent auto wires in the project at root: every agent
// whose project configuration is there or whose CLI is on PATH; Claude Code
// when none is found.
func DetectAgents(root string, lookPath func(string) (string, error)) []string {
	out, _ := detectAgents(root, lookPath)
	return out
}

// detectAgents is DetectAgents, also naming the agents found only by their
// files in the project (their CLI is not on PATH): an agent in the sandbox
// may have created those, so wiring them needs the user's consent.
func detectAgents(root string, lookPath func(string) (string, error)) (out []string, byFileOnly map[string]string) {
	byFileOnly = map[string]string{}
	found := func(agent, bin string, paths ...string) bool {
		if _, err := lookPath(bin); err == nil {
			return true
		}
		for _, p := range paths {
			if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
				byFileOnly[agent] = p
				return true
			}
		}
		return false
	}
	if found(AgentClaude, "claude", ".claude", ".mcp.json", "CLAUDE.md") {
		out = append(out, AgentClaude)
	}
	if found(AgentCodex, "codex", ".codex") {
		out = append(out, AgentCodex)
	}
	if found(AgentGemini, "gemini", ".gemini", "GEMINI.md") {
		out = append(out, AgentGemini)
	}
	if found(AgentOpenCode, "opencode", "opencode.json", "opencode.jsonc", ".opencode") {
		out = append(out, AgentOpenCode)
	}
	if len(out) == 0 {
		out = []string{AgentClaude}
	}
	return out, byFileOnly
}

// summarize reports the tools directory in one line per kind of action
// (created 36 files), and each file left alone on a line of its own.
func summarize(rep *AgentReport, root, dir string, as []Action) {
	counts := map[string]int{}
	var order []string
	var single []Action
	defer func() {
		for _, a := range single {
			rep.did(rel(root, filepath.Join(dir, a.Path)), a.What)
		}
	}()
	for _, a := range as {
		if strings.HasPrefix(a.What, "kept") || a.What == refusedName || a.Path == "." {
			single = append(single, a)
			continue
		}
		if counts[a.What] == 0 {
			order = append(order, a.What)
		}
		counts[a.What]++
	}
	for _, what := range order {
		if what == "unchanged" && len(order) == 1 {
			rep.did(rel(root, dir), "unchanged")
			continue
		}
		rep.did(rel(root, dir), fmt.Sprintf("%s %d files", what, counts[what]))
	}
}

func toolsDir(root, dir string) string {
	if dir == "" {
		return filepath.Join(root, DefaultDir)
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	if cwd, err := os.Getwd(); err == nil {
		return filepath.Join(cwd, dir)
	}
	return filepath.Join(root, dir)
}

// missingDirs lists the directories from dir up to (not including) root that
// do not exist yet, deepest last; dirs outside root are never listed.
func missingDirs(root, dir string) []string {
	var out []string
	for d := filepath.Clean(dir); d != root && strings.HasPrefix(d, root+"/"); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		out = append([]string{d}, out...)
	}
	return out
}

// Uninstall takes back what Setup recorded in the project's manifest (and, for
// a project installed before the manifest existed, the tools in the default
// directory): each entry only while it is still as install wrote it. Files
// install created are removed when nothing else is left in them. Entries it
// could not undo because a file no longer parses stay in the manifest and make
// the error wrap ErrConflict.
func Uninstall(ctx context.Context, o Options) (*AgentReport, error) {
	o.Agent = AgentNone // not used, but resolve checks it
	root, err := o.resolve()
	if err != nil {
		return nil, err
	}
	rep := &AgentReport{Root: root}
	m, found, err := loadAgentManifest(root)
	if err != nil {
		return nil, err
	}
	if !found {
		td := filepath.Join(root, DefaultDir)
		if _, err := os.Stat(filepath.Join(td, ManifestName)); err != nil {
			rep.did(".", "nothing installed here")
			return rep, nil
		}
		m.ToolsDirs = []string{DefaultDir}
	}
	left := &agentManifest{Version: 1, Kind: m.Kind, Proxy: m.Proxy, Agents: m.Agents}

	// What could not be undone stays recorded, for the next uninstall.
	if m.ClaudeLocal && !o.NoClaudeCLI {
		left.ClaudeLocal = claudeUnregister(ctx, o.claudeBin(), root, m.Proxy, rep)
	} else if m.ClaudeLocal {
		left.ClaudeLocal = true
		rep.warn("contextd is still registered with Claude Code for this project; remove it with: claude mcp remove --scope local %s", MCPServerName)
	}
	outside := o.undoEntries(root, m, left, rep)
	removeToolsDirs(root, m.ToolsDirs, left, rep)
	removeCreatedDirs(root, m.Dirs, outside, left, rep)
	// The hook names contextd's MCP tools while Claude Code may still know
	// the server: its .mcp.json entry or its local registration is left.
	for _, e := range left.JSON {
		left.MCP = left.MCP || m.MCP && e.File == ".mcp.json"
	}
	left.MCP = left.MCP || m.MCP && left.ClaudeLocal
	if err := forgetSeen(root, o); err != nil {
		rep.warn("could not update the record of the agents' files (%v)", err)
	}
	if e, ok := o.enablement(); ok {
		if err := e.Forget(root); err != nil {
			rep.warn("could not update the record of the plugin tools the project enables (%v)", err)
		}
	}
	mp := filepath.Join(root, AgentManifestName)
	if len(left.JSON) > 0 || len(left.TOML) > 0 || len(left.Markdown) > 0 || len(left.ToolsDirs) > 0 {
		if err := writeAgentManifest(root, left); err != nil {
			return rep, err
		}
		return rep, fmt.Errorf("could not undo everything (see the warnings); %s keeps what is left, fix it and run uninstall again: %w", AgentManifestName, catalog.ErrConflict)
	}
	if err := removeIn(root, mp, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("remove %s: %v: %w", mp, err, catalog.ErrIO)
	} else if err == nil {
		rep.did(AgentManifestName, "removed")
	}
	return rep, nil
}

// undoEntries undoes m's Markdown, JSON and TOML entries, each kind newest
// first, keeping in left those it could not or would not undo. It returns
// the files outside the project whose entries it undid.
func (o *Options) undoEntries(root string, m, left *agentManifest, rep *AgentReport) (outside []string) {
	for i := len(m.Markdown) - 1; i >= 0; i-- {
		e := m.Markdown[i]
		if _, in, err := projectPath(root, e.File); err != nil || !in || filepath.IsAbs(e.File) {
			rep.warn("%s: the manifest names a file install never writes; left alone", e.File)
			left.Markdown = append([]mdEntry{e}, left.Markdown...)
			continue
		}
		if err := undoSection(root, e, rep); err != nil {
			rep.warn("%s: %v", e.File, err)
			left.Markdown = append([]mdEntry{e}, left.Markdown...)
		}
	}
	for i := len(m.JSON) - 1; i >= 0; i-- {
		e := m.JSON[i]
		if !o.trustedJSON(root, e) {
			rep.warn("%s: the manifest holds an entry (%s) install never writes there; left alone", e.File, strings.Join(e.Path, "."))
			left.JSON = append([]jsonEntry{e}, left.JSON...)
			continue
		}
		if filepath.IsAbs(e.File) {
			outside = append(outside, e.File)
		}
		if err := undoJSON(root, e, rep); err != nil {
			rep.warn("%s: %v", e.File, err)
			left.JSON = append([]jsonEntry{e}, left.JSON...)
		}
	}
	for i := len(m.TOML) - 1; i >= 0; i-- {
		e := m.TOML[i]
		if !o.trustedTOML(root, e) {
			rep.warn("%s: the manifest holds an entry (%s) install never writes there; left alone", e.File, strings.Join(append(slices.Clone(e.Table), e.Key), "."))
			left.TOML = append([]tomlEntry{e}, left.TOML...)
			continue
		}
		if filepath.IsAbs(e.File) {
			outside = append(outside, e.File)
		}
		if err := undoTOML(root, e, rep); err != nil {
			rep.warn("%s: %v", e.File, err)
			left.TOML = append([]tomlEntry{e}, left.TOML...)
		}
	}
	return outside
}

// removeToolsDirs removes the tools install put in each of tds, keeping in
// left the directories it could not empty of them.
func removeToolsDirs(root string, tds []string, left *agentManifest, rep *AgentReport) {
	for _, td := range tds {
		if !filepath.IsAbs(td) && !filepath.IsLocal(td) {
			// Install records a tools directory inside the project relative
			// to it; one climbing out was forged.
			rep.warn("%s: the manifest names a tools directory outside the project; left alone", td)
			left.ToolsDirs = append(left.ToolsDirs, td)
			continue
		}
		trep, err := removeTools(root, abs(root, td))
		if trep != nil {
			summarize(rep, root, abs(root, td), trep.Actions)
		}
		if err != nil {
			rep.warn("%s: %v", td, err)
			left.ToolsDirs = append(left.ToolsDirs, td)
		}
	}
}

// removeCreatedDirs removes the directories install created, deepest first
// and only when empty: a directory the user put files in stays, recorded in
// left. outside are the files outside the project install wrote to, whose
// directories it may have created too.
func removeCreatedDirs(root string, created, outside []string, left *agentManifest, rep *AgentReport) {
	dirs := slices.Clone(created)
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		if !trustedDir(root, abs(root, d), outside) {
			rep.warn("%s: not a directory install creates; left alone", d)
			continue
		}
		if err := removeIn(root, abs(root, d), true); err == nil {
			rep.did(d, "removed (empty)")
		} else if _, err := os.Lstat(abs(root, d)); err == nil {
			left.Dirs = append(left.Dirs, d)
		}
	}
}

func (o *Options) claudeBin() string {
	if o.Claude != "" {
		return o.Claude
	}
	return "claude"
}

func readAgentManifestFound(root string) (*agentManifest, bool) {
	m, found, _ := loadAgentManifest(root)
	return m, found
}

// loadAgentManifest reads the project's manifest; only a manifest that leads
// out of the project (or cannot be read) is an error.
func loadAgentManifest(root string) (*agentManifest, bool, error) {
	m := &agentManifest{Version: 1, Kind: agentfiles.ManifestKind}
	b, err := readIn(root, AgentManifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	var got agentManifest
	if json.Unmarshal(b, &got) != nil || got.Kind != agentfiles.ManifestKind {
		// A damaged manifest proves nothing was ours.
		return m, false, nil
	}
	return &got, true, nil
}

func readAgentManifest(root string) *agentManifest {
	m, _ := readAgentManifestFound(root)
	return m
}

func writeAgentManifest(root string, m *agentManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %v: %w", AgentManifestName, err, catalog.ErrInternal)
	}
	return writeIn(root, AgentManifestName, append(b, '\n'))
}

// writeAtomic replaces the file at p (through a symlink, at its target) with
// data, keeping its mode; a new file gets 0644.
func writeAtomic(p string, data []byte) error {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(p); err == nil {
		mode = fi.Mode().Perm()
		if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, data) {
			return nil // a re-run leaves the file alone, mtime included
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create %s: %v: %w", filepath.Dir(p), err, catalog.ErrIO)
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".contextd-*")
	if err != nil {
		return fmt.Errorf("write %s: %v: %w", p, err, catalog.ErrIO)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), mode)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), p)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %v: %w", p, werr, catalog.ErrIO)
	}
	return nil
}

// fileEdit is one planned change of one file.
type fileEdit struct {
	rel, abs string
	exists   bool
	orig     []byte
	out      []byte
	changed  bool
	actions  []string
	warnings []string
	record   func(*agentManifest)
}

func (e *fileEdit) write(root string) error { return writeIn(root, e.abs, e.out) }

// jsonDoc is a JSON file being edited; a missing file reads as "{}\n".
type jsonDoc struct {
	rel, abs string
	exists   bool
	jsonc    bool
	src      []byte
	root     *jnode
}

func loadJSON(root, relPath string, jsonc bool) (*jsonDoc, error) {
	d := &jsonDoc{rel: relPath, abs: abs(root, relPath), jsonc: jsonc}
	b, err := readIn(root, relPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b = []byte("{}\n")
	case errors.Is(err, catalog.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file; nothing was changed: %w", relPath, catalog.ErrConflict)
	case err != nil:
		return nil, err
	default:
		d.exists = true
	}
	d.src = b
	if err := d.parse(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *jsonDoc) parse() error {
	n, err := parseJSON(d.src, d.jsonc)
	if err != nil {
		kind := "JSON"
		if d.jsonc {
			kind = "JSON (or JSONC)"
		}
		return fmt.Errorf("%s is not valid %s (%v); fix it, then run install again; nothing was changed: %w", d.rel, kind, err, catalog.ErrConflict)
	}
	if n.kind != '{' {
		return fmt.Errorf("%s does not hold a JSON object at its top level; nothing was changed: %w", d.rel, catalog.ErrConflict)
	}
	d.root = n
	return nil
}

func (d *jsonDoc) set(src []byte) error {
	d.src = src
	return d.parse()
}

func (d *jsonDoc) edit() *fileEdit {
	return &fileEdit{rel: d.rel, abs: d.abs, exists: d.exists}
}

func (d *jsonDoc) finish(e *fileEdit, orig []byte) *fileEdit {
	e.orig, e.out = orig, d.src
	e.changed = !bytes.Equal(orig, d.src)
	return e
}

func findJSONEntry(m *agentManifest, file string, path []string, appendTo bool) *jsonEntry {
	for i := range m.JSON {
		e := &m.JSON[i]
		if e.File == file && slices.Equal(e.Path, path) && e.Append == appendTo && !e.ByValue {
			return e
		}
	}
	return nil
}

// findJSONElem finds the record of the element value install added to the
// array at path.
func findJSONElem(m *agentManifest, file string, path []string, value []byte) *jsonEntry {
	for i := range m.JSON {
		e := &m.JSON[i]
		if e.File == file && slices.Equal(e.Path, path) && e.ByValue && bytes.Equal(compact(e.Value), compact(value)) {
			return e
		}
	}
	return nil
}

func putJSONEntry(m *agentManifest, e jsonEntry) {
	if e.ByValue {
		if p := findJSONElem(m, e.File, e.Path, e.Value); p != nil {
			*p = e
		} else {
			m.JSON = append(m.JSON, e)
		}
		return
	}
	if p := findJSONEntry(m, e.File, e.Path, e.Append); p != nil {
		*p = e
		return
	}
	m.JSON = append(m.JSON, e)
}

// planMember plans the member at path (in the file rel) to hold want.
func planMember(root, relPath string, jsonc bool, path []string, want []byte, m *agentManifest, force bool) (*fileEdit, error) {
	d, err := loadJSON(root, relPath, jsonc)
	if err != nil {
		return nil, err
	}
	e := d.edit()
	orig := d.src
	var records []jsonEntry
	if err := d.member(path, want, findJSONEntry(m, relPath, path, false), force, e, &records); err != nil {
		return nil, err
	}
	e.record = func(m *agentManifest) {
		for _, r := range records {
			putJSONEntry(m, r)
		}
	}
	return d.finish(e, orig), nil
}

// member makes the member at path hold want, appending the manifest entries to
// records and the outcome to e.actions.
func (d *jsonDoc) member(path []string, want []byte, prev *jsonEntry, force bool, e *fileEdit, records *[]jsonEntry) error {
	dotted := strings.Join(path, ".")
	node, k := walk(d.root, path)
	st := styleOf(d.src, d.root)
	entry := jsonEntry{File: d.rel, Path: path, Value: compact(want), Existed: len(path) - 1, CreatedFile: !d.exists}
	if prev != nil {
		entry.Existed, entry.CreatedFile, entry.Replaced = prev.Existed, prev.CreatedFile, prev.Replaced
	}
	if k < len(path) {
		if node.kind != '{' {
			return fmt.Errorf("%s: %s is not a JSON object, so contextd cannot add %s to it; nothing was changed: %w",
				d.rel, orRoot(path[:k]), path[len(path)-1], catalog.ErrConflict)
		}
		if prev == nil {
			entry.Existed = k
		}
		key := path[k]
		if err := d.set(insertItem(d.src, node, &key, nest(path[k+1:], want), st)); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", d.rel, err, catalog.ErrInternal)
		}
		e.actions = append(e.actions, "added "+dotted)
		*records = append(*records, entry)
		return nil
	}
	what := "updated " + dotted
	switch {
	case sameJSON(d.src, node, want):
		if prev != nil {
			*records = append(*records, entry)
			e.actions = append(e.actions, "unchanged ("+dotted+")")
		} else {
			e.actions = append(e.actions, "unchanged ("+dotted+" was already there, left as yours)")
		}
		return nil
	case prev != nil && sameJSON(d.src, node, prev.Value):
		// Ours, written for another proxy path: bring it up to date.
	case force:
		// Uninstall puts back what the user had (the first time only: a
		// second --force must not record our own value as theirs).
		if entry.Replaced == "" {
			entry.Replaced = string(d.src[node.start:node.end])
		}
		what = "replaced " + dotted + " (--force)"
	default:
		return fmt.Errorf("%s already has a %s entry that contextd did not write (%s); leave it, remove it, or run install --force to replace it (uninstall puts yours back); nothing was changed: %w",
			d.rel, dotted, oneLine(d.src[node.start:node.end]), catalog.ErrConflict)
	}
	if err := d.set(replaceValue(d.src, node, renderAt(d.src, node, want, st))); err != nil {
		return fmt.Errorf("%s: editing it went wrong (%v): %w", d.rel, err, catalog.ErrInternal)
	}
	e.actions = append(e.actions, what)
	*records = append(*records, entry)
	return nil
}

// element makes the string value an element of the array at path (added at
// its end when missing), recording it as told apart by its value.
func (d *jsonDoc) element(path []string, value string, m *agentManifest, e *fileEdit, records *[]jsonEntry) error {
	want, _ := marshalNoEscape(value)
	dotted := strings.Join(path, ".")
	prev := findJSONElem(m, d.rel, path, want)
	entry := jsonEntry{File: d.rel, Path: path, Append: true, ByValue: true, Value: want, Existed: len(path), CreatedFile: !d.exists}
	if prev != nil {
		entry.Existed, entry.CreatedFile = prev.Existed, prev.CreatedFile
	}
	st := styleOf(d.src, d.root)
	node, k := walk(d.root, path)
	switch {
	case k < len(path):
		if node.kind != '{' {
			return fmt.Errorf("%s: %s is not a JSON object, so contextd cannot add %s to it; nothing was changed: %w", d.rel, orRoot(path[:k]), dotted, catalog.ErrConflict)
		}
		if prev == nil {
			entry.Existed = k
		}
		key := path[k]
		if err := d.set(insertItem(d.src, node, &key, nest(path[k+1:], append(append([]byte("["), want...), ']')), st)); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", d.rel, err, catalog.ErrInternal)
		}
	case node.kind != '[':
		return fmt.Errorf("%s: %s is not a JSON array, so contextd cannot add %s to it; nothing was changed: %w", d.rel, dotted, value, catalog.ErrConflict)
	default:
		for _, el := range node.elems {
			if sameJSON(d.src, el, want) {
				if prev != nil {
					*records = append(*records, entry)
				}
				return nil
			}
		}
		if err := d.set(insertItem(d.src, node, nil, want, st)); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", d.rel, err, catalog.ErrInternal)
		}
	}
	e.actions = append(e.actions, "added "+value+" to "+dotted)
	*records = append(*records, entry)
	return nil
}

// planElement plans want to be an element of the array at path.
func planElement(root, relPath string, path []string, want []byte, m *agentManifest) (*fileEdit, error) {
	d, err := loadJSON(root, relPath, false)
	if err != nil {
		return nil, err
	}
	e := d.edit()
	orig := d.src
	prev := findJSONEntry(m, relPath, path, true)
	dotted := strings.Join(path, ".")
	entry := jsonEntry{File: relPath, Path: path, Append: true, Value: compact(want), Existed: len(path), CreatedFile: !d.exists}
	if prev != nil {
		entry.Existed, entry.CreatedFile = prev.Existed, prev.CreatedFile
	}
	st := styleOf(d.src, d.root)
	node, k := walk(d.root, path)
	var record bool
	switch {
	case k < len(path):
		if node.kind != '{' {
			return nil, fmt.Errorf("%s: %s is not a JSON object, so contextd cannot add its hook; nothing was changed: %w", relPath, orRoot(path[:k]), catalog.ErrConflict)
		}
		if prev == nil {
			entry.Existed = k
		}
		key := path[k]
		if err := d.set(insertItem(d.src, node, &key, nest(path[k+1:], append(append([]byte("["), want...), ']')), st)); err != nil {
			return nil, fmt.Errorf("%s: editing it went wrong (%v): %w", relPath, err, catalog.ErrInternal)
		}
		e.actions, record = append(e.actions, "added a "+dotted+" hook"), true
	case node.kind != '[':
		return nil, fmt.Errorf("%s: %s is not a JSON array, so contextd cannot add its hook; nothing was changed: %w", relPath, dotted, catalog.ErrConflict)
	default:
		same, old := -1, -1
		for i, el := range node.elems {
			if sameJSON(d.src, el, want) {
				same = i
			} else if prev != nil && sameJSON(d.src, el, prev.Value) {
				old = i
			}
		}
		switch {
		case same >= 0 && prev != nil:
			e.actions, record = append(e.actions, "unchanged ("+dotted+" hook)"), true
		case same >= 0:
			e.actions = append(e.actions, "unchanged ("+dotted+" hook was already there, left as yours)")
		case old >= 0:
			el := node.elems[old]
			if err := d.set(replaceValue(d.src, el, renderAt(d.src, el, want, st))); err != nil {
				return nil, fmt.Errorf("%s: editing it went wrong (%v): %w", relPath, err, catalog.ErrInternal)
			}
			e.actions, record = append(e.actions, "updated the "+dotted+" hook"), true
		default:
			if err := d.set(insertItem(d.src, node, nil, want, st)); err != nil {
				return nil, fmt.Errorf("%s: editing it went wrong (%v): %w", relPath, err, catalog.ErrInternal)
			}
			e.actions, record = append(e.actions, "added a "+dotted+" hook"), true
		}
	}
	e.record = func(m *agentManifest) {
		if record {
			putJSONEntry(m, entry)
		}
	}
	return d.finish(e, orig), nil
}

// planOpenCode plans contextd's entry in opencode.json (or opencode.jsonc),
// in the shape the file already uses: OpenCode 2's mcp.servers.<name>, or
// OpenCode 1's mcp.<name> (with "enabled", which some 1.x versions require).
// A new file gets the 1.x shape, which OpenCode 2 reads too.
func planOpenCode(root, proxy string, m *agentManifest, force bool) (*fileEdit, error) {
	relPath := "opencode.json"
	if _, err := os.Stat(filepath.Join(root, relPath)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(root, "opencode.jsonc")); err == nil {
			relPath = "opencode.jsonc"
		}
	}
	d, err := loadJSON(root, relPath, true)
	if err != nil {
		return nil, err
	}
	e := d.edit()
	orig := d.src
	path, want := []string{"mcp", MCPServerName}, openCodeV1Value(proxy)
	if mcp, _ := d.root.get("mcp"); mcp != nil && mcp.kind == '{' {
		if servers, _ := mcp.get("servers"); servers != nil && servers.kind == '{' {
			if typ, _ := servers.get("type"); typ == nil {
				path, want = []string{"mcp", "servers", MCPServerName}, openCodeV2Value(proxy)
			}
		}
	}
	var records []jsonEntry
	if !d.exists {
		key := "$schema"
		schema, _ := marshalNoEscape("https://opencode.ai/config.json")
		if err := d.set(insertItem(d.src, d.root, &key, schema, styleOf(d.src, d.root))); err != nil {
			return nil, fmt.Errorf("%s: %v: %w", relPath, err, catalog.ErrInternal)
		}
		records = append(records, jsonEntry{File: relPath, Path: []string{"$schema"}, Value: schema, CreatedFile: true})
	} else if p := findJSONEntry(m, relPath, []string{"$schema"}, false); p != nil {
		records = append(records, *p)
	}
	// An entry recorded in the other shape (the file was converted since).
	prev := findJSONEntry(m, relPath, path, false)
	if err := d.member(path, want, prev, force, e, &records); err != nil {
		return nil, err
	}
	// The built-in tools contextd replaces, denied for every agent.
	for _, tool := range OpenCodeDenied {
		p := []string{"permission", tool}
		if err := d.member(p, []byte(`"deny"`), findJSONEntry(m, relPath, p, false), force, e, &records); err != nil {
			return nil, err
		}
	}
	if !d.exists {
		// The file is new: the "$schema" line and the entry are both ours.
		for i := range records {
			records[i].CreatedFile = true
		}
	}
	e.record = func(m *agentManifest) {
		for _, r := range records {
			putJSONEntry(m, r)
		}
	}
	return d.finish(e, orig), nil
}

func orRoot(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}

func oneLine(b []byte) string {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		c.Reset()
		c.Write(b)
	}
	s := c.String()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func compact(b []byte) json.RawMessage {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return b
	}
	return c.Bytes()
}

// The values install writes.

func claudeMCPValue(proxy string) []byte {
	b, _ := marshalNoEscape(struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}{"stdio", proxy, []string{"mcp"}, map[string]string{}})
	return b
}

// HookCommand is the command line of the PreToolUse hook for proxy (Claude
// Code runs it with a shell, so an unusual path is quoted).
func HookCommand(proxy string) string { return cli.ShellQuote(proxy) + " hook" }

func claudeHookValue(proxy string) []byte {
	type cmd struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	b, _ := marshalNoEscape(struct {
		Matcher string `json:"matcher"`
		Hooks   []cmd  `json:"hooks"`
	}{HookMatcher, []cmd{{"command", HookCommand(proxy)}}})
	return b
}

func openCodeV1Value(proxy string) []byte {
	b, _ := marshalNoEscape(struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
		Enabled bool     `json:"enabled"`
	}{"local", []string{proxy, "mcp"}, true})
	return b
}

func openCodeV2Value(proxy string) []byte {
	b, _ := marshalNoEscape(struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
	}{"local", []string{proxy, "mcp"}})
	return b
}

// undoJSON removes one recorded entry if it is still as install wrote it.
func undoJSON(root string, e jsonEntry, rep *AgentReport) error {
	if _, err := readIn(root, e.File); errors.Is(err, fs.ErrNotExist) {
		rep.did(e.File, "already gone")
		return nil
	}
	// Read leniently: a comment the user added since must not stop the undo.
	d, err := loadJSON(root, e.File, true)
	if err != nil {
		return err
	}
	orig := d.src
	dotted := strings.Join(e.Path, ".")
	containers := e.Path
	if !e.Append {
		containers = e.Path[:len(e.Path)-1]
	}
	node, k := walk(d.root, e.Path)
	switch {
	case !e.Append && k < len(e.Path):
		rep.did(e.File, dotted+" already gone")
	case e.ByValue:
		idx := -1
		if k == len(e.Path) && node.kind == '[' {
			for i, el := range node.elems {
				if sameJSON(d.src, el, e.Value) {
					idx = i
				}
			}
		}
		if idx < 0 {
			rep.did(e.File, string(e.Value)+" already gone from "+dotted)
			break
		}
		if err := d.set(removeItem(d.src, node, idx)); err != nil {
			return err
		}
		rep.did(e.File, "removed "+string(e.Value)+" from "+dotted)
	case !e.Append && !sameJSON(d.src, node, e.Value):
		rep.did(e.File, "kept "+dotted+" (changed since install)")
	case !e.Append && e.Replaced != "":
		if err := d.set(replaceValue(d.src, node, []byte(e.Replaced))); err != nil {
			return err
		}
		rep.did(e.File, "restored your own "+dotted)
	case !e.Append:
		parent, _ := walk(d.root, containers)
		_, i := parent.get(e.Path[len(e.Path)-1])
		if err := d.set(removeItem(d.src, parent, i)); err != nil {
			return err
		}
		rep.did(e.File, "removed "+dotted)
	case k < len(e.Path) || node.kind != '[':
		rep.did(e.File, "the "+dotted+" hook is already gone")
	default:
		idx := -1
		for i, el := range node.elems {
			if sameJSON(d.src, el, e.Value) {
				idx = i
			}
		}
		if idx < 0 {
			rep.did(e.File, "kept "+dotted+" (the hook was changed or removed since install)")
			break
		}
		if err := d.set(removeItem(d.src, node, idx)); err != nil {
			return err
		}
		rep.did(e.File, "removed the "+dotted+" hook")
	}
	// Containers install created, when nothing else is left in them.
	for depth := len(containers) - 1; depth >= e.Existed; depth-- {
		c, k := walk(d.root, containers[:depth+1])
		if k <= depth || c.items() > 0 {
			break
		}
		parent, _ := walk(d.root, containers[:depth])
		_, i := parent.get(containers[depth])
		if err := d.set(removeItem(d.src, parent, i)); err != nil {
			return err
		}
	}
	if e.CreatedFile && d.root.items() == 0 && string(bytes.TrimSpace(d.src)) == "{}" {
		if err := removeIn(root, d.abs, false); err != nil {
			return fmt.Errorf("remove %s: %v: %w", e.File, err, catalog.ErrIO)
		}
		rep.did(e.File, "removed (left empty)")
		return nil
	}
	if !bytes.Equal(orig, d.src) {
		return writeIn(root, d.abs, d.src)
	}
	return nil
}

// RemoveTools removes from dir what Install wrote there and is still as it was
// written (per dir's manifest), then the manifest and the directories left
// empty.
func RemoveTools(dir string) (*Report, error) {
	return removeTools("", dir)
}

// removeIfOurs removes relp's last component from sub when it is still as
// install wrote it (want, from the manifest), saying what it did: "" when
// nothing is there.
func removeIfOurs(sub *dirAt, relp, want string) (string, error) {
	name := filepath.Base(relp)
	ours := false
	switch typ, err := sub.lstat(name); {
	case err != nil || typ == 0:
		return "", nil
	case typ == unix.S_IFLNK:
		cur, err := sub.readlink(name)
		ours = err == nil && want == "link:"+cur
	case typ == unix.S_IFREG:
		data, err := sub.readFile(name)
		ours = err == nil && want == "sha256:"+sum(data)
	}
	if !ours {
		return "kept (changed since install)", nil
	}
	if err := sub.remove(name); err != nil {
		return "", err
	}
	return "removed", nil
}

// removeTools is RemoveTools for the project at root ("" for none): a tools
// directory inside it is reached only beneath its root.
func removeTools(root, dir string) (*Report, error) {
	rep := &Report{Dir: dir}
	d, err := toolsDirAt(root, dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer d.close()
	b, err := d.readFile(ManifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("read %s: %v: %w", ManifestName, err, catalog.ErrIO)
	}
	var m manifest
	if json.Unmarshal(b, &m) != nil || m.Files == nil {
		return rep, fmt.Errorf("%s in %s is damaged; remove the tools by hand: %w", ManifestName, dir, catalog.ErrConflict)
	}
	paths := slices.Sorted(maps.Keys(m.Files))
	if err := removeOurs(d, dir, &m, paths, rep); err != nil {
		return rep, err
	}
	if err := d.remove(ManifestName); err != nil {
		return rep, fmt.Errorf("remove %s: %v: %w", ManifestName, err, catalog.ErrIO)
	}
	if root != "" {
		if r, in, _ := projectPath(root, dir); in && r != "." {
			if removeIn(root, dir, true) == nil {
				rep.Actions = append(rep.Actions, Action{".", "removed (empty)"})
			}
			return rep, nil
		}
	}
	if os.Remove(dir) == nil {
		rep.Actions = append(rep.Actions, Action{".", "removed (empty)"})
	}
	return rep, nil
}
