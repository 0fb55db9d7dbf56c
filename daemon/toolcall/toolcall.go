// Package toolcall is the contract between the daemon's core and a tool: decode an input, run the call, report how it ended.
package toolcall

import (
	"context"
	"fmt"
	"sort"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/workspace"
)

// Tool decodes input into a Call that runs on In, what the core hands that
// kind of tool (the sandboxed tools and the state tools need different
// things). A decode error is the caller's mistake and wraps
// catalog.ErrBadInput.
type Tool[In any] interface {
	Name() string
	Decode(input []byte) (Call[In], error)
}

// Call is a decoded, valid call, ready to run.
type Call[In any] interface {
	Run(ctx context.Context, in In) Outcome
}

// Outcome is how a run ended and what it ran under. Err is the tool's own
// failure (a missing file, a timeout), reported to the caller in the result,
// not as a protocol error.
type Outcome struct {
	ExitCode int
	Err      error
	// Layers are the sandbox layers the tool's process ran under (zero when
	// no process ran: the state tools).
	Layers sandboxinfo.Layers
	// Source is the file the output came from ("" for command output).
	Source string
	// File is the file the tool opened (safe_read) or made (safe_write),
	// as the sandbox saw it; zero when it did not say.
	File workspace.FileID
	// Findings are the tool's own scrub's catches by rule.
	Findings map[string]int
	// Warnings for the caller (not failures); the audit record has them too.
	Warnings []string
	// Egress is what went through the egress proxy the tool's process had,
	// nil when it had none: where its rules come from and each
	// connection, allowed or refused, for the audit record, and the lines
	// for the caller (how to allow a refused host), for the result only.
	Egress *sandboxinfo.Egress
	// Plugin names the plugin tool that ran (nil for contextd's own).
	Plugin *sandboxinfo.Plugin
	// Stages are the tool's own timings (ms since it started), for the
	// debug log.
	Stages map[string]float64
	// Gone is closed once the sandbox the tool ran in is torn down
	// (runner.Exit.Gone): what must outlive its mounts is released after
	// it. Nil when no sandbox ran.
	Gone <-chan struct{}
}

// Registry maps names to the tools that run on In.
type Registry[In any] struct{ tools map[string]Tool[In] }

// NewRegistry returns a registry of the given tools.
func NewRegistry[In any](ts ...Tool[In]) *Registry[In] {
	r := &Registry[In]{tools: map[string]Tool[In]{}}
	for _, t := range ts {
		r.tools[t.Name()] = t
	}
	return r
}

// Get returns the named tool; an unknown name wraps catalog.ErrUnknownTool.
func (r *Registry[In]) Get(name string) (Tool[In], error) {
	t, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("%q: %w", name, catalog.ErrUnknownTool)
	}
	return t, nil
}

// Names returns the registered names, sorted.
func (r *Registry[In]) Names() []string {
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
