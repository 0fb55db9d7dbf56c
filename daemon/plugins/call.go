package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/wire/toolplugin"
)

// hangGrace is how long a call past its deadline may take to end before
// its instance is killed: a tool that ignores its context must not hold
// the call (nor its instance's other calls) forever.
const hangGrace = 2 * time.Second

// Env is what a plugin call runs on.
type Env struct {
	// Workspace is the call's workspace root: its instance serves it.
	Workspace string
	Session   string
	// Out receives the tool's output as it streams.
	Out io.Writer
	// Host serves the tool's ToolHost requests for this call (nil refuses
	// them).
	Host toolplugin.ToolHostServer
}

// Call is one decoded call of a plugin tool.
type Call struct {
	rt    *Runtime
	e     *entry
	input []byte
}

// Host are the daemon's services the tool's approved manifest lets it use
// (permissions.host).
func (c *Call) Host() []string { return c.e.m.Permissions.Host }

// Tool is the call's tool name.
func (c *Call) Tool() string { return c.e.tool.Name }

// Run sends the call to the tool's instance for env's workspace, starting
// it if needed, and streams its output into env.Out. The call's deadline
// is the manifest's timeout (within [plugins] max_timeout); a tool that
// overruns it by hangGrace is killed with its whole sandbox.
func (c *Call) Run(ctx context.Context, env *Env) (o toolcall.Outcome) {
	t := c.e.tool
	o = toolcall.Outcome{Plugin: &sandboxinfo.Plugin{Version: t.Version, Source: t.Source, Resolved: t.Resolved, Checksum: t.Checksum}}
	inst, note, err := c.rt.get(ctx, c.e, env.Workspace)
	if note != "" {
		o.Warnings = append(o.Warnings, note)
	}
	if err != nil {
		o.Err = err
		return o
	}
	defer inst.release()
	o.Layers, o.Plugin.Instance = inst.layers(), inst.id()
	timeout := min(c.e.m.Permissions.Timeout, c.rt.opts.Config.Plugins.MaxTimeout.Duration)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go watchdog(cctx, done, inst)
	fin, err := inst.client.Execute(cctx, toolplugin.Call{Input: c.input, Session: env.Session, Workspace: env.Workspace, Host: env.Host},
		func(b []byte) error { _, err := env.Out.Write(b); return err })
	defer func() {
		ws, gerr := inst.afterCall()
		o.Warnings = append(o.Warnings, ws...)
		if gerr != nil && o.Err == nil {
			o.Err = gerr
		}
	}()
	switch {
	case err == nil:
		c.final(fin, env.Out, &o)
	case ctx.Err() != nil:
		o.Err = fmt.Errorf("tool %s: %w", t.Name, context.Cause(ctx))
	case cctx.Err() != nil:
		// Whether the tool's own handler stopped cannot be seen from here:
		// the instance goes, with everything it still runs.
		inst.kill("a call overran its timeout")
		o.Err = fmt.Errorf("tool %s ran longer than its timeout (%s, permissions.timeout of its manifest); its instance was ended with its sandbox, the next call starts a fresh one: %w", t.Name, timeout, catalog.ErrTimeout)
	case errors.Is(err, toolplugin.ErrExited):
		inst.kill("it exited during a call")
		o.Err = fmt.Errorf("tool %s: the plugin exited during the call (%s); the next call starts a fresh one: %w", t.Name, inst.exitText(), catalog.ErrPluginExited)
	case errors.Is(err, toolplugin.ErrFailed):
		fmt.Fprintf(env.Out, "\n%s: %v\n", t.Name, err)
		o.ExitCode = 1
	default:
		o.Err = fmt.Errorf("tool %s: %v: %w", t.Name, err, catalog.ErrIO)
	}
	return o
}

// final writes what the tool returned after its output: its error, its
// data as JSON and its references, and takes its exit code.
func (c *Call) final(fin *toolplugin.Final, out io.Writer, o *toolcall.Outcome) {
	o.ExitCode = int(fin.GetExitCode())
	if e := strings.TrimSpace(fin.GetError()); e != "" {
		fmt.Fprintf(out, "\nerror: %s\n", e)
		if o.ExitCode == 0 {
			o.ExitCode = 1
		}
	}
	if d := fin.GetDataJson(); len(d) > 0 && json.Valid(d) {
		fmt.Fprintf(out, "\ndata: %s\n", d)
	}
	if refs := fin.GetRefs(); len(refs) > 0 {
		fmt.Fprintf(out, "refs: %s\n", strings.Join(refs, " "))
	}
	if fin.GetTruncated() {
		o.Warnings = append(o.Warnings, "the tool cut its own output short")
	}
}

// watchdog kills inst when the call's context ended and the call did not
// end within hangGrace.
func watchdog(ctx context.Context, done <-chan struct{}, inst *instance) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(hangGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		inst.kill("a call did not end within " + hangGrace.String() + " of its deadline")
	}
}
