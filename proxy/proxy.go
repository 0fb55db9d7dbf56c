// Package proxy is contextd-proxy: one binary that is a tool when invoked through a
// symlink named after the tool (argv[0] picks it), and a small admin command
// (install, tools, version) when invoked by its own name.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/envallow"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/proxy/hook"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/toolstore"
	"github.com/contextd/contextd/wire/lite"
)

// Version is set at build time (-ldflags -X).
var Version = "dev"

// IO is the process's standard streams.
type IO struct {
	Stdin          io.Reader
	StdinIsTerm    bool
	StderrIsTerm   bool
	Stdout, Stderr io.Writer
}

// StdIO returns the real standard streams.
func StdIO() IO {
	_, inErr := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	_, errErr := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	return IO{Stdin: os.Stdin, StdinIsTerm: inErr == nil, StderrIsTerm: errErr == nil, Stdout: os.Stdout, Stderr: os.Stderr}
}

// Main runs the proxy for argv and returns the exit status. It is the one place
// where errors become exit statuses and text on stderr.
func Main(ctx context.Context, argv []string, sio IO) int {
	code, err := run(ctx, argv, sio)
	if err != nil {
		fmt.Fprintln(sio.Stderr, catalog.Format(err))
		return catalog.ExitCode(err)
	}
	return code
}

// ToolName returns the tool argv0 names, if it names one: a built-in by its
// name, a plugin tool only when install laid it out where argv0 points (see
// pluginDir); any other name stays unknown.
func ToolName(argv0 string) (string, bool) {
	name, _, ok := toolOf(argv0)
	return name, ok
}

// toolOf is ToolName with a plugin tool's directory ("" for a built-in).
func toolOf(argv0 string) (name, dir string, ok bool) {
	name = filepath.Base(argv0)
	if _, ok := toolspec.Get(name); ok {
		return name, "", true
	}
	dir = pluginDir(argv0, name)
	return name, dir, dir != ""
}

// pluginDir is the directory of the plugin tool name that argv0 started, or
// "". A plugin tool's symlink is DIR/<name>/<name>, and the tools
// directory DIR holds install's record of the plugin tools it laid out
// there: without it, the name is not taken as a tool.
func pluginDir(argv0, name string) string {
	path := argv0
	if !strings.Contains(path, "/") {
		// Started through PATH, which is where the kernel found it.
		p, err := exec.LookPath(path)
		if err != nil {
			return ""
		}
		path = p
	}
	dir := filepath.Dir(path)
	if filepath.Base(dir) != name || !install.PluginLaidOut(filepath.Dir(dir), name) {
		return ""
	}
	return dir
}

func run(ctx context.Context, argv []string, sio IO) (int, error) {
	if len(argv) == 0 {
		return 0, fmt.Errorf("no argv[0]: %w", catalog.ErrUsage)
	}
	if tool, dir, ok := toolOf(argv[0]); ok {
		return runTool(ctx, tool, dir, argv[1:], sio)
	}
	args := argv[1:]
	if len(args) == 0 {
		fmt.Fprint(sio.Stdout, usage)
		return 0, nil
	}
	switch args[0] {
	case "install":
		return 0, runInstall(ctx, args[1:], sio)
	case "uninstall":
		return 0, runUninstall(ctx, args[1:], sio)
	case "hook":
		// Claude Code's PreToolUse hook speaks in exit statuses of its own
		// (0 allow, 2 block, 1 a non-blocking error), never in sysexits.
		return hook.Run(ctx, args[1:], sio.Stdin, sio.Stdout, sio.Stderr, hook.Options{}), nil
	case "mcp":
		if len(args) > 1 && args[1] == "wrap" {
			// The wrap only copies bytes to the daemon: it needs no MCP SDK,
			// so it stays in this binary.
			return runWrap(ctx, args[2:], sio)
		}
		return 0, runMCP(args[1:])
	case "tools":
		for _, s := range toolspec.All() {
			fmt.Fprintln(sio.Stdout, s.Name)
		}
		return 0, nil
	case "version", "--version":
		fmt.Fprintln(sio.Stdout, "contextd-proxy", Version)
		return 0, nil
	case "help", "--help", "-h":
		fmt.Fprint(sio.Stdout, usage)
		return 0, nil
	}
	if _, ok := toolspec.Get(args[0]); ok {
		return runTool(ctx, args[0], "", args[1:], sio)
	}
	return 0, fmt.Errorf("unknown command %q (see contextd-proxy help): %w", args[0], catalog.ErrUsage)
}

const usage = `contextd-proxy: the agent side of contextd.

Through a symlink named after a tool (installed by "install"), it is that tool:
  safe_bash 'go test ./...'      safe_read path --offset 10     safe_write path < content
  memory_search words...         memory_get ID                  memory_store --title T ...
  checkpoint_save --summary S    checkpoint_restore [ID]        branch DESCRIPTION / return SUMMARY

By its own name:
  contextd-proxy install [--agent auto|claude|codex|gemini|opencode|none] [--project DIR] [--force] [--no-trust] [--tools NAME,...|--no-plugins] [TOOLS-DIR]
                                 wire the project for its agents (default auto: every agent whose
                                 configuration or CLI is found, else claude): the MCP server, the
                                 built-in tools off, CLAUDE.md/AGENTS.md/GEMINI.md (docs/cli.md);
                                 the installed plugin tools it enables (default all) beside contextd's
  contextd-proxy uninstall [--project DIR]
                                 take back exactly what install added
  contextd-proxy hook            Claude Code's PreToolUse hook (reads its JSON on stdin)
  contextd-proxy mcp             serve the tools over MCP on stdin/stdout (docs/mcp.md)
  contextd-proxy mcp wrap -- CMD put contextd's firewall in front of an MCP server (docs/mcp.md)
  contextd-proxy TOOL ARGS...    run a tool without a symlink
  contextd-proxy tools           list the tools
  contextd-proxy version

Environment: CONTEXTD_SOCKET (socket path), CONTEXTD_SESSION (session id),
CONTEXTD_DAEMON_UID (uid the daemon must run as, when it is not yours).
Errors start with a code CTXD-Exxx; docs/errors.md lists them.
`

func runInstall(ctx context.Context, args []string, sio IO) error {
	o, help, err := install.ParseInstallArgs(args)
	if err != nil || help {
		if help {
			fmt.Fprintln(sio.Stdout, "usage:", install.InstallUsage)
		}
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: find own binary: %v: %w", err, catalog.ErrInternal)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("install: resolve own binary: %v: %w", err, catalog.ErrInternal)
	}
	o.Proxy = exe
	// Asked only where the question is seen (it goes to stderr) and can be
	// answered; otherwise the refusal names --yes.
	if sio.StdinIsTerm && sio.StderrIsTerm {
		o.Confirm = install.Ask(sio.Stdin, sio.Stderr)
	}
	rep, err := install.Setup(ctx, o)
	printAgentReport(rep, sio)
	return err
}

func runUninstall(ctx context.Context, args []string, sio IO) error {
	o, help, err := install.ParseUninstallArgs(args)
	if err != nil || help {
		if help {
			fmt.Fprintln(sio.Stdout, "usage:", install.UninstallUsage)
		}
		return err
	}
	rep, err := install.Uninstall(ctx, o)
	printAgentReport(rep, sio)
	return err
}

func printAgentReport(rep *install.AgentReport, sio IO) {
	if rep == nil {
		return
	}
	fmt.Fprintf(sio.Stdout, "project %s\n", rep.Root)
	for _, a := range rep.Actions {
		fmt.Fprintf(sio.Stdout, "  %-28s %s\n", a.Path, a.What)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(sio.Stderr, "contextd-proxy: note: %s\n", w)
	}
}

// request builds the call for a parsed invocation.
func request(tool string, inv *cli.Invocation) (*lite.Call, error) {
	return NewCall(tool, inv.Input, inv.Continue, inv.MaxTokens)
}

// NewCall builds the daemon call every face of the proxy sends (a symlink, the
// MCP server): the tool's input or a continuation reference, the working
// directory, CONTEXTD_SESSION, and the environment without credentials.
func NewCall(tool string, input json.RawMessage, cont string, maxTokens int) (*lite.Call, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %v: %w", err, catalog.ErrBadInput)
	}
	env := CallerEnv()
	return &lite.Call{
		Tool:      tool,
		Input:     input,
		Session:   os.Getenv("CONTEXTD_SESSION"),
		Cwd:       cwd,
		Continue:  cont,
		Env:       env,
		MaxTokens: maxTokens,
	}, nil
}

// runTool runs the tool named tool: a built-in, or the plugin tool laid
// out in dir (its schema.json and TOOL.md sit beside its symlink).
func runTool(ctx context.Context, tool, dir string, args []string, sio IO) (int, error) {
	stdin := cli.Stdin{R: sio.Stdin, IsTerminal: sio.StdinIsTerm}
	builtin := dir == ""
	var inv *cli.Invocation
	var err error
	if builtin {
		inv, err = cli.Parse(tool, args, stdin)
	} else {
		inv, err = parsePlugin(tool, dir, args, stdin, sio.Stdout)
	}
	if err != nil || inv == nil {
		return 0, err
	}
	if inv.Help {
		spec, _ := toolspec.Get(tool)
		fmt.Fprintf(sio.Stdout, "%s\nusage: %s\n       %s --json '<input per schema.json>' [--format json]\n       %s --continue REF\n",
			strings.TrimSpace(string(spec.Doc)), cli.Usage[tool], tool, tool)
		return 0, nil
	}
	req, err := request(tool, inv)
	if err != nil {
		return 0, err
	}
	conn, err := client.Dial(client.SocketPath())
	if err != nil {
		return 0, err
	}
	defer conn.Close()

	var out resultSink = &textSink{w: sio.Stdout}
	if inv.Format == cli.JSON {
		out = &jsonSink{w: sio.Stdout}
	}
	res, err := conn.Call(ctx, req, out.data)
	if err != nil {
		out.fail(err)
		return 0, err
	}
	out.done(res)
	if sb := res.Sandbox; sb != nil && sb.Scope == "" && sb.ScopeNote != "" && inv.Format == cli.Text {
		fmt.Fprintf(sio.Stderr, "contextd: note: ran without a systemd scope (no per-call memory/task limits): %s\n", sb.ScopeNote)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(sio.Stderr, "contextd: warning: %s\n", w)
	}
	// A plugin tool's result has an exit status, as safe_bash's does.
	withStatus := tool == "safe_bash" || !builtin
	toolErr := catalog.FromDetail(res.Error)
	switch {
	case toolErr != nil && withStatus && errors.Is(toolErr, catalog.ErrTimeout):
		fmt.Fprintln(sio.Stderr, catalog.Format(toolErr))
		return catalog.ExitTimeout, nil
	case toolErr != nil:
		return 0, toolErr
	case withStatus:
		return int(res.ExitCode), nil
	}
	return 0, nil
}

// parsePlugin parses the command line of the plugin tool laid out in dir,
// from the schema.json beside its symlink; --help is printed here, and
// then the invocation is nil.
func parsePlugin(tool, dir string, args []string, stdin cli.Stdin, stdout io.Writer) (*cli.Invocation, error) {
	schema, err := readSmall(filepath.Join(dir, toolstore.SchemaName), cli.MaxSchema)
	if err != nil {
		return nil, fmt.Errorf("%s: its %s beside the symlink cannot be read (%v); run contextd-proxy install again: %w", tool, toolstore.SchemaName, err, catalog.ErrNotInstalled)
	}
	pl, err := cli.NewPlugin(tool, schema)
	if err != nil {
		return nil, err
	}
	inv, err := pl.Parse(args, stdin)
	if err != nil || !inv.Help {
		return inv, err
	}
	doc, _ := readSmall(filepath.Join(dir, toolstore.DocName), 1<<20)
	fmt.Fprint(stdout, pl.Help(doc))
	return nil, nil
}

// readSmall reads the regular file at path, of at most max bytes, without
// following a symbolic link in its last component.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is over %d bytes", path, max)
	}
	return b, err
}

// resultSink prints a result in one of the two formats.
type resultSink interface {
	data([]byte)
	done(*lite.Result)
	fail(error)
}

// textSink streams data as it comes; a truncated result ends with one line saying
// how to get the rest.
type textSink struct {
	w       io.Writer
	lastNL  bool
	written bool
}

func (t *textSink) data(b []byte) {
	if len(b) == 0 {
		return
	}
	t.w.Write(b)
	t.written = true
	t.lastNL = b[len(b)-1] == '\n'
}

func (t *textSink) done(r *lite.Result) {
	if r.Truncated && r.Continue != "" {
		if t.written && !t.lastNL {
			fmt.Fprintln(t.w)
		}
		fmt.Fprintf(t.w, "[truncated: run the same tool with --continue %s for the next part]\n", r.Continue)
	}
}

func (t *textSink) fail(error) {
	if t.written && !t.lastNL {
		fmt.Fprintln(t.w)
	}
}

// jsonSink collects data and prints the response envelope at the end.
type jsonSink struct {
	w   io.Writer
	buf []byte
}

// Envelope is the --format json output.
type Envelope struct {
	Data       string              `json:"data"`
	Refs       []string            `json:"refs"`
	TokensUsed int64               `json:"tokens_used"`
	HasMore    bool                `json:"has_more"`
	Truncated  bool                `json:"truncated"`
	Continue   string              `json:"continue,omitempty"`
	ExitCode   *int                `json:"exit_code,omitempty"`
	Sandbox    *sandboxinfo.Layers `json:"sandbox,omitempty"`
	Error      *catalog.Detail     `json:"error,omitempty"`
	Warnings   []string            `json:"warnings,omitempty"`
	Session    string              `json:"session,omitempty"`
	Workspace  string              `json:"workspace,omitempty"`
}

func (j *jsonSink) data(b []byte) { j.buf = append(j.buf, b...) }

func (j *jsonSink) done(r *lite.Result) {
	code := r.ExitCode
	j.print(&Envelope{
		Data: string(j.buf), Refs: []string{}, TokensUsed: r.TokensUsed, HasMore: r.Truncated,
		Truncated: r.Truncated, Continue: r.Continue, ExitCode: &code, Error: r.Error, Sandbox: r.Sandbox,
		Session: r.Session, Workspace: r.Workspace, Warnings: r.Warnings,
	})
}

func (j *jsonSink) fail(err error) {
	j.print(&Envelope{Data: string(j.buf), Refs: []string{}, Error: catalog.ToDetail(err)})
}

func (j *jsonSink) print(e *Envelope) {
	b, _ := json.Marshal(e)
	j.w.Write(append(b, '\n'))
}

// CallerEnv is this process's environment as the daemon may see it. The
// daemon picks what a command gets (its allowlist and config); what looks
// like a credential never leaves this process.
func CallerEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !envallow.LooksLikeCredential(k, v) {
			env[k] = v
		}
	}
	return env
}
