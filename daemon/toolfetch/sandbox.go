package toolfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/egress"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
)

// The sandboxes' tool names: their seccomp profiles and scopes.
const (
	FetchTool = "tool_fetch"
	BuildTool = "tool_build"
)

// sandboxLimits bound the fetch's and the build's sandboxes; their /tmp is
// charged to the memory bound too.
var sandboxLimits = runner.Limits{MemoryMax: 2 << 30, TasksMax: 512}

// basePath is the sandboxes' PATH: the system's, and Go where Debian's
// golang packages and go.dev's tarball put it.
const basePath = "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"

// fetch runs the fetch of src in a sandbox whose only way out is src's
// host:port (none for a local source, which is shown read-only instead),
// into st's tree.
func (in *Installer) fetch(ctx context.Context, src *toolsrc.Source, st *staging) (toolsrc.Result, error) {
	var res toolsrc.Result
	lim := in.Config.Plugins
	op := toolsrc.Op{Source: src.Locked(), Dest: st.tree, Work: st.work, MaxBytes: int64(lim.FetchMaxBytes),
		MaxFiles: lim.FetchMaxFiles, Timeout: lim.FetchTimeout.Duration}
	var out, errOut bytes.Buffer
	spec := runner.Spec{Tool: FetchTool, Mode: runner.Tool, Args: []string{FetchTool},
		Dir: st.dir, Workspace: st.dir, Home: in.Home, Env: []string{"PATH=" + basePath, "HOME=" + in.Home},
		Output: &out, Stderr: &errOut, Timeout: lim.FetchTimeout.Duration + 10*time.Second, Limits: sandboxLimits}
	if p := src.LocalPath(); p != "" {
		spec.ReadOnly = []string{p}
	}
	var sum func() netview.Summary
	if rule := src.Rule(); rule != "" {
		if in.Net == nil {
			return res, fmt.Errorf("tool fetch: %s needs the network, and there is no egress proxy (%v): %w", src.Locked(), in.NetErr, catalog.ErrSandbox)
		}
		r, err := egress.ParseRule(rule, "tool install "+src.Locked())
		if err != nil {
			return res, fmt.Errorf("tool fetch: source host %s: %v: %w", rule, err, catalog.ErrBadInput)
		}
		n, err := in.Net.Prepare(netview.Call{Tool: FetchTool, Vault: scrub.NewVault(), Extra: []egress.Rule{r}, Only: true,
			AllowHint: "a tool's fetch reaches its source's host only"})
		if err != nil {
			return res, err
		}
		spec.Env = n.Apply(&spec, spec.Env)
		sum = n.Finish
	}
	op.Env = spec.Env
	stdin, err := json.Marshal(op)
	if err != nil {
		return res, fmt.Errorf("tool fetch: %v: %w", err, catalog.ErrInternal)
	}
	spec.Stdin = stdin
	ex, err := in.run(ctx, spec)
	if sum != nil {
		sum()
	}
	if err != nil {
		return res, err
	}
	if err := exitErr("fetch", ex, errOut.Bytes()); err != nil {
		return res, err
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("tool fetch: its report %q: %v: %w", trim(out.String()), err, catalog.ErrInternal)
	}
	return res, nil
}

// run runs spec, refusing to go on without the layers the installer
// demands: namespaces and a seccomp profile always (fail closed).
func (in *Installer) run(ctx context.Context, spec runner.Spec) (runner.Exit, error) {
	var layers sandboxinfo.Layers
	spec.Started = func(l sandboxinfo.Layers) { layers = l }
	ex, err := in.Runner.Run(ctx, spec)
	if err != nil {
		return ex, err
	}
	if ex.Layers.Namespaces || layers.Namespaces {
		layers = ex.Layers
	}
	if !layers.Namespaces || layers.Seccomp == "" {
		return ex, fmt.Errorf("tool %s: the sandbox ran without namespaces or seccomp (%+v): %w", spec.Tool, layers, catalog.ErrSandbox)
	}
	if layers.Scope == "" && in.Log != nil {
		in.Log("note: %s ran without a systemd scope (%s): bounded by its time limit and rlimits only", spec.Tool, layers.ScopeNote)
	}
	return ex, nil
}

// exitErr is the sandboxed step's failure: the catalog error it wrote on
// stderr as JSON, or its exit status.
func exitErr(what string, ex runner.Exit, stderr []byte) error {
	switch {
	case ex.TimedOut:
		return fmt.Errorf("tool %s: took longer than its limit ([plugins] %s_timeout): %w", what, what, catalog.ErrTimeout)
	case ex.Canceled:
		return fmt.Errorf("tool %s: interrupted: %w", what, catalog.ErrInterrupted)
	case ex.Code == 0:
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	var d catalog.Detail
	if what == "fetch" && json.Unmarshal([]byte(lines[len(lines)-1]), &d) == nil && d.Code != "" {
		return catalog.FromDetail(&d)
	}
	return fmt.Errorf("tool %s: exited %d: %s: %w", what, ex.Code, trim(string(stderr)), catalog.ErrLaunch)
}

// trim keeps the end of a step's output for a message.
func trim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// build runs the manifest's build command once, in the staged tree (read
// and write), with a fresh home of its own for the toolchain's caches and
// no network: a Go tool builds from its vendor directory with the local
// toolchain.
func (in *Installer) build(ctx context.Context, argv []string, st *staging) error {
	home := filepath.Join(st.dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return fmt.Errorf("tool build: %v: %w", err, catalog.ErrIO)
	}
	prog, err := lookPath(argv[0], st.tree)
	if err != nil {
		return err
	}
	env := []string{"PATH=" + basePath, "HOME=" + in.Home, "LANG=C.UTF-8",
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=vendor", "GOPROXY=off", "GOSUMDB=off", "GOTELEMETRY=off",
		"GOCACHE=" + filepath.Join(in.Home, ".cache", "go-build"), "GOPATH=" + filepath.Join(in.Home, "go"),
		"GOMODCACHE=" + filepath.Join(in.Home, "go", "pkg", "mod"), "XDG_CACHE_HOME=" + filepath.Join(in.Home, ".cache")}
	var out bytes.Buffer
	spec := runner.Spec{Tool: BuildTool, Mode: runner.Exec, Path: prog, Args: argv, Dir: st.tree,
		Workspace: st.tree, Home: in.Home, HomeDir: home, Env: env, Output: &out,
		Timeout: in.Config.Plugins.BuildTimeout.Duration, Limits: sandboxLimits}
	// The build's way out: the package registries, read-only, and nothing
	// else (no proxy at all when none is configured or found).
	if in.Net != nil {
		if regs := in.Net.Registries(); len(regs) > 0 {
			n, err := in.Net.Prepare(netview.Call{Tool: BuildTool, Vault: scrub.NewVault(), Extra: regs, Only: true,
				AllowHint: "a tool's build reaches the package registries only (read-only); vendor what it needs"})
			if err != nil {
				return err
			}
			spec.Env = n.Apply(&spec, spec.Env)
			defer n.Finish()
		}
	}
	ex, err := in.run(ctx, spec)
	if err != nil {
		return err
	}
	if err := exitErr("build", ex, out.Bytes()); err != nil {
		return err
	}
	if err := os.RemoveAll(home); err != nil {
		return fmt.Errorf("tool build: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

// lookPath finds the build's program: a path in the tree when it has a
// slash, else on the sandbox's PATH.
func lookPath(name, tree string) (string, error) {
	if strings.Contains(name, "/") {
		if filepath.IsAbs(name) {
			return name, nil
		}
		return filepath.Join(tree, name), nil
	}
	for _, d := range filepath.SplitList(basePath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("tool build: %q is not on the build's PATH (%s): %w", name, basePath, catalog.ErrNotFound)
}
