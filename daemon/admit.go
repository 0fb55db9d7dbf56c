package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/plugins"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/workspace"
)

// The admit stage: whether a call may run, and on what.

// admission is what admit decided: the call may run, on this input and
// within this budget.
type admission struct {
	c       Call
	cred    peer.Cred
	session string // known from early on, for the records of refusals
	// place is the call's workspace; zero for a page, which reads a
	// stored output.
	place workspace.Place
	// The decoded call: a sandboxed tool's or a state tool's, and neither
	// for a page.
	sandboxed toolcall.Call[*tools.Env]
	state     toolcall.Call[*state.Env]
	plugin    *plugins.Call
	store     store.Store    // a state tool's store
	warnings  []string       // admit's own, for the Result (the tool adds its own)
	tokens    int            // the response budget
	branches  []store.Branch // the session's open branches, charged by account
	log       *slog.Logger
}

// page reports whether the call asks for a page of an earlier output.
func (a *admission) page() bool { return a.c.Continue != "" }

// admit checks a call before anything runs: the tool and its input, the
// session, the workspace, the budget (the tool's, less if asked, less if an
// open branch has less left) and, for a state tool, its store. A page has
// no input and no workspace of its own: its session and budget are checked
// the same way (pages read inside a branch count against it like any
// response).
func (s *service) admit(ctx context.Context, c Call, cred peer.Cred) (*admission, error) {
	adm := &admission{c: c, cred: cred}
	var err error
	if !adm.page() {
		if err = s.decode(adm); err != nil {
			return adm, err
		}
	}
	if adm.session, err = sessionOf(c, cred); err != nil {
		return adm, err
	}
	if !adm.page() {
		if adm.place, err = workspace.Find(c.Cwd, s.opts.Config.WorkspaceMarkers); err != nil {
			return adm, err
		}
		if adm.plugin != nil {
			if err = s.opts.Tools.Plugins.Enabled(c.Tool, adm.place.Root); err != nil {
				return adm, err
			}
		}
	}
	adm.log = s.opts.Logger.With("tool", c.Tool, "peer_pid", cred.PID, "peer_uid", cred.UID, "session", adm.session)
	ceiling := s.opts.Config.MaxTokens(c.Tool)
	if adm.plugin != nil {
		ceiling = s.opts.Config.Plugins.MaxTokens
	}
	tokens, warn, err := budgetFor(c.Tool, ceiling, c.MaxTokens)
	if err != nil {
		return adm, err
	}
	if warn != "" {
		adm.warnings = append(adm.warnings, warn)
	}
	if adm.branches, adm.tokens, err = s.branchGate(ctx, adm.session, c.Tool, tokens); err != nil {
		return adm, err
	}
	if adm.state != nil {
		// A store that cannot be opened refuses the call with the reason
		// (a locked file, a Qdrant server down).
		if adm.store, err = s.stateStore(ctx); err != nil {
			return adm, err
		}
	}
	return adm, nil
}

// decode finds the call's tool, among the state tools or the sandboxed
// ones, and decodes its input.
func (s *service) decode(adm *admission) error {
	var err error
	switch {
	case s.opts.Tools.isState(adm.c.Tool):
		adm.state, err = decodeWith(s.opts.Tools.State, adm.c)
	case s.opts.Tools.isPlugin(adm.c.Tool):
		adm.plugin, err = s.opts.Tools.Plugins.Decode(adm.c.Tool, adm.c.Input)
	default:
		adm.sandboxed, err = decodeWith(s.opts.Tools.Sandboxed, adm.c)
	}
	return err
}

func decodeWith[In any](r *toolcall.Registry[In], c Call) (toolcall.Call[In], error) {
	t, err := r.Get(c.Tool)
	if err != nil {
		return nil, err
	}
	return t.Decode(c.Input)
}

// budgetFor is the call's token budget: the tool's configured ceiling, or
// less if the call asks for less. More is not given; the call is told.
func budgetFor(tool string, ceiling, asked int) (int, string, error) {
	switch {
	case asked < 0:
		return 0, "", fmt.Errorf("max_tokens %d: %w", asked, catalog.ErrBadInput)
	case asked == 0:
		return ceiling, "", nil
	case asked > ceiling:
		return ceiling, fmt.Sprintf("max_tokens %d is above %s's configured budget; %d used", asked, tool, ceiling), nil
	}
	return max(asked, budget.MinBudget), "", nil
}

// sessionOf is the call's session: the one it names, or the one derived from
// the calling agent process.
func sessionOf(c Call, cred peer.Cred) (string, error) {
	if c.Session != "" {
		if err := session.Validate(c.Session); err != nil {
			return "", err
		}
		return c.Session, nil
	}
	sess, err := session.Derive(int(cred.PID))
	if err != nil {
		return "", fmt.Errorf("%v: %w", err, catalog.ErrInternal)
	}
	return sess, nil
}

// refused logs and audits a call that admit turned away.
func (s *service) refused(adm *admission, start time.Time, err error) {
	c, cred := adm.c, adm.cred
	s.opts.Logger.Info("call refused", "tool", c.Tool, "peer_pid", cred.PID, "peer_uid", cred.UID,
		"code", catalog.ClassOf(err).Code, "err", s.resp.redact(err))
	s.record(&audit.Record{Tool: c.Tool, Session: adm.session, ContinueOf: c.Continue, Error: catalog.ClassOf(err).Code,
		ExitCode: catalog.ExitCode(err)}, c, cred, start)
}
