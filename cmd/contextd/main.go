// Command contextd is the contextd daemon and its admin commands; see package app.
// The same binary is the sandbox's init, in which the tools run: ns.InitWith
// takes over when argv[0] says so, and runs them through app.ToolMode.
package main

import (
	"context"
	"os"

	"github.com/contextd/contextd/cmd/contextd/app"
	"github.com/contextd/contextd/daemon/tools/inside"
	"github.com/contextd/contextd/ns"
)

func main() {
	// Returns unless this process is a sandbox init. Tools run in the init
	// itself (func mode); a pooled init builds the scrubber while it waits.
	ns.InitWith(ns.Hooks{Func: app.ToolMode, Warm: inside.Warm})
	os.Exit(app.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
