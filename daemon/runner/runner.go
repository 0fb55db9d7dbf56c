// Package runner starts the processes tools run (safe_bash's shell) and is the seam
// where the sandbox plugs in: the daemon only sees the Runner interface, and the
// sandbox runner (namespaces, seccomp, systemd scope) replaces Direct without any
// change to the tools or the server.
package runner

import (
	"context"
	"io"
	"time"
)

// Spec is one process to run.
type Spec struct {
	Path string   // absolute path of the program
	Args []string // argv, including argv[0]
	Dir  string   // working directory (absolute)
	Env  []string // complete environment, KEY=VALUE
	// Output receives stdout and stderr interleaved, in the order they were
	// written, as they arrive. Runner calls it from one goroutine at a time.
	Output io.Writer
	// Timeout kills the process and everything it started after this long.
	Timeout time.Duration
}

// Exit is how a process ended.
type Exit struct {
	Code     int  // exit status; 128+N when killed by signal N
	TimedOut bool // killed because Timeout ran out
	Canceled bool // killed because the context ended (caller left, daemon stopping)
}

// Runner runs a process to completion. An error means the process could not be
// started or watched; how the process itself ended is in Exit.
type Runner interface {
	Run(ctx context.Context, s Spec) (Exit, error)
}
