package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/envallow"
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
	if c.in.Network && !cfg.AllowNetwork {
		return 0, "", fmt.Errorf("safe_bash: network access asked for, but tools.safe_bash.allow_network is off in the configuration: %w", catalog.ErrPolicy)
	}
	return timeout, dir, nil
}

func (c *bashCall) Run(ctx context.Context, env *Env) (o Outcome) {
	cfg := env.Config.Tools.SafeBash
	timeout, dir, err := c.settle(env)
	if err != nil {
		return Outcome{Err: err}
	}
	// The daemon's own work before and after the sandbox, stage by stage
	// (the debug log's "call stages", next to the sandbox's own).
	pre := stageClock{t: time.Now()}
	// The sandbox's init and its scope start now, while the daemon works
	// out the rest of the call's sandbox below (runner.Reserve): nothing
	// runs in it before its spec, and it is ended if the call ends first.
	reserved := runner.Reserve(ctx, env.Runner, runner.Spec{Tool: "safe_bash", Mode: runner.Tool,
		Workspace: env.Place.Root, Network: c.in.Network, Timeout: timeout, Limits: env.limits("safe_bash")})
	if reserved != nil {
		defer reserved.Cancel()
	}
	// Deferred first, so run last: the releases below are a stage too.
	defer func() { pre.into(&o) }()
	op := toolproto.Op{Tool: "safe_bash", Root: env.Place.Root, Shell: cfg.Shell, Command: c.in.Command,
		Dir: dir, Env: Environ(env)}
	// The home view depends on nothing the shield decides: it is worked
	// out meanwhile (on the other core: the two are most of the daemon's
	// own time before the sandbox). Whatever way this call returns before
	// taking it, it is waited for and released (nothing ran in it).
	homec := prepareHomeAside(env)
	homeTaken := false
	defer func() {
		if homec != nil && !homeTaken {
			if h := <-homec; h.err == nil {
				h.release()
			}
		}
	}()
	sh, err := shieldWorkspace(env.Place.Root, homeDir(), env.CallerEnv)
	// After the run (deferred first, so run last): no process of the
	// sandbox is left to see a placeholder go.
	defer func() { sh.release(); pre.mark("release_shield") }()
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_bash: %w", err)}
	}
	// Nested host-run configuration: what exists is shielded now, what
	// the command creates is set aside after it (nested.go).
	scan := scanNested(env.Place.Root)
	for _, rel := range scan.found {
		if err := sh.shieldNested(env.Place.Root, rel); err != nil {
			return Outcome{Err: fmt.Errorf("safe_bash: %w", err)}
		}
	}
	if !scan.complete {
		sh.Warnings = append(sh.Warnings, fmt.Sprintf("the workspace has more than %d directories: agent configuration below the first %d is not protected", maxScanDirs, maxScanDirs))
	}
	pre.mark("shield")
	started := time.Now()
	spec := runner.Spec{
		Dir:       dir,
		ReadOnly:  cfg.ReadOnly,
		ReadWrite: cfg.ReadWrite,
		Network:   c.in.Network,
		Timeout:   timeout,
		Reserved:  reserved,
	}
	git := gitguard.Find(env.Place.Root)
	sh.apply(env.Place.Root, git, &spec)
	warnings := sh.Warnings
	pre.mark("git")
	if homec != nil {
		h := <-homec
		homeTaken = true
		pre.add("home_prepare", h.took)
		m, release, err := h.m, h.release, h.err
		if err != nil {
			// Fail closed: a view that cannot be built as decided is not
			// replaced by a guess.
			return Outcome{Err: fmt.Errorf("safe_bash: %w", err)}
		}
		// After the sandbox, and with it every mount of the layers, is
		// gone: the result may be out before the kernel has torn its
		// namespaces down (runner.Exit.Gone), and the layers' lease must
		// not be given back while an overlay still has them mounted. On
		// an error before the run, gone is nil: at once.
		defer func() {
			m.Ending()
			runner.AfterGone(o.Gone, release)
			pre.mark("release_home")
		}()
		m.Apply(&spec)
		op.Env = netview.MergeEnv(op.Env, m.Env)
		warnings = append(warnings, m.Warnings...)
	}
	pre.mark("home")
	finish, warning, err := c.network(env, &spec, &op)
	if err != nil {
		return Outcome{Err: err}
	}
	if warning != "" {
		warnings = append(warnings, warning)
	}
	pre.mark("net")
	o = guardGit("safe_bash", env, git, func() Outcome {
		pre.mark("git_before")
		o := runSandboxed(ctx, env, op, "", spec)
		pre.mark("sandbox")
		return o
	})
	o.Warnings = append(o.Warnings, warnings...)
	// No process of the sandbox is left (its init ended them all before it
	// said so; its namespaces may still be going): what it planted can be
	// looked for.
	o.Warnings = append(o.Warnings, setAsideNested(scan, started, sh.ReadOnly)...)
	if finish != nil {
		sum := finish()
		o.Egress = &sum
	}
	pre.mark("after")
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

// Environ builds a command's environment: the caller's variables that are on the
// allowlist (envallow, plus tools.safe_bash.env) and do not look like credentials,
// and the identity variables from the daemon's own user.
func Environ(env *Env) []string {
	return CommandEnv(env.CallerEnv, env.Config.Tools.SafeBash.Env, env.Session, env.Place.Root)
}

// CommandEnv is Environ for any sandboxed program (an MCP server too): the
// caller's variables on envallow's list or on extra that do not look like
// credentials, PATH (a default when the caller has none), the daemon user's
// HOME, USER and LOGNAME, and the session and workspace.
func CommandEnv(caller map[string]string, extra []string, session, workspace string) []string {
	out := []string{}
	for k, v := range caller {
		if envallow.Pass(k, v, extra) && !strings.ContainsAny(k, "=\x00") && !strings.ContainsRune(v, 0) {
			out = append(out, k+"="+v)
		}
	}
	if _, ok := caller["PATH"]; !ok {
		out = append(out, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return append(out, "CONTEXTD_SESSION="+session, "CONTEXTD_WORKSPACE="+workspace)
}

// canceled explains why a running call was stopped.
func canceled(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
		return cause
	}
	return fmt.Errorf("call canceled by the caller: %w", catalog.ErrConnectionLost)
}

// preparedHome is the result of a call's home view, prepared beside its
// shield.
type preparedHome struct {
	m       *homemount.Mounts
	release func()
	err     error
	took    time.Duration
}

// prepareHomeAside starts preparing the call's home view in a goroutine, to
// run beside the shield: the view depends on nothing the shield decides.
// nil when the daemon shows no home view. The caller takes the result from
// the channel once, and releases it (also when it does not use it).
func prepareHomeAside(env *Env) chan preparedHome {
	if env.Home == nil {
		return nil
	}
	homec := make(chan preparedHome, 1)
	go func() {
		t := time.Now()
		m, release, err := env.Home.Prepare(homemount.Call{Home: homeDir(), Workspace: env.Place.Root, Sandbox: "safe_bash",
			CallerEnv: env.CallerEnv, Vault: env.Vault, Scrubber: env.Scrubber,
			Options: homeview.Options{PresetsOff: env.Config.Home.PresetsOff, ReadOnly: env.Config.Home.ReadOnly}})
		homec <- preparedHome{m, release, err, time.Since(t)}
	}()
	return homec
}

// network gives the call its way out: the host network when asked for (the
// explicit escape hatch, audited through the layers), else the egress
// proxy's listeners and environment, else, with no proxy, its loopback
// only and a warning saying so (a narrower sandbox, not a weaker one).
// finish, when set, sums up the proxy's connections after the run.
func (c *bashCall) network(env *Env, spec *runner.Spec, op *toolproto.Op) (finish func() netview.Summary, warning string, err error) {
	switch {
	case c.in.Network:
	case env.Net != nil:
		n, err := env.Net.Prepare(netview.Call{Tool: "safe_bash", Vault: env.Vault})
		if err != nil {
			return nil, "", fmt.Errorf("safe_bash: %w", err)
		}
		op.Env = n.Apply(spec, op.Env)
		return n.Finish, "", nil
	case env.NetErr != nil:
		return nil, fmt.Sprintf("no egress proxy (%v): the command has no network beyond its own loopback", env.NetErr), nil
	}
	return nil, "", nil
}
