package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// AgentState is what `contextd status` shows about one agent wired in a
// project: read from the agent's files as they are now, not from the record.
type AgentState struct {
	Agent       string `json:"agent"`
	MCP         bool   `json:"mcp_registered"`
	BuiltinsOff bool   `json:"builtins_off"`
	Detail      string `json:"detail,omitempty"`
}

// ProjectAgents lists the agents install wired in the project holding cwd
// and, for each, whether contextd's server is registered and its built-in
// tools are off.
func ProjectAgents(cwd string) (root string, states []AgentState, err error) {
	root, err = FindRoot(cwd)
	if err != nil {
		return "", nil, err
	}
	m, ok := readAgentManifestFound(root)
	if !ok {
		return root, nil, nil
	}
	for _, a := range m.Agents {
		var s AgentState
		switch a {
		case AgentClaude:
			s = claudeState(root)
		case AgentCodex:
			s = codexState(root)
		case AgentGemini:
			s = geminiState(root)
		case AgentOpenCode:
			s = openCodeState(root)
		default:
			continue
		}
		s.Agent = a
		states = append(states, s)
	}
	return root, states, nil
}

// jsonValue decodes the JSON (or JSONC) file rel under root as plain values.
func jsonValue(root, relPath string) map[string]any {
	d, err := loadJSON(root, relPath, true)
	if err != nil || !d.exists {
		return nil
	}
	v, _ := decoded(d.src, d.root).(map[string]any)
	return v
}

func at(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func claudeState(root string) AgentState {
	s := AgentState{MCP: at(jsonValue(root, ".mcp.json"), "mcpServers", MCPServerName) != nil}
	hooks, _ := at(jsonValue(root, filepath.Join(".claude", "settings.json")), "hooks", "PreToolUse").([]any)
	for _, h := range hooks {
		if at(h, "matcher") != HookMatcher {
			continue
		}
		list, _ := at(h, "hooks").([]any)
		for _, c := range list {
			if cmd, _ := at(c, "command").(string); strings.HasSuffix(cmd, " hook") {
				s.BuiltinsOff = true
			}
		}
	}
	s.Detail = "PreToolUse hook refuses " + strings.ReplaceAll(HookMatcher, "|", ", ")
	if !s.BuiltinsOff {
		s.Detail = "no PreToolUse hook in .claude/settings.json"
	}
	return s
}

func codexState(root string) AgentState {
	var s AgentState
	b, err := readIn(root, CodexConfig) // beneath the root: a link out of the project is not read
	if err != nil {
		s.Detail = "no " + CodexConfig
		return s
	}
	d, err := parseTOML(string(b))
	if err != nil {
		s.Detail = CodexConfig + " does not parse: " + err.Error()
		return s
	}
	s.MCP = d.lookup([]string{"mcp_servers", MCPServerName}) != nil
	isV := func(path []string, want any) bool {
		n := d.lookup(path)
		return n != nil && n.kind == 'V' && n.value == want
	}
	s.BuiltinsOff = true
	var on []string
	for _, f := range CodexFeaturesOff {
		if !isV([]string{"features", f}, false) {
			s.BuiltinsOff = false
			on = append(on, f)
		}
	}
	switch {
	case len(on) > 0:
		s.Detail = "on: " + strings.Join(on, ", ")
	case isV([]string{"sandbox_mode"}, "read-only"):
		s.Detail = "shell off; apply_patch asks (read-only sandbox)"
	default:
		s.Detail = "shell off; apply_patch can write (sandbox_mode is not read-only)"
	}
	return s
}

func geminiState(root string) AgentState {
	v := jsonValue(root, GeminiSettings)
	s := AgentState{MCP: at(v, "mcpServers", MCPServerName) != nil}
	list, _ := at(v, "tools", "exclude").([]any)
	var missing []string
	for _, t := range GeminiExcluded {
		if !slices.Contains(list, any(t)) {
			missing = append(missing, t)
		}
	}
	s.BuiltinsOff = len(missing) == 0
	s.Detail = "tools.exclude: " + strings.Join(GeminiExcluded, ", ")
	if !s.BuiltinsOff {
		s.Detail = "not excluded: " + strings.Join(missing, ", ")
	}
	return s
}

func openCodeState(root string) AgentState {
	relPath := "opencode.json"
	if _, err := os.Stat(filepath.Join(root, relPath)); err != nil {
		relPath = "opencode.jsonc"
	}
	v := jsonValue(root, relPath)
	s := AgentState{MCP: at(v, "mcp", MCPServerName) != nil || at(v, "mcp", "servers", MCPServerName) != nil}
	var allowed []string
	for _, t := range OpenCodeDenied {
		if at(v, "permission", t) != "deny" {
			allowed = append(allowed, t)
		}
	}
	s.BuiltinsOff = len(allowed) == 0
	s.Detail = "permission deny: " + strings.Join(OpenCodeDenied, ", ")
	if !s.BuiltinsOff {
		s.Detail = "not denied: " + strings.Join(allowed, ", ")
	}
	return s
}
