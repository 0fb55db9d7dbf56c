// Package hook is `contextd-proxy hook`, Claude Code's PreToolUse hook: it
// turns the agent's built-in Bash, Read, Write, Edit... away (exit status 2,
// one line on stderr naming the contextd tool to use) and lets everything else
// through.
package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/agentfiles"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/toolspec"
)

// Exit statuses of Claude Code's hook protocol.
const (
	// ExitAllow lets the call go ahead.
	ExitAllow = 0
	// ExitError is a non-blocking error: Claude Code shows stderr to the user
	// and runs the tool anyway.
	ExitError = 1
	// ExitBlock refuses the call; stderr goes to the agent.
	ExitBlock = 2
)

// DefaultBlocked are the built-in tools of Claude Code that contextd replaces:
// the ones the hook install writes into Claude Code's matcher.
var DefaultBlocked = strings.Split(agentfiles.HookMatcher, "|")

// EnvBlocked overrides the block list: tool names separated by commas or
// spaces; set but empty blocks nothing.
const EnvBlocked = "CONTEXTD_HOOK_BLOCKED"

// DefaultMaxInput bounds what the hook reads of its input before it knows the
// tool's name (Claude Code sends tool_name before tool_input, whose content
// can be a whole file).
const DefaultMaxInput = 64 << 20

// StartHint is the one command that starts contextd for the user.
const StartHint = "systemctl --user enable --now contextd.socket"

// Options configures Run; the zero value of every field is a documented
// default.
type Options struct {
	// LookupEnv reads the environment. Default: os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// ConfigFiles are where the [hook] table is looked for, the first that
	// exists being used alone. Default: contextd's own search path
	// ($XDG_CONFIG_HOME/contextd/config.toml or ~/.config/contextd/config.toml,
	// then /etc/contextd/config.toml).
	ConfigFiles []string
	// Socket is the daemon's socket. Default: client.SocketPath().
	Socket string
	// MaxInput bounds the input read before the tool's name. Default:
	// DefaultMaxInput.
	MaxInput int64
	// CheckTimeout bounds the check that the daemon answers. Default: 2s.
	CheckTimeout time.Duration
	// DrainTimeout bounds reading the rest of the input after the decision (so
	// that Claude Code's write does not fail). Default: 2s.
	DrainTimeout time.Duration
}

func (o *Options) env(k string) (string, bool) {
	if o.LookupEnv != nil {
		return o.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

// Usage is the hook's help text.
const Usage = `usage: contextd-proxy hook < PreToolUse-input.json

Claude Code's PreToolUse hook (install --agent claude registers it in
.claude/settings.json). It reads the hook input on stdin and exits:
  0  the call goes ahead (contextd's own tools, other MCP tools, tools not blocked)
  2  the built-in tool is refused; one line on stderr names the contextd tool to use
  1  the input could not be read (Claude Code runs the tool and shows the message)
Blocked tools: [hook] blocked = [...] in contextd's config.toml, or CONTEXTD_HOOK_BLOCKED
(comma-separated; empty blocks nothing). Default: Bash, Read, Write, Edit, MultiEdit,
NotebookEdit, Grep, Glob.
`

// Run is the hook: it reads the input from stdin and returns the exit status,
// having written at most one line to stderr.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) int {
	if len(args) > 0 {
		if args[0] == "--help" || args[0] == "-h" {
			fmt.Fprint(stdout, Usage)
			return ExitAllow
		}
		fmt.Fprintf(stderr, "contextd hook: unexpected argument %q (it takes none; see contextd-proxy hook --help)\n", args[0])
		return ExitError
	}
	max := o.MaxInput
	if max <= 0 {
		max = DefaultMaxInput
	}
	in, err := ParseInput(stdin, max)
	defer drain(stdin, o.DrainTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "contextd hook: cannot read the hook input (%s); the tool call was not checked\n", oneLine(err.Error()))
		return ExitError
	}
	if in.HookEventName != "" && in.HookEventName != "PreToolUse" {
		fmt.Fprintf(stderr, "contextd hook: it handles PreToolUse, not %s; register it under hooks.PreToolUse in .claude/settings.json\n", oneLine(in.HookEventName))
		return ExitError
	}
	blocked, source, cfgErr := BlockList(o)
	if !Blocks(in.ToolName, blocked) {
		if cfgErr != nil {
			fmt.Fprintf(stderr, "contextd hook: %s; the default list of blocked tools applies\n", oneLine(cfgErr.Error()))
			return ExitError
		}
		return ExitAllow
	}
	var b strings.Builder
	b.WriteString(Message(in.ToolName, mcpRegistered(o, in)))
	if source != "" && !slices.Contains(DefaultBlocked, in.ToolName) {
		fmt.Fprintf(&b, " (blocked by %s)", source)
	}
	if problem := daemonProblem(ctx, o); problem != "" {
		fmt.Fprintf(&b, " Note: contextd is not reachable (%s); start it with `%s`.", problem, StartHint)
	}
	if cfgErr != nil {
		fmt.Fprintf(&b, " Note: %s; the default list of blocked tools applies.", oneLine(cfgErr.Error()))
	}
	fmt.Fprintln(stderr, oneLine(b.String()))
	return ExitBlock
}

// Blocks reports whether the hook turns tool away: contextd's own tools (as MCP
// tools or by their names) never, anything else when it is on the list.
func Blocks(tool string, blocked []string) bool {
	if strings.HasPrefix(tool, "mcp__"+agentfiles.MCPServerName+"__") {
		return false
	}
	if _, ours := toolspec.Get(tool); ours {
		return false
	}
	return slices.Contains(blocked, tool)
}

// Message is the line that tells the agent what to use instead of tool. With
// mcp, it names the tools as Claude Code knows them (mcp__contextd__...).
func Message(tool string, mcp bool) string {
	t := func(name string) string {
		if mcp {
			return "mcp__" + agentfiles.MCPServerName + "__" + name
		}
		return name
	}
	var use string
	switch tool {
	case "Bash":
		use = "use " + t("safe_bash") + " instead: it runs the command in contextd's sandbox."
	case "Read":
		use = "use " + t("safe_read") + " instead (offset and limit read a part of a long file)."
	case "Write", "Edit", "MultiEdit":
		use = "read the file with " + t("safe_read") + ", then write its whole new content with " + t("safe_write") + "."
	case "NotebookEdit":
		use = "write the notebook's new JSON with " + t("safe_write") + " (read it first with " + t("safe_read") + ")."
	case "Grep":
		use = "search with " + t("safe_bash") + " running rg (or grep -rn)."
	case "Glob":
		use = "list files with " + t("safe_bash") + " running find (or rg --files -g PATTERN)."
	default:
		use = "use contextd's tools instead (" + t("safe_bash") + ", " + t("safe_read") + ", " + t("safe_write") + ")."
	}
	msg := "contextd: the built-in " + oneLine(tool) + " is turned off in this project; " + use
	if !mcp {
		msg += " (contextd's MCP server is not registered in this project: run `contextd-proxy install --agent claude`.)"
	}
	return msg
}

// BlockList returns the blocked tools and where the list came from ("" for
// the default). A configuration file that cannot be read or parsed leaves the
// default in force and is reported as the error: the hook keeps blocking what
// it blocks by default rather than letting everything through.
func BlockList(o Options) ([]string, string, error) {
	if v, ok := o.env(EnvBlocked); ok {
		return splitNames(v), EnvBlocked, nil
	}
	files := o.ConfigFiles
	if files == nil {
		files = configSearchPath(o)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return DefaultBlocked, "", fmt.Errorf("cannot read %s (%v)", p, err)
		}
		list, found, err := readBlocked(b)
		if err != nil {
			return DefaultBlocked, "", fmt.Errorf("cannot read [hook] blocked in %s (%v)", p, err)
		}
		if !found {
			return DefaultBlocked, "", nil
		}
		return splitNames(strings.Join(list, ",")), p + " [hook] blocked", nil
	}
	return DefaultBlocked, "", nil
}

// readBlocked reads [hook] blocked of a configuration file, and whether it is
// set, with the TOML library the daemon decodes the whole file with: the two
// read the same document alike (keys matched regardless of case, as the
// daemon's are), and a file the library refuses keeps the default list. The
// library's link, initialisation and parse cost a hook start about 0.5-0.7 ms
// on the example configuration, within the 1 ms a start may spend on it
// (bench/hookstart).
func readBlocked(src []byte) ([]string, bool, error) {
	var cfg struct {
		Hook struct {
			Blocked *[]string `toml:"blocked"`
		} `toml:"hook"`
	}
	if _, err := toml.Decode(string(src), &cfg); err != nil {
		return nil, false, err
	}
	if cfg.Hook.Blocked == nil {
		return nil, false, nil
	}
	return *cfg.Hook.Blocked, true, nil
}

// configSearchPath is where contextd reads its configuration (the daemon's
// daemon/config.SearchPath, repeated here so that the hook, which runs before
// every built-in tool call, links no more than it needs; a test keeps the two
// equal).
func configSearchPath(o Options) []string {
	var paths []string
	if x, _ := o.env("XDG_CONFIG_HOME"); x != "" {
		paths = append(paths, filepath.Join(x, "contextd", "config.toml"))
	} else if h, _ := o.env("HOME"); h != "" {
		// os.UserHomeDir, which the daemon uses, is $HOME on Linux.
		paths = append(paths, filepath.Join(h, ".config", "contextd", "config.toml"))
	}
	return append(paths, "/etc/contextd/config.toml")
}

func splitNames(s string) []string {
	out := []string{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// mcpRegistered looks for the project's install record from Claude Code's
// project directory (or the input's cwd) upwards, stopping at the first
// directory that holds one or a .git.
func mcpRegistered(o Options, in *Input) bool {
	dir, _ := o.env("CLAUDE_PROJECT_DIR")
	if dir == "" {
		dir = in.Cwd
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if !filepath.IsAbs(dir) {
		return false
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, agentfiles.ManifestName)); err == nil {
			return agentfiles.MCPRegistered(d)
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == "/" {
			return false
		}
	}
}

// daemonProblem says why the daemon cannot be reached, or "" when it answers
// (or is being started by socket activation and has not answered in time).
func daemonProblem(ctx context.Context, o Options) string {
	sock := o.Socket
	if sock == "" {
		sock = client.SocketPath()
	}
	timeout := o.CheckTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := client.Dial(sock)
	if err != nil {
		return reason(err)
	}
	defer conn.Close()
	if _, err := conn.Status(ctx); err != nil && ctx.Err() == nil {
		return reason(err)
	}
	return ""
}

// reason is a catalog error's message without the class name at its end (the
// line already says "not reachable").
func reason(err error) string {
	return oneLine(strings.TrimSuffix(err.Error(), ": "+catalog.ClassOf(err).Name))
}

// drain reads what is left of the input, for at most d, so that the writer
// does not see a broken pipe.
func drain(r io.Reader, d time.Duration) {
	if d <= 0 {
		d = 2 * time.Second
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// oneLine keeps a message on one line, as the protocol's agent-facing text
// must be.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
