// Package tools is the daemon's half of each tool: decode, policy, plan and the sandboxed run.
package tools

import (
	"fmt"
	"io"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// Env is what a sandboxed tool runs on: the call's place and session, the
// daemon's sandbox (its runner, home view and egress proxy) and the
// response's ends the tool writes into. What the call produced besides its
// output comes back in its Outcome.
type Env struct {
	Place   workspace.Place
	Session string
	// CallerEnv is the caller's environment as the proxy sent it, already reduced
	// to the allowlist (see Environ).
	CallerEnv map[string]string
	// HookEnv are an automation's CONTEXTD_HOOK_* variables (a webhook's
	// call only): the command gets them besides the caller's.
	HookEnv map[string]string
	Config  *config.Config
	Runner  runner.Runner
	// Out receives the tool's output as it is produced, already scrubbed by the
	// tool (placeholders in place of secrets).
	Out io.Writer
	// Vault numbers the session's secrets (placeholders) and gives them back
	// to safe_write.
	Vault *scrub.Vault
	// Layer is the daemon's own scrub of this call's output; a tool that reads
	// a file sets its Source before any output, so that a secret the daemon
	// catches is tied to the file it came from.
	Layer *respond.Layer
	// Rules is the user's extra gitleaks configuration, for the tool's scrub.
	Rules string
	// Window is how much of each end of a long output the tool scrubs itself
	// (the part a first response can show).
	Window int
	// Salience is the salience pass's rules, for a tool that runs it in
	// its sandbox (safe_read's middle); nil when the pass is off.
	Salience *salience.Set
	// Budget is the call's response budget in tokens (what the daemon will
	// let out); a tool may use it to shape its output.
	Budget int
	// Scrubber is the daemon's scrubber (default and user rules), for what
	// the daemon itself shows a call (the scrubbed configuration copies).
	Scrubber *scrub.Scrubber
	// Sandbox builds what a sandboxed tool's process sees beyond the
	// system: the shield, $HOME, the network, the limits.
	Sandbox *sandboxenv.Builder
}

// The contract's types (daemon/toolcall) as the sandboxed tools have them:
// they run on *Env.
type (
	Tool     = toolcall.Tool[*Env]
	Call     = toolcall.Call[*Env]
	Outcome  = toolcall.Outcome
	Registry = toolcall.Registry[*Env]
)

// Default returns the registry of every built-in sandboxed tool.
func Default() *Registry { return toolcall.NewRegistry[*Env](SafeBash{}, SafeRead{}, SafeWrite{}) }

// decodeStrict is toolcall.DecodeStrict with null values allowed (they leave
// an option at its default).
func decodeStrict(name string, input []byte, v any) error {
	return toolcall.DecodeStrict(name, input, v, false)
}

func missing(tool, field string) error {
	return fmt.Errorf("%s: %q is required: %w", tool, field, catalog.ErrBadInput)
}
