package install

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// Gemini CLI reads a project's .gemini/settings.json (JSON with comments, no
// trailing commas) only in a trusted folder (security.folderTrust is on by
// default since 0.3x; its trusted folders are ~/.gemini/trustedFolders.json).

// GeminiExcluded are the built-in tools install lists in tools.exclude: the
// shell, file writes and edits, and every tool that reads files.
var GeminiExcluded = []string{"run_shell_command", "write_file", "replace", "read_file", "read_many_files", "grep_search", "glob"}

// GeminiSettings is the project's Gemini CLI settings file.
var GeminiSettings = filepath.Join(".gemini", "settings.json")

func (o *Options) geminiTrust() string {
	if o.GeminiTrust != "" {
		return o.GeminiTrust
	}
	if p := os.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".gemini", "trustedFolders.json")
}

func geminiMCPValue(proxy string) []byte {
	b, _ := marshalNoEscape(struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}{proxy, []string{"mcp"}})
	return b
}

// loadStrictCommaJSON loads a JSON file that may hold comments but, as
// Gemini CLI reads it (strip-json-comments, then JSON.parse), no trailing
// commas.
func loadStrictCommaJSON(root, relPath string) (*jsonDoc, error) {
	d, err := loadJSON(root, relPath, true)
	if err != nil {
		return nil, err
	}
	if trailingComma(d.root) {
		return nil, fmt.Errorf("%s is not valid JSON (a trailing comma; Gemini CLI refuses it too); fix it, then run install again; nothing was changed: %w", relPath, catalog.ErrConflict)
	}
	return d, nil
}

func trailingComma(n *jnode) bool {
	if n.trailing >= 0 && (n.kind == '{' || n.kind == '[') {
		return true
	}
	for _, m := range n.members {
		if trailingComma(m.val) {
			return true
		}
	}
	for _, e := range n.elems {
		if trailingComma(e) {
			return true
		}
	}
	return false
}

// planGemini plans .gemini/settings.json, GEMINI.md and, unless NoTrust, the
// folder's trust.
func planGemini(root string, o Options, m *agentManifest) ([]*fileEdit, error) {
	d, err := loadStrictCommaJSON(root, GeminiSettings)
	if err != nil {
		return nil, err
	}
	e := d.edit()
	orig := d.src
	var records []jsonEntry
	path := []string{"mcpServers", MCPServerName}
	if err := d.member(path, geminiMCPValue(o.Proxy), findJSONEntry(m, d.rel, path, false), o.Force, e, &records); err != nil {
		return nil, err
	}
	for _, tool := range GeminiExcluded {
		if err := d.element([]string{"tools", "exclude"}, tool, m, e, &records); err != nil {
			return nil, err
		}
	}
	e.record = func(m *agentManifest) {
		for _, r := range records {
			putJSONEntry(m, r)
		}
	}
	settings := d.finish(e, orig)
	md, err := planSection(root, "GEMINI.md", geminiSection(), m, o.Force)
	if err != nil {
		return nil, err
	}
	edits := []*fileEdit{settings, md}
	real := root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		real = r
	}
	trustFile := o.geminiTrust()
	how := fmt.Sprintf("start gemini in %s and choose \"Trust folder\", or add \"%s\": \"TRUST_FOLDER\" to %s", root, real, trustFile)
	if o.NoTrust {
		settings.warnings = append(settings.warnings, "Gemini CLI reads .gemini/settings.json and starts its MCP servers only in a trusted folder (--no-trust): "+how)
		return edits, nil
	}
	td, err := loadStrictCommaJSON(root, rel(root, trustFile))
	if err != nil {
		return nil, err
	}
	te := td.edit()
	torig := td.src
	var trecords []jsonEntry
	tpath := []string{real}
	cur, k := walk(td.root, tpath)
	switch {
	case k == 1 && sameJSON(td.src, cur, []byte(`"TRUST_FOLDER"`)):
		if p := findJSONEntry(m, td.rel, tpath, false); p != nil {
			trecords = append(trecords, *p)
		}
		te.actions = append(te.actions, "unchanged (this folder is trusted)")
	case k == 1:
		te.warnings = append(te.warnings, fmt.Sprintf("%s has its own rule for this folder (%s), left alone; if it is not trusted, Gemini CLI ignores .gemini/settings.json here: %s",
			td.rel, strings.TrimSpace(oneLine(td.src[cur.start:cur.end])), how))
	default:
		if err := td.member(tpath, []byte(`"TRUST_FOLDER"`), nil, false, te, &trecords); err != nil {
			return nil, err
		}
		te.actions[len(te.actions)-1] = "trusted this folder (Gemini CLI reads .gemini/settings.json only then)"
	}
	te.record = func(m *agentManifest) {
		for _, r := range trecords {
			putJSONEntry(m, r)
		}
	}
	return append(edits, td.finish(te, torig)), nil
}
