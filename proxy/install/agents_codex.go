package install

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Codex CLI reads a project's .codex/config.toml (in a project its user
// config.toml marks trusted) over the user's ~/.codex/config.toml. Its
// built-in tools, as `codex debug prompt-input` lists them (0.169): the shell
// (features.shell_tool; unified_exec's exec_command and write_stdin),
// apply_patch, which no key turns off (sandbox_mode = "read-only" makes every
// write it tries need the user's approval), and view_image.

// CodexFeaturesOff are the [features] install turns off.
var CodexFeaturesOff = []string{"shell_tool", "unified_exec", "view_image"}

// CodexConfig is the project's Codex configuration file.
var CodexConfig = filepath.Join(".codex", "config.toml")

func (o *Options) codexHome() string {
	if o.CodexHome != "" {
		return o.CodexHome
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

func codexMCPTable(proxy string) []tkv {
	args, vals := tomlStrings([]string{"mcp"})
	return []tkv{tkvString("command", proxy), {"args", vals, args}}
}

// planCodex plans .codex/config.toml, AGENTS.md and, unless NoTrust, the
// project's trust in the user's Codex config.
func planCodex(root string, o Options, m *agentManifest) ([]*fileEdit, error) {
	f, err := loadTOML(root, CodexConfig)
	if err != nil {
		return nil, err
	}
	e := &fileEdit{rel: f.rel, abs: f.abs, exists: f.exists}
	orig := f.src
	var records []tomlEntry
	if err := f.setKeys(nil, []tkv{tkvString("sandbox_mode", "read-only")}, m, o.Force, e, &records); err != nil {
		return nil, err
	}
	var off []tkv
	for _, k := range CodexFeaturesOff {
		off = append(off, tkvBool(k, false))
	}
	if err := f.setKeys([]string{"features"}, off, m, o.Force, e, &records); err != nil {
		return nil, err
	}
	table := []string{"mcp_servers", MCPServerName}
	if err := f.ownTable(table, codexMCPTable(o.Proxy), findTOMLEntry(m, f.rel, table, ""), o.Force, e, &records); err != nil {
		return nil, err
	}
	finishTOML(e, orig, f, records)
	md, err := planSection(root, "AGENTS.md", agentsSection(), m, o.Force)
	if err != nil {
		return nil, err
	}
	edits := []*fileEdit{e, md}
	trustCmd := fmt.Sprintf("start codex in %s and trust it, or add to %s: [projects.%s] trust_level = \"trusted\"",
		root, filepath.Join(o.codexHome(), "config.toml"), tomlString(root))
	if o.NoTrust {
		e.warnings = append(e.warnings, "Codex reads .codex/config.toml only in a trusted project (--no-trust): "+trustCmd)
		return edits, nil
	}
	trust, err := planCodexTrust(root, o, m, trustCmd)
	if err != nil {
		return nil, err
	}
	return append(edits, trust), nil
}

func finishTOML(e *fileEdit, orig string, f *tomlFile, records []tomlEntry) {
	e.orig, e.out = []byte(orig), []byte(f.src)
	e.changed = orig != f.src
	e.record = func(m *agentManifest) {
		for _, r := range records {
			putTOMLEntry(m, r)
		}
	}
}

// planCodexTrust marks the project trusted in the user's Codex config, unless
// the user decided about it already.
func planCodexTrust(root string, o Options, m *agentManifest, trustCmd string) (*fileEdit, error) {
	f, err := loadTOML(root, rel(root, filepath.Join(o.codexHome(), "config.toml")))
	if err != nil {
		return nil, err
	}
	e := &fileEdit{rel: f.rel, abs: f.abs, exists: f.exists}
	orig := f.src
	var records []tomlEntry
	table := []string{"projects", root}
	prev := findTOMLEntry(m, f.rel, table, "")
	level := f.doc.lookup(append(append([]string{}, table...), "trust_level"))
	switch {
	case level == nil && f.doc.lookup(table) == nil:
		if err := f.ownTable(table, []tkv{tkvString("trust_level", "trusted")}, prev, false, e, &records); err != nil {
			return nil, err
		}
		e.actions[len(e.actions)-1] = "trusted this project (Codex reads .codex/config.toml only then)"
	case level != nil && level.kind == 'V' && level.value == "trusted":
		if prev != nil {
			records = append(records, *prev)
		}
		e.actions = append(e.actions, "unchanged (this project is trusted)")
	default:
		e.warnings = append(e.warnings, fmt.Sprintf("%s does not trust this project, so Codex ignores .codex/config.toml here; left alone: %s", f.rel, strings.TrimPrefix(trustCmd, "start codex in "+root+" and trust it, or ")))
	}
	finishTOML(e, orig, f, records)
	return e, nil
}
