// Package sandboxinfo is the one record of which sandbox layers a call ran under.
package sandboxinfo

// Layers are the sandbox layers a process ran under, as the runner applied
// them, for the response, the log and the audit record: a missing layer is
// never silent. The zero value is no sandbox at all (no process ran, or the
// tests' unsandboxed runner).
//
// Its JSON is the light protocol's. The audit log writes the same fields in
// a form of its own (audit.Sandbox), and gRPC has its generated twin
// (wire.Sandbox), converted at that edge only (daemon/grpc.go).
type Layers struct {
	Namespaces bool   `json:"namespaces"`           // user/mount/pid/ipc/uts/cgroup (+net) namespaces
	Seccomp    string `json:"seccomp,omitempty"`    // where the seccomp profile came from ("" = none)
	Scope      string `json:"scope,omitempty"`      // transient systemd scope unit ("" = none)
	ScopeNote  string `json:"scope_note,omitempty"` // why there was no scope, when there was none
	Network    bool   `json:"network,omitempty"`    // host network shared (opt-in)
}

// Plugin names the installed plugin tool a call ran, for its audit record:
// what the lock pinned when the tool was approved.
type Plugin struct {
	Version  string `json:"version,omitempty"`
	Source   string `json:"source"`
	Resolved string `json:"resolved"` // "git:<commit>", "sha256:<hex>" of an archive, "tree:<hex>"
	Checksum string `json:"checksum"` // the installed tree's, checked before the instance started
	Instance string `json:"instance,omitempty"`
}
