package daemon

import (
	"context"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/plugins"
	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/scrub"
)

// The run stage: the tool, writing its output into the response.

// run runs the admitted call's tool on what that kind of tool needs: a
// state tool on the daemon's store, a sandboxed tool on the daemon's
// sandbox. A page runs no tool (its output is stored): it gets the way to
// read a hole of that output again, which the respond stage calls when the
// page covers one.
func (s *service) run(ctx context.Context, adm *admission, resp *response) toolcall.Outcome {
	switch {
	case adm.state != nil:
		return adm.state.Run(ctx, &state.Env{Place: adm.place, Session: adm.session, Store: adm.store,
			Out: resp.pipe, Scrub: resp.layer.Scrub, Counter: s.resp.counter})
	case adm.sandboxed != nil:
		return adm.sandboxed.Run(ctx, s.sandboxEnv(adm, resp))
	case adm.plugin != nil:
		return adm.plugin.Run(ctx, &plugins.Env{Workspace: adm.place.Root, Session: adm.session, Out: resp.pipe,
			Host: &pluginHost{log: adm.log, scrub: resp.layer.Scrub, store: s.stateStore, project: adm.place.Root,
				session: adm.session, tool: adm.c.Tool, allow: adm.plugin.Host()}})
	}
	resp.refill = s.refill(ctx, adm, resp)
	return toolcall.Outcome{}
}

// sandboxEnv is what a sandboxed tool runs on: the call's place, session
// and caller's environment, the daemon's sandbox (its runner and the
// builder of its surroundings), and the response's ends it writes into.
func (s *service) sandboxEnv(adm *admission, resp *response) *tools.Env {
	return &tools.Env{Place: adm.place, Session: adm.session, CallerEnv: adm.c.Env, HookEnv: adm.c.HookEnv,
		Config: s.opts.Config, Runner: s.opts.Runner, Sandbox: s.sandbox,
		Out: resp.pipe, Vault: resp.layer.Vault, Layer: resp.layer, Rules: s.resp.rules, Scrubber: s.resp.scrubber,
		Window: budget.Window(adm.tokens), Salience: resp.salience, Budget: adm.tokens}
}

// refill is how a page reads a hole of its output (the middle of a long
// safe_read) again from the file, in the tool's sandbox like the first
// read; the secrets in it get the placeholders of vault, the output's
// session's.
func (s *service) refill(ctx context.Context, adm *admission, resp *response) func(vault *scrub.Vault) pages.FillFunc {
	return func(vault *scrub.Vault) pages.FillFunc {
		return func(source []byte, off int64, p []byte) error {
			env := &tools.Env{Config: s.opts.Config, Runner: s.opts.Runner, Sandbox: s.sandbox, Vault: vault, Rules: s.resp.rules}
			o := tools.FillGap(ctx, env, source, off, p)
			resp.refilled = o.Layers
			adm.log.Debug("page read again", "bytes", len(p), "stages", o.Stages)
			return o.Err
		}
	}
}
