package install

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolstore"
)

// InstallUsage and UninstallUsage are the synopses the errors and help print.
const (
	InstallUsage   = "contextd-proxy install [--agent auto|claude|codex|gemini|opencode|none] [--project DIR] [--force] [--no-trust] [--yes] [--tools NAME,... | --no-plugins] [TOOLS-DIR]"
	UninstallUsage = "contextd-proxy uninstall [--project DIR]"
)

// ParseInstallArgs reads the arguments of `contextd-proxy install`. The one
// positional argument is the tools directory (default .claude/tools below
// the project).
func ParseInstallArgs(args []string) (Options, bool, error) {
	return parseArgs(args, true)
}

// ParseUninstallArgs reads the arguments of `contextd-proxy uninstall`.
func ParseUninstallArgs(args []string) (Options, bool, error) {
	return parseArgs(args, false)
}

// parseArgs returns the options and whether --help was asked for.
func parseArgs(args []string, install bool) (Options, bool, error) {
	var o Options
	usage := UninstallUsage
	if install {
		usage = InstallUsage
		o.Agent = AgentAuto
	}
	bad := func(format string, a ...any) (Options, bool, error) {
		return Options{}, false, fmt.Errorf("%s; usage: %s: %w", fmt.Sprintf(format, a...), usage, catalog.ErrUsage)
	}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		value := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case name == "--help" || name == "-h":
			return o, true, nil
		case name == "--project":
			v, ok := value()
			if !ok || v == "" {
				return bad("--project needs a directory")
			}
			o.Project = v
		case install && name == "--agent":
			v, ok := value()
			if !ok {
				return bad("--agent needs %s", agentNames)
			}
			if !knownAgent(v) {
				return bad("unknown agent %q (%s)", v, agentNames)
			}
			o.Agent = v
		case install && name == "--force" && !hasVal:
			o.Force = true
		case install && name == "--no-trust" && !hasVal:
			o.NoTrust = true
		case install && name == "--yes" && !hasVal:
			o.Yes = true
		case install && name == "--no-plugins" && !hasVal:
			o.NoPlugins = true
		case install && name == "--tools":
			v, ok := value()
			if !ok {
				return bad("--tools needs the plugin tools to enable, NAME,NAME (--no-plugins for none)")
			}
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n == "" {
					continue
				}
				if err := toolstore.CheckName(n); err != nil {
					return bad("--tools: %v", err)
				}
				o.Tools = append(o.Tools, n)
			}
			if o.Tools == nil {
				return bad("--tools needs the plugin tools to enable, NAME,NAME (--no-plugins for none)")
			}
		default:
			return bad("unknown option %s", a)
		}
	}
	switch {
	case o.NoPlugins && o.Tools != nil:
		return bad("--tools and --no-plugins contradict each other")
	case len(positional) > 1 || (!install && len(positional) > 0):
		return bad("too many arguments")
	case len(positional) == 1:
		switch o.Agent {
		case AgentOpenCode, AgentCodex, AgentGemini:
			return bad("--agent %s writes no tools, so it takes no tools directory", o.Agent)
		case AgentAuto:
			// A tools directory is what Claude Code uses: as before auto.
			o.Agent = AgentClaude
		}
		o.ToolsDir = positional[0]
	}
	return o, false, nil
}

// Ask returns a Confirm that shows the foreign entries on out and reads the
// user's answer from in (a terminal): only "y" or "yes" adopts them.
func Ask(in io.Reader, out io.Writer) func([]string) bool {
	return func(foreign []string) bool {
		fmt.Fprintln(out, "contextd-proxy: this project holds agent configuration contextd did not write;")
		fmt.Fprintln(out, "the agent runs it once install wires (and trusts) the project. An agent may have planted it:")
		for i, f := range foreign {
			if i == maxForeignShown {
				fmt.Fprintf(out, "  (and %d more)\n", len(foreign)-i)
				break
			}
			fmt.Fprintln(out, "  "+f)
		}
		fmt.Fprint(out, "Adopt it and trust the project? [y/N] ")
		line, _ := bufio.NewReader(in).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true
		}
		return false
	}
}
