package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/workspace"
)

// SafeBash runs a bash command line in the workspace.
type SafeBash struct{}

// Name implements Tool.
func (SafeBash) Name() string { return "safe_bash" }

// BashInput is safe_bash's input (toolspec/safe_bash/schema.json).
type BashInput struct {
	Command string `json:"command"`
	Timeout *int   `json:"timeout,omitempty"` // seconds
	Cwd     string `json:"cwd,omitempty"`
	Network bool   `json:"network,omitempty"` // host network, if the config allows it
}

// Decode implements Tool.
func (SafeBash) Decode(input []byte) (Call, error) {
	var in BashInput
	if err := decodeStrict("safe_bash", input, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, missing("safe_bash", "command")
	}
	if strings.IndexByte(in.Command, 0) >= 0 {
		return nil, fmt.Errorf("safe_bash: command contains a NUL byte: %w", catalog.ErrBadInput)
	}
	if in.Timeout != nil && *in.Timeout < 1 {
		return nil, fmt.Errorf("safe_bash: timeout must be at least 1 second: %w", catalog.ErrBadInput)
	}
	return &bashCall{in}, nil
}

type bashCall struct{ in BashInput }

// settle checks the call against the configuration and gives its time
// limit and working directory.
func (c *bashCall) settle(env *Env) (timeout time.Duration, dir string, err error) {
	cfg := env.Config.Tools.SafeBash
	timeout = cfg.DefaultTimeout.Duration
	if c.in.Timeout != nil {
		timeout = time.Duration(*c.in.Timeout) * time.Second
		if timeout > cfg.MaxTimeout.Duration {
			return 0, "", fmt.Errorf("safe_bash: timeout %ds is above the configured maximum %s: %w",
				*c.in.Timeout, cfg.MaxTimeout, catalog.ErrPolicy)
		}
	}
	dir = env.Place.Cwd
	if c.in.Cwd != "" {
		d, err := confinedDir(env, c.in.Cwd)
		if err != nil {
			return 0, "", fmt.Errorf("safe_bash: cwd: %w", err)
		}
		dir = d
	}
	return timeout, dir, nil
}

func (c *bashCall) Run(ctx context.Context, env *Env) (o Outcome) {
	timeout, dir, err := c.settle(env)
	if err != nil {
		return Outcome{Err: err}
	}
	// The daemon's own work before and after the sandbox, stage by stage
	// (the debug log's "call stages", next to the sandbox's own).
	pre := &stageClock{t: time.Now()}
	req := sandboxenv.Request{Kind: sandboxenv.Shell, Name: "safe_bash", Workspace: env.Place.Root, Session: env.Session,
		CallerEnv: env.CallerEnv, HookEnv: env.HookEnv, Vault: env.Vault, Scrubber: env.Scrubber, HostNetwork: c.in.Network, Clock: pre}
	// A call the configuration refuses starts nothing.
	limits, err := env.Sandbox.Limits(req)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_bash: %w", err)}
	}
	// The sandbox's init and its scope start now, while the daemon works
	// out the rest of the call's sandbox below (runner.Reserve): nothing
	// runs in it before its spec, and it is ended if the call ends first.
	reserved := runner.Reserve(ctx, env.Runner, runner.Spec{Tool: "safe_bash", Mode: runner.Tool,
		Workspace: env.Place.Root, Network: c.in.Network, Timeout: timeout, Limits: limits})
	if reserved != nil {
		defer reserved.Cancel()
	}
	// Deferred first, so run last: the releases below are a stage too.
	defer func() { pre.into(&o) }()
	sb, err := env.Sandbox.Build(req)
	// After the run: no process of the sandbox is left (its init ended
	// them all before it said so); its mounts may still be going, and
	// what they hold is given back once they are (runner.Exit.Gone). On
	// an error before the run, gone is nil: at once.
	defer func() {
		sb.Ending()
		sb.Release(o.Gone)
		pre.Mark("release")
	}()
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_bash: %w", err)}
	}
	spec := runner.Spec{Dir: dir, Timeout: timeout, Reserved: reserved}
	sb.Apply(&spec)
	op := toolproto.Op{Tool: "safe_bash", Root: env.Place.Root, Shell: env.Config.Tools.SafeBash.Shell, Command: c.in.Command,
		Dir: dir, Env: sb.Vars}
	o = guardGit("safe_bash", env, sb.Git, func() Outcome {
		pre.Mark("git_before")
		o := runSandboxed(ctx, env, op, "", spec)
		pre.Mark("sandbox")
		return o
	})
	o.Warnings = append(o.Warnings, sb.Warnings...)
	// No process of the sandbox is left (its init ended them all before it
	// said so; its namespaces may still be going): what it planted can be
	// looked for.
	o.Warnings = append(o.Warnings, sb.SetAside()...)
	o.Egress = sb.Finish()
	pre.Mark("after")
	return o
}

// confinedDir resolves a directory the caller named and proves it lies inside the
// workspace by opening it through the confined lookup.
func confinedDir(env *Env, p string) (string, error) {
	rel, err := env.Place.Resolve(p)
	if err != nil {
		return "", err
	}
	root, err := workspace.Open(env.Place.Root)
	if err != nil {
		return "", err
	}
	defer root.Close()
	return root.DirPath(rel)
}

// canceled explains why a running call was stopped.
func canceled(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
		return cause
	}
	return fmt.Errorf("call canceled by the caller: %w", catalog.ErrConnectionLost)
}
