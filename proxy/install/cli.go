package install

import (
	"fmt"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// InstallUsage and UninstallUsage are the synopses the errors and help print.
const (
	InstallUsage   = "contextd-proxy install [--agent claude|opencode|none] [--project DIR] [--force] [TOOLS-DIR]"
	UninstallUsage = "contextd-proxy uninstall [--project DIR]"
)

// ParseInstallArgs reads the arguments of `contextd-proxy install`. The one
// positional argument is the tools directory, as before --agent existed.
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
				return bad("--agent needs claude, opencode or none")
			}
			switch v {
			case AgentClaude, AgentOpenCode, AgentNone:
				o.Agent = v
			default:
				return bad("unknown agent %q (claude, opencode or none)", v)
			}
		case install && name == "--force" && !hasVal:
			o.Force = true
		default:
			return bad("unknown option %s", a)
		}
	}
	switch {
	case len(positional) > 1 || (!install && len(positional) > 0):
		return bad("too many arguments")
	case len(positional) == 1:
		if o.Agent == AgentOpenCode {
			return bad("--agent opencode writes no tools, so it takes no tools directory")
		}
		o.ToolsDir = positional[0]
	}
	return o, false, nil
}
