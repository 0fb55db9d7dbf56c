// Command contextd-proxy-mcp serves `contextd-proxy mcp` (see package
// proxy/mcpserve); contextd-proxy executes it, so that the MCP SDK's start-up
// cost stays out of every tool call made through a symlink.
package main

import (
	"context"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/proxy/mcpserve"
)

func main() {
	// The client ends a stdio server by closing its stdin or with SIGTERM;
	// both end the session cleanly, and a call in flight is canceled (the
	// daemon then kills what it runs).
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM)
	code := mcpserve.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
