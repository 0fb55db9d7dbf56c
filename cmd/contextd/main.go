// Command contextd is the contextd daemon and its admin commands; see package app.
// The same binary is the sandbox's init and the file tools' process: ns.Init and
// app.ToolMode take over when argv[0] says so.
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
	if app.IsToolMode(os.Args) {
		os.Exit(app.ToolMode(os.Args[1:]))
	}
	os.Exit(app.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
