// Command contextd-proxy is the agent side of contextd; see package proxy.
package main

import (
	"context"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/proxy"
)

func main() {
	// SIGINT/SIGTERM cancel the call; the daemon then kills what it was running.
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM)
	code := proxy.Main(ctx, os.Args, proxy.StdIO())
	stop()
	os.Exit(code)
}
