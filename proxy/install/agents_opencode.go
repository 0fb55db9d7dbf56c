package install

// OpenCodeDenied are OpenCode's built-in tools install denies in
// opencode.json's "permission" (OpenCode 1.x: "edit" covers edit, write and
// patch; "read", "grep" and "glob" read files; "bash" runs commands).
var OpenCodeDenied = []string{"bash", "edit", "read", "grep", "glob"}

// planOpenCodeAgent plans OpenCode's wiring: its MCP server and denied
// built-ins in opencode.json, and the section of AGENTS.md.
func planOpenCodeAgent(root string, o Options, m *agentManifest) ([]*fileEdit, error) {
	oc, err := planOpenCode(root, o.Proxy, m, o.Force)
	if err != nil {
		return nil, err
	}
	md, err := planSection(root, "AGENTS.md", agentsSection(), m, o.Force)
	if err != nil {
		return nil, err
	}
	return []*fileEdit{oc, md}, nil
}
