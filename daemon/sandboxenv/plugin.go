package sandboxenv

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/shield"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/toolmanifest"
)

// ToolRoot is where a plugin tool's installed tree is shown, read-only.
// The tree itself lies in the tool store, which the credential deny-list
// hides from every sandbox (its own included): a bind at a path of the
// sandbox's /tmp shows it without lifting the mask.
const ToolRoot = "/tmp/.contextd-tool"

// PluginRequest is one plugin tool instance's side. An instance serves one
// workspace for many calls and sessions, so nothing in it is a session's:
// its credentials' placeholders come from a vault of its own.
type PluginRequest struct {
	Name      string // the tool
	Workspace string // the root of the workspace the instance serves
	// Access is how much of the workspace it sees, as its approved
	// manifest asks (already checked against the configuration).
	Access toolmanifest.Access
	// Scratch is an empty directory of the instance's own: its writable
	// directory when Access is not read-write.
	Scratch string
	// Tree is the tool's installed tree, shown at ToolRoot.
	Tree string
	// ReadOnly are the manifest's extra host paths.
	ReadOnly []string
	// Egress are the manifest's rules, compiled: the instance reaches
	// these and nothing else.
	Egress []egress.Rule
	// Credentials name the credential_env variables the instance sees as
	// placeholders.
	Credentials []string
	Limits      runner.Limits
	Vault       *scrub.Vault
}

// Plugin builds a plugin instance's surroundings: the workspace as its
// manifest asks (shielded when writable, its deny-list masked when shown
// read-only, not shown at all for none), an empty home, the tool's tree at
// ToolRoot, and the egress proxy with the manifest's rules alone. Release
// must be called once the instance is gone, also when err is not nil.
func (b *Builder) Plugin(req PluginRequest) (e *Env, err error) {
	e = &Env{Why: map[string]string{}}
	if b == nil {
		return e, fmt.Errorf("no sandbox builder for tool %s: %w", req.Name, catalog.ErrSandbox)
	}
	if !filepath.IsAbs(req.Tree) || !filepath.IsAbs(req.Workspace) || !filepath.IsAbs(req.Scratch) {
		return e, fmt.Errorf("tool %s: tree, workspace and scratch must be absolute paths: %w", req.Name, catalog.ErrInternal)
	}
	dir := req.Workspace
	e.Spec = runner.Spec{Workspace: req.Workspace, Home: b.HomeDir, ReadOnly: append([]string{}, req.ReadOnly...), Limits: req.Limits,
		Binds: []runner.Bind{{Source: req.Tree, Target: ToolRoot}}}
	for _, p := range req.ReadOnly {
		e.Why[p] = "permissions.read_only of the tool's manifest"
	}
	e.Why[ToolRoot] = "the tool's installed tree"
	switch req.Access {
	case toolmanifest.AccessReadWrite:
		if e.shield, err = shield.Writable(req.Workspace, b.HomeDir, nil); e.shield != nil {
			e.releaseNow = e.shield.Release
		}
		if err != nil {
			return e, err
		}
		// Agent configuration in nested directories: what exists is
		// shielded for the instance's life, what a call creates is set
		// aside after it (Env.SetAside), as for safe_bash.
		if err := e.shieldNested(req.Workspace); err != nil {
			return e, err
		}
		e.Git = gitguard.Find(req.Workspace)
		e.shield.Apply(req.Workspace, e.Git, &e.Spec)
		e.Warnings = append(e.Warnings, e.shield.Warnings...)
	case toolmanifest.AccessReadOnly:
		sh, err := shield.ForReading(req.Workspace, b.HomeDir, nil)
		if sh != nil {
			defer sh.Release()
		}
		if err != nil {
			return e, err
		}
		e.Spec.Workspace = req.Scratch
		e.Spec.ReadOnly = append([]string{req.Workspace}, e.Spec.ReadOnly...)
		e.Spec.Masks = append(e.Spec.Masks, sh.Masks...)
		e.Why[req.Workspace] = "the workspace, read-only (permissions.workspace)"
	default:
		e.Spec.Workspace, dir = req.Scratch, req.Scratch
	}
	e.Vars = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + b.HomeDir,
		"CONTEXTD_TOOL_ROOT=" + ToolRoot, "CONTEXTD_WORKSPACE=" + dir}
	if u := os.Getenv("USER"); u != "" {
		e.Vars = append(e.Vars, "USER="+u, "LOGNAME="+u)
	}
	if err := b.pluginNet(req, e); err != nil {
		return e, err
	}
	return e, nil
}

// pluginNet gives the instance the proxy with its manifest's rules alone,
// or its loopback only when it asks for no rule (or there is no proxy: then
// a tool that asked for rules is refused, since what it was approved for
// cannot be given).
func (b *Builder) pluginNet(req PluginRequest, e *Env) error {
	if len(req.Egress) == 0 && len(req.Credentials) == 0 {
		return nil
	}
	if b.Net == nil {
		return fmt.Errorf("tool %s asks for the network, but the egress proxy is not available (%v): %w", req.Name, b.NetErr, catalog.ErrSandbox)
	}
	n, err := b.Net.Prepare(netview.Call{Tool: "tool:" + req.Name, Vault: req.Vault, Only: true, Extra: req.Egress,
		Credentials: req.Credentials, AllowHint: "add the host to permissions.egress in the tool's contextd-tool.toml (within [plugins] allow_egress of ~/.config/contextd/config.toml), then `contextd tool update " + req.Name + "`"})
	if err != nil {
		return err
	}
	e.net = n
	e.Vars = n.Apply(&e.Spec, e.Vars)
	return nil
}
