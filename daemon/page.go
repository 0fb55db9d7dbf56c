package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/sandboxinfo"
)

// page answers a continuation, through the same stages as a call: admit (the
// session, the budget, an open branch), respond (the page cut from the
// stored output, scrubbed), account (the branch's charge, the audit record).
func (s *service) page(ctx context.Context, c Call, cred peer.Cred, out func([]byte) error, start time.Time) (Result, error) {
	sess, tokens, warn, branches, err := s.admitPage(ctx, c, cred)
	if err != nil {
		return Result{}, err
	}
	pg, sess, layer, layers, err := s.cutPage(ctx, c, cred, sess, tokens)
	rec := &audit.Record{Tool: c.Tool, Session: sess, ContinueOf: c.Continue}
	if sandboxed(layers) {
		rec.Sandbox = audit.Sandbox{Layers: layers}
	}
	if err != nil {
		rec.Error, rec.ExitCode = catalog.ClassOf(err).Code, catalog.ExitCode(err)
		s.record(rec, c, cred, start)
		return Result{}, err
	}
	if err := deliver(out)(pg.Data); err != nil {
		return Result{}, err
	}
	res := Result{TokensUsed: pg.Tokens, Truncated: pg.HasMore, Continue: pg.Next, Session: sess}
	if warn != "" {
		res.Warnings = []string{warn}
	}
	res.Warnings = append(res.Warnings, s.branchCharge(ctx, branches, c.Tool, pg.Tokens)...)
	rec.TokensReturned, rec.Truncated, rec.BytesProduced = pg.Tokens, pg.HasMore, int64(len(pg.Data))
	rec.SecondLayerRules = layer.Catches
	rec.Findings = layer.Catches
	s.record(rec, c, cred, start)
	return res, nil
}

// admitPage is admit for a page: the session, the budget, and the gate of an
// open branch (pages read inside a branch count against it like any
// response).
func (s *service) admitPage(ctx context.Context, c Call, cred peer.Cred) (sess string, tokens int, warn string, branches []store.Branch, err error) {
	if sess, err = sessionOf(c, cred); err != nil {
		return
	}
	if tokens, warn, err = s.budgetFor(c.Tool, c.MaxTokens); err != nil {
		return
	}
	branches, tokens, err = s.branchGate(ctx, sess, c.Tool, tokens)
	return
}

// cutPage is respond for a page: it cuts the page from the stored output,
// scrubbed with the session's vault. It returns the session the output was
// found in, the layer that scrubbed it, and the sandbox layers of a read
// that filled a hole.
func (s *service) cutPage(ctx context.Context, c Call, cred peer.Cred, sess string, tokens int) (respond.PageResult, string, *respond.Layer, sandboxinfo.Layers, error) {
	var layer *respond.Layer
	var layers sandboxinfo.Layers
	pageIn := func(sess string) (respond.PageResult, error) {
		layer = &respond.Layer{Scrubber: s.scrubber, Vault: s.vaults.get(sess)}
		// A page in a hole of the output (the middle of a long safe_read)
		// is read again from the file, in the tool's sandbox like the
		// first read.
		fill := func(source []byte, off int64, p []byte) error {
			env := &tools.Env{Session: sess, Peer: cred, Config: s.opts.Config, Runner: s.opts.Runner, Sandbox: s.sandbox,
				Vault: layer.Vault, Rules: s.rules}
			o := tools.FillGap(ctx, env, source, off, p)
			layers = o.Layers
			s.opts.Logger.Debug("page read again", "tool", c.Tool, "bytes", len(p), "stages", o.Stages)
			return o.Err
		}
		return respond.Page(s.store, layer, s.counter, sess, c.Continue, tokens, fill)
	}
	pg, err := pageIn(sess)
	if errors.Is(err, pages.ErrUnknown) && c.Session != "" {
		// The caller named a session, but the output may be in the one its
		// process gets by not naming any: a wrapped MCP server's cut result
		// is kept in the agent's session, and contextd's MCP face, a child
		// of the same agent, names a session per connection. That session
		// is the caller's own (it could ask without a name), so looking
		// there too opens nothing to it.
		if own, derr := session.Derive(int(cred.PID)); derr == nil && own != sess {
			if pg2, err2 := pageIn(own); !errors.Is(err2, pages.ErrUnknown) {
				pg, err, sess = pg2, err2, own
			}
		}
	}
	if err != nil {
		var class *catalog.Class
		switch {
		case errors.Is(err, pages.ErrUnknown):
			err = fmt.Errorf("continuation %q (references expire, and belong to the session that made them): %w", c.Continue, catalog.ErrUnknownContinuation)
		case errors.As(err, &class):
			err = fmt.Errorf("continuation %q: %w", c.Continue, err) // the sandboxed read's own failure
		default:
			err = fmt.Errorf("continuation %q: %v: %w", c.Continue, err, catalog.ErrIO)
		}
	}
	return pg, sess, layer, layers, err
}
