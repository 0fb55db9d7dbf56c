package app

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/contextd/contextd/catalog"
	fetchinside "github.com/contextd/contextd/daemon/toolfetch/inside"
	"github.com/contextd/contextd/daemon/tools/inside"
	"github.com/contextd/contextd/profiles"
)

// ToolMode runs a tool inside its sandbox, as the init's func hook
// (ns.Hooks.Func). The file tools' own profiles admit execve and execveat
// (a sandbox may start a tool by exec); the first thing done here is to stack
// no_exec on them, so the file operation itself can never exec anything.
func ToolMode(args []string) int {
	if len(args) > 0 && args[0] == "safe_bash" {
		// safe_bash starts the shell: its deny-list profile allows exec.
		return inside.Main(args, os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == fetchinside.OpName {
		// A tool's fetch starts git: its profile (tool_fetch) allows exec.
		return fetchinside.Main(os.Stdin, os.Stdout, os.Stderr)
	}
	p, err := profiles.Embedded("no_exec")
	if err == nil {
		err = p.Load()
	}
	if err != nil {
		b, _ := json.Marshal(catalog.ToDetail(fmt.Errorf("tool mode: load no_exec profile: %v: %w", err, catalog.ErrSandbox)))
		os.Stderr.Write(append(b, '\n'))
		return catalog.ErrSandbox.Exit
	}
	return inside.Main(args, os.Stdin, os.Stdout, os.Stderr)
}
