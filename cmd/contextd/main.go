// Command contextd is the contextd daemon and its admin commands; see package app.
package main

import (
	"context"
	"os"

	"github.com/contextd/contextd/cmd/contextd/app"
)

func main() {
	os.Exit(app.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
