package daemon

import (
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/sandboxinfo"
)

// The core's own types. A call arrives over the light protocol (lite.go, the
// daemon's native one), over gRPC (grpc.go, the typed public API) or over
// HTTP (http.go, for automations); each converts to and from these at its
// edge, and everything between admit and account (service.go and a file per
// stage) works on them alone.

// Call is one tool call, or one page of an earlier call's output.
type Call struct {
	Tool  string
	Input []byte // the tool's JSON input (schema.json); unused for a page
	// Session is the session the caller names; "" derives it from the
	// calling process (session.Derive).
	Session string
	Cwd     string // the caller's working directory: finds the workspace
	// Continue is a page reference: the call asks for that page of a stored
	// output instead of running the tool.
	Continue string
	// Env is the caller's environment, already reduced to the allowlist by
	// the proxy (envallow).
	Env map[string]string
	// HookEnv are the CONTEXTD_HOOK_* variables of a webhook's call, set
	// by the daemon itself (hook.go); no other edge sets them.
	HookEnv map[string]string
	// MaxTokens asks for less than the tool's configured budget (0: the
	// configured one).
	MaxTokens int
	// ID names the call where an edge keeps it for later ("": the edge
	// keeps none); its audit record carries it.
	ID string
	// Via is the edge the call came through when it is not the proxy's
	// socket: "http", or "hook:NAME" for a webhook's run.
	Via string
}

// Result is how a call ended. A refusal before the tool ran is not a Result
// but the error the service returns; a failure of the tool itself (a missing
// file, a timeout) is Error here, and the call's output is still delivered.
type Result struct {
	ExitCode int
	// Error is the tool's own failure, its message scrubbed.
	Error     *catalog.Detail
	Session   string
	Workspace string
	// TokensUsed is the exact count of what the caller received.
	TokensUsed int
	// Truncated: something was left out, and Continue is the reference of
	// the next page.
	Truncated bool
	Continue  string
	Warnings  []string
	// Sandbox is what the tool's process ran under; the zero value when no
	// process ran (the state tools, a page from the store).
	Sandbox sandboxinfo.Layers
}

// sandboxed reports whether l describes a sandbox that ran.
func sandboxed(l sandboxinfo.Layers) bool { return l.Namespaces || l.Seccomp != "" || l.Scope != "" }
