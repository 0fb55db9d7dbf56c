package install

// The sections install writes into AGENTS.md (Codex CLI and OpenCode read it,
// so it names no agent's own tool syntax) and GEMINI.md. A test holds each
// under a token ceiling: they are read at the start of every session.

func mcpSectionBody(names string) string {
	return `
## contextd: use its tools, not the built-in ones

In this project shell commands and file access go through the ` + "`contextd`" + ` MCP
server: every call runs in a sandbox, secrets come back as placeholders and
output is cut to a token budget. The agent's own shell and file tools are
switched off here (or ask for approval).

- Run commands with ` + "`safe_bash`" + ` (also to search: ` + "`rg`, `grep -rn`, `find`" + `).
- Read a file with ` + "`safe_read`" + `; write one with ` + "`safe_write`" + ` (read it first,
  then write its whole new content).
- A long result ends with a continuation reference: pass it to ` + "`continue`" + `
  instead of running the command again.
- Write placeholders such as ` + "`[REDACTED:rule:1]`" + ` back unchanged: contextd puts
  the secrets back.
- ` + "`memory_search`/`memory_store`" + ` keep lessons, ` + "`checkpoint_save`/`checkpoint_restore`" + `
  your place; ` + "`branch`/`return`" + ` run a side task on its own token budget.

` + names + `
`
}

// agentsSection is the AGENTS.md section (Codex CLI, OpenCode).
func agentsSection() string {
	return SectionBegin + mcpSectionBody("Codex shows these tools as `mcp__contextd__<tool>`, OpenCode as `contextd_<tool>`.") + SectionEnd + "\n"
}

// geminiSection is the GEMINI.md section.
func geminiSection() string {
	return SectionBegin + mcpSectionBody("Gemini CLI shows these tools by their names (`safe_bash`, ...).") + SectionEnd + "\n"
}
