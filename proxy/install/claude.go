package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
)

// The markers around the section install appends to CLAUDE.md.
const (
	SectionBegin = "<!-- contextd:begin -->"
	SectionEnd   = "<!-- contextd:end -->"
)

// claudeSection is the CLAUDE.md section: what an agent must know to use
// contextd instead of its built-in tools.
func claudeSection(toolsRel string) string {
	t := filepath.ToSlash(toolsRel)
	return SectionBegin + `
## contextd: use its tools, not the built-in ones

In this project shell commands and file access go through contextd: every call
runs in a sandbox, and what comes back has its secrets replaced by placeholders
and is cut to a token budget.

- Use the tools of the ` + "`contextd`" + ` MCP server: ` + "`mcp__contextd__safe_bash`" + ` to run
  commands (also to search: ` + "`rg`, `grep -rn`, `find`" + `), ` + "`mcp__contextd__safe_read`" + ` to
  read a file, ` + "`mcp__contextd__safe_write`" + ` to write one (read it first, then write
  its whole new content). A hook refuses the built-in Bash, Read, Write, Edit,
  MultiEdit, NotebookEdit, Grep and Glob.
- A long result ends with a continuation reference: pass it to
  ` + "`mcp__contextd__continue`" + ` for the next part instead of running the command again.
- Placeholders such as ` + "`[REDACTED:rule:1]`" + ` stand for secrets: write them back
  unchanged and contextd puts the real values in the file.
- Keep what you learn and where you are: ` + "`memory_search`/`memory_store`" + `,
  ` + "`checkpoint_save`/`checkpoint_restore`" + `; ` + "`branch`/`return`" + ` for a side task
  with its own token budget.
- For scripts and people the same tools are commands (` + "`--continue REF`" + ` pages):
  ` + "`" + t + `/safe_bash/safe_bash 'go test ./...'` + "`" + `.
` + SectionEnd + "\n"
}

// findSection returns the span of the marked section in src (through the end
// marker and the line break after it).
func findSection(src []byte) (int, int, bool) {
	b := bytes.Index(src, []byte(SectionBegin))
	if b < 0 {
		return 0, 0, false
	}
	e := bytes.Index(src[b:], []byte(SectionEnd))
	if e < 0 {
		return 0, 0, false
	}
	e += b + len(SectionEnd)
	if e < len(src) && src[e] == '\n' {
		e++
	}
	return b, e, true
}

func findMDEntry(m *agentManifest, file string) *mdEntry {
	for i := range m.Markdown {
		if m.Markdown[i].File == file {
			return &m.Markdown[i]
		}
	}
	return nil
}

// planSection plans the marked section in the Markdown file rel: appended when
// absent, brought up to date when it is still as install last wrote it, left
// alone (with a warning) when the user edited it, unless force.
func planSection(root, relPath, section string, m *agentManifest, force bool) (*fileEdit, error) {
	p := filepath.Join(root, relPath)
	e := &fileEdit{rel: relPath, abs: p}
	src, err := readIn(root, relPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, catalog.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file; nothing was changed: %w", relPath, catalog.ErrConflict)
	case err != nil:
		return nil, err
	default:
		e.exists = true
	}
	prev := findMDEntry(m, relPath)
	entry := mdEntry{File: relPath, SHA256: sum([]byte(section)), CreatedFile: !e.exists}
	if prev != nil {
		entry.Prefix, entry.CreatedFile, entry.Replaced = prev.Prefix, prev.CreatedFile, prev.Replaced
	}
	record := true
	out := src
	if b, end, ok := findSection(src); ok {
		cur := src[b:end]
		switch {
		case string(cur) == section:
			if prev == nil {
				record = false
				e.actions = append(e.actions, "unchanged (its contextd section was already there, left as yours)")
			} else {
				e.actions = append(e.actions, "unchanged (contextd section)")
			}
		case prev != nil && sum(cur) == prev.SHA256:
			out = splice(src, b, end, section)
			e.actions = append(e.actions, "updated its contextd section")
		case force:
			if entry.Replaced == "" {
				entry.Replaced = string(cur)
			}
			out = splice(src, b, end, section)
			e.actions = append(e.actions, "replaced its contextd section (--force)")
		default:
			// Harmless to keep: the user's words about contextd stay theirs
			// (a record from an earlier install stays as it was: uninstall
			// sees the edit and keeps the section too).
			record = false
			e.warnings = append(e.warnings, fmt.Sprintf("%s: kept the contextd section you edited (install --force replaces it)", relPath))
			e.actions = append(e.actions, "kept its contextd section (edited by you)")
		}
	} else {
		prefix := ""
		switch {
		case len(src) == 0:
		case bytes.HasSuffix(src, []byte("\n\n")):
		case bytes.HasSuffix(src, []byte("\n")):
			prefix = "\n"
		default:
			prefix = "\n\n"
		}
		entry.Prefix = prefix
		out = append(append(append([]byte{}, src...), prefix...), section...)
		if e.exists {
			e.actions = append(e.actions, "appended the contextd section")
		} else {
			e.actions = append(e.actions, "created with the contextd section")
		}
	}
	e.orig, e.out = src, out
	e.changed = !bytes.Equal(src, out) || !e.exists
	e.record = func(m *agentManifest) {
		if !record {
			return
		}
		if p := findMDEntry(m, relPath); p != nil {
			*p = entry
		} else {
			m.Markdown = append(m.Markdown, entry)
		}
	}
	return e, nil
}

// undoSection removes the section when it is still as install wrote it.
func undoSection(root string, e mdEntry, rep *AgentReport) error {
	p := filepath.Join(root, e.File)
	src, err := readIn(root, e.File)
	if errors.Is(err, fs.ErrNotExist) {
		rep.did(e.File, "already gone")
		return nil
	}
	if err != nil {
		return err
	}
	b, end, ok := findSection(src)
	switch {
	case !ok:
		rep.did(e.File, "contextd section already gone")
		return nil
	case sum(src[b:end]) != e.SHA256:
		rep.did(e.File, "kept the contextd section (changed since install)")
		return nil
	}
	var out []byte
	if e.Replaced != "" {
		out = splice(src, b, end, e.Replaced)
		rep.did(e.File, "restored your own contextd section")
	} else {
		if bytes.HasSuffix(src[:b], []byte(e.Prefix)) {
			b -= len(e.Prefix)
		}
		out = splice(src, b, end, "")
		rep.did(e.File, "removed the contextd section")
	}
	if e.CreatedFile && len(bytes.TrimSpace(out)) == 0 {
		if err := removeIn(root, p, false); err != nil {
			return fmt.Errorf("remove %s: %v: %w", e.File, err, catalog.ErrIO)
		}
		rep.did(e.File, "removed (left empty)")
		return nil
	}
	return writeIn(root, p, out)
}

// claudeTimeout bounds one run of the claude CLI (`mcp get` starts the server
// to check its health).
const claudeTimeout = 60 * time.Second

// claudeRun runs the claude CLI in dir, without its auto-updater or other
// traffic it does not need for configuration.
func claudeRun(ctx context.Context, bin, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s", claudeTimeout)
	}
	return string(out), err
}

// localServer is what `claude mcp get contextd` says about a local-scope
// registration.
type localServer struct {
	local   bool   // registered in the local scope (private to the user, this project)
	command string // its command line, "COMMAND ARGS"
}

func claudeGet(ctx context.Context, bin, dir string) localServer {
	out, _ := claudeRun(ctx, bin, dir, "mcp", "get", MCPServerName)
	var s localServer
	var cmd, args string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Scope:"):
			s.local = strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(line, "Scope:")), "Local")
		case strings.HasPrefix(line, "Command:"):
			cmd = strings.TrimSpace(strings.TrimPrefix(line, "Command:"))
		case strings.HasPrefix(line, "Args:"):
			args = strings.TrimSpace(strings.TrimPrefix(line, "Args:"))
		}
	}
	s.command = strings.TrimSpace(cmd + " " + args)
	return s
}

// claudeRegister registers the MCP server in Claude Code's local scope for the
// project (Claude Code asks the user to approve servers from .mcp.json; a
// local one it starts at once). Failures are warnings. It returns whether
// install owns a local registration now, and false for ok when it could not
// tell (no claude CLI).
func claudeRegister(ctx context.Context, bin, root, proxy string, owned bool, rep *AgentReport) (added, ok bool) {
	path, err := exec.LookPath(bin)
	if err != nil {
		rep.warn("no claude CLI on PATH: Claude Code will ask you to approve the contextd server of .mcp.json when it starts in this project")
		return owned, false
	}
	want := proxy + " mcp"
	cur := claudeGet(ctx, path, root)
	switch {
	case cur.local && cur.command == want:
		rep.did("claude mcp (local scope)", "unchanged")
		return owned, true
	case cur.local && !owned:
		rep.warn("Claude Code already has a local MCP server named %s (%s) that contextd did not register; left alone", MCPServerName, cur.command)
		return false, true
	case cur.local:
		// Ours, for an older proxy path.
		if out, err := claudeRun(ctx, path, root, "mcp", "remove", "--scope", "local", MCPServerName); err != nil {
			rep.warn("claude mcp remove --scope local %s: %v: %s", MCPServerName, err, strings.TrimSpace(out))
			return owned, true
		}
	}
	out, err := claudeRun(ctx, path, root, "mcp", "add", "--scope", "local", MCPServerName, "--", proxy, "mcp")
	if err != nil {
		rep.warn("claude mcp add --scope local %s: %v: %s", MCPServerName, err, strings.TrimSpace(out))
		return false, true
	}
	rep.did("claude mcp (local scope)", "registered "+MCPServerName)
	return true, true
}

// claudeUnregister removes the local registration install made, if it is still
// the one install made.
func claudeUnregister(ctx context.Context, bin, root, proxy string, rep *AgentReport) (stillThere bool) {
	path, err := exec.LookPath(bin)
	if err != nil {
		rep.warn("no claude CLI on PATH to remove contextd's local MCP registration; run: claude mcp remove --scope local %s", MCPServerName)
		return true
	}
	cur := claudeGet(ctx, path, root)
	switch {
	case !cur.local:
		rep.did("claude mcp (local scope)", "already gone")
	case cur.command != proxy+" mcp":
		rep.did("claude mcp (local scope)", "kept "+MCPServerName+" (changed since install)")
	default:
		if out, err := claudeRun(ctx, path, root, "mcp", "remove", "--scope", "local", MCPServerName); err != nil {
			rep.warn("claude mcp remove --scope local %s: %v: %s", MCPServerName, err, strings.TrimSpace(out))
			return true
		}
		rep.did("claude mcp (local scope)", "removed "+MCPServerName)
	}
	return false
}
