package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/inside"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
)

// IsToolMode reports whether argv is the sandbox running a file tool.
func IsToolMode(argv []string) bool {
	return len(argv) > 0 && filepath.Base(argv[0]) == ns.ToolArgv0
}

// ToolMode runs a tool inside its sandbox (the init's func mode, or the binary
// executed in tool mode). The tool's own profile had to let
// the sandbox exec this binary; the first thing done here is to stack no_exec on
// it, so the file operation itself can never exec anything.
func ToolMode(args []string) int {
	if len(args) > 0 && args[0] == "safe_bash" {
		// safe_bash starts the shell: its deny-list profile allows exec.
		return inside.Main(args, os.Stdin, os.Stdout, os.Stderr)
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
