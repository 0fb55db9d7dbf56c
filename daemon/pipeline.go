package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/budget"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/wire"
)

// setupPipeline builds what every response goes through: the scrubber (with
// the user's extra gitleaks rules), the token counter, the page store and the
// audit log. A scrubber that cannot be built is fatal: no call may go out
// unscrubbed. The audit log is not: a call still runs, and the daemon's log
// says that it is not audited.
func (s *service) setupPipeline(cfg *config.Config) error {
	rules, err := gitleaksRules(cfg.Scrub.GitleaksConfig)
	if err != nil {
		return err
	}
	sc, err := scrub.New(&scrub.Options{ExtraConfig: rules})
	if err != nil {
		return fmt.Errorf("scrub.gitleaks_config: %v: %w", err, catalog.ErrConfig)
	}
	s.scrubber, s.rules, s.counter = sc, rules, budget.Default()
	st, err := pages.Open(&pages.Options{TTL: cfg.Pages.TTL.Duration, MaxTotal: int64(cfg.Pages.MaxTotal)})
	if err != nil {
		return fmt.Errorf("page store: %v: %w", err, catalog.ErrIO)
	}
	s.store = st
	lg, err := audit.Open(&audit.Options{MaxFileSize: int64(cfg.Audit.MaxFileSize), Logger: s.opts.Logger})
	if err != nil {
		s.opts.Logger.Error("audit log unavailable: calls are not audited", "err", err)
	} else {
		s.audit = lg
	}
	// The vocabulary takes a moment to load; not on the first call's path.
	go s.counter.Load()
	return nil
}

func (s *service) closePipeline() {
	if s.audit != nil {
		s.audit.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// gitleaksRules reads the user's extra gitleaks configuration: the configured
// file, or $XDG_CONFIG_HOME/contextd/gitleaks.toml when it exists.
func gitleaksRules(path string) (string, error) {
	explicit := path != ""
	if !explicit {
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			h, _ := os.UserHomeDir()
			dir = filepath.Join(h, ".config")
		}
		path = filepath.Join(dir, "contextd", "gitleaks.toml")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("scrub.gitleaks_config %s: %v: %w", path, err, catalog.ErrConfig)
	}
	return string(b), nil
}

// budgetFor is the call's token budget: the tool's configured one, or less
// if the call asks for less. More is not given; the call is told.
func (s *service) budgetFor(tool string, asked int) (int, string, error) {
	ceiling := s.opts.Config.MaxTokens(tool)
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

// scrubError is the wire form of a tool's failure, its message scrubbed: it
// may quote the input (a path, a command).
func (s *service) scrubError(l *respond.Layer, err error) *wire.Error {
	we := wire.ErrorOf(err)
	if we != nil {
		we.Message = string(l.Scrub([]byte(we.Message)))
	}
	return we
}

// scrubArgs is a call's input as the audit records it: scrubbed, and a
// safe_write's content reduced to its size.
func (s *service) scrubArgs(l *respond.Layer, input []byte) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(input, &m) == nil {
		if c, ok := m["content"].(string); ok {
			m["content"] = "(" + strconv.Itoa(len(c)) + " bytes)"
			if b, err := json.Marshal(m); err == nil {
				input = b
			}
		}
	}
	out := l.Scrub(input)
	if !json.Valid(out) {
		b, _ := json.Marshal(string(out))
		return b
	}
	return out
}

// record appends the call's audit record, filling in who and when.
func (s *service) record(r *audit.Record, req *wire.CallRequest, cred peer.Cred, start time.Time) {
	if s.audit == nil {
		return
	}
	r.Time = start.UTC()
	r.PeerPID, r.PeerUID = cred.PID, cred.UID
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cred.PID)); err == nil {
		r.PeerExe = exe
	}
	r.Cwd = req.GetCwd()
	r.DurationMS = time.Since(start).Milliseconds()
	if r.Session == "" {
		r.Session = req.GetSession()
	}
	if err := s.audit.Append(r); err != nil {
		s.opts.Logger.Error("audit record not written", "tool", r.Tool, "err", err)
	}
}

// page answers a continuation: the next page of a stored output.
func (s *service) page(ctx context.Context, req *wire.CallRequest, cred peer.Cred, send func(*wire.CallEvent) error, start time.Time) error {
	sess, err := sessionOf(req, cred)
	if err != nil {
		return err
	}
	tokens, warn, err := s.budgetFor(req.GetTool(), int(req.GetMaxTokens()))
	if err != nil {
		return err
	}
	// Pages read inside a branch count against it like any response.
	branches, tokens, err := s.branchGate(ctx, sess, req.GetTool(), tokens)
	if err != nil {
		return err
	}
	var layer *respond.Layer
	var layers runner.Layers
	pageIn := func(sess string) (respond.PageResult, error) {
		layer = &respond.Layer{Scrubber: s.scrubber, Vault: s.vaults.get(sess)}
		// A page in a hole of the output (the middle of a long safe_read)
		// is read again from the file, in the tool's sandbox like the
		// first read.
		fill := func(source []byte, off int64, p []byte) error {
			env := &tools.Env{Session: sess, Peer: cred, Config: s.opts.Config, Runner: s.opts.Runner,
				Vault: layer.Vault, Rules: s.rules}
			err := tools.FillGap(ctx, env, source, off, p)
			layers = env.Layers
			s.opts.Logger.Debug("page read again", "tool", req.GetTool(), "bytes", len(p), "stages", env.Stages)
			return err
		}
		return respond.Page(s.store, layer, s.counter, sess, req.GetContinueRef(), tokens, fill)
	}
	pg, err := pageIn(sess)
	if errors.Is(err, pages.ErrUnknown) && req.GetSession() != "" {
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
	rec := &audit.Record{Tool: req.GetTool(), Session: sess, ContinueOf: req.GetContinueRef()}
	if layers.Namespaces || layers.Seccomp != "" {
		rec.Sandbox = auditSandbox(layers)
	}
	if err != nil {
		var class *catalog.Class
		switch {
		case errors.Is(err, pages.ErrUnknown):
			err = fmt.Errorf("continuation %q (references expire, and belong to the session that made them): %w", req.GetContinueRef(), catalog.ErrUnknownContinuation)
		case errors.As(err, &class):
			err = fmt.Errorf("continuation %q: %w", req.GetContinueRef(), err) // the sandboxed read's own failure
		default:
			err = fmt.Errorf("continuation %q: %v: %w", req.GetContinueRef(), err, catalog.ErrIO)
		}
		rec.Error, rec.ExitCode = catalog.ClassOf(err).Code, catalog.ExitCode(err)
		s.record(rec, req, cred, start)
		return err
	}
	sw := &streamWriter{send: send}
	if _, err := sw.Write(pg.Data); err != nil {
		return err
	}
	res := &wire.Result{TokensUsed: int64(pg.Tokens), HasMore: pg.HasMore, Truncated: pg.HasMore,
		Continue: pg.Next, Session: sess}
	if warn != "" {
		res.Warnings = []string{warn}
	}
	res.Warnings = append(res.Warnings, s.branchCharge(ctx, branches, req.GetTool(), pg.Tokens)...)
	rec.TokensReturned, rec.Truncated, rec.BytesProduced = pg.Tokens, pg.HasMore, int64(len(pg.Data))
	rec.SecondLayerRules = layer.Catches
	rec.Findings = layer.Catches
	s.record(rec, req, cred, start)
	if err := send(&wire.CallEvent{Event: &wire.CallEvent_Result{Result: res}}); err != nil {
		s.opts.Logger.Info("result not delivered: caller gone", "err", err)
	}
	return nil
}

// vaults holds each session's vault (placeholder -> secret), in memory only:
// never on disk, never in a log. They live as long as the daemon; a daemon
// that exits when idle forgets them, and safe_write then writes placeholders
// as they are (and says so).
type vaults struct {
	mu sync.Mutex
	m  map[string]*scrub.Vault
}

func (v *vaults) get(session string) *scrub.Vault {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]*scrub.Vault{}
	}
	vt, ok := v.m[session]
	if !ok {
		vt = scrub.NewVault()
		v.m[session] = vt
	}
	return vt
}

func countAll(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// merge adds the counts of b to a copy of a.
func merge(a, b map[string]int) map[string]int {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := map[string]int{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

func auditSandbox(l runner.Layers) audit.Sandbox {
	net := "none"
	if l.Network {
		net = "host"
	}
	if !l.Namespaces {
		net = ""
	}
	return audit.Sandbox{Namespaces: l.Namespaces, Seccomp: l.Seccomp, Scope: l.Scope, ScopeNote: l.ScopeNote, Network: net}
}
