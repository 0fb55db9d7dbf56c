package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/mcpwrap"
	"github.com/contextd/contextd/daemon/netview"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/sandboxinfo"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/workspace"
)

// service is the daemon's core: it runs calls on its own types (call.go);
// the protocols adapt to it (lite.go, grpc.go).
type service struct {
	opts     Options
	callsCtx context.Context // canceled when the daemon gives up draining
	started  time.Time
	act      activity

	// The response pipeline (set up by Run).
	scrubber *scrub.Scrubber
	rules    string // the user's extra gitleaks rules, for the tools' own scrub
	counter  *budget.Counter
	salience *salience.Set // nil: salience.enabled is off
	store    *pages.Store
	audit    *audit.Log // nil: auditing failed to start, and each call says so in the log
	vaults   vaults

	// state keeps memories, checkpoints and branches (set up by Run).
	state *stateStore
	// unbranched: sessions with no open branch (see branchGate).
	unbranched sessionSet

	// sandbox builds every sandbox's surroundings: a tool call's, a
	// wrapped server's.
	sandbox *sandboxenv.Builder

	// mcp runs `mcp wrap` sessions (set up by Run).
	mcp      *mcpwrap.Wrapper
	mcpStore mcpStore // the wraps' records and pins
}

// Status is what the daemon says of itself, for either protocol.
type Status struct {
	Version         string
	PID             int
	Uptime          time.Duration
	CallsInFlight   int
	SocketActivated bool
	Tools           []string
}

func (s *service) status() Status {
	return Status{
		Version:         s.opts.Version,
		PID:             os.Getpid(),
		Uptime:          time.Since(s.started),
		CallsInFlight:   s.inFlight(),
		SocketActivated: s.opts.Activated,
		Tools:           s.opts.Tools.Names(),
	}
}

// A call goes through four stages, each a method below with one input and
// one output:
//
//	admit    who calls, in which session and workspace, with which budget,
//	         and whether policy (an open branch's budget) lets the call run
//	run      the tool, its output written into the response pipe
//	respond  the pipe's end: the daemon's scrub, the budget, the pages
//	account  the branch's charge, the log line, the audit record
//
// A page of an earlier output (Call.Continue) is admitted and accounted the
// same way; its respond stage cuts the page from the store (page.go).

// call runs one call for either protocol; out receives its output in order.
// Errors before the tool runs are the caller's (or contextd's) and are
// returned, for the protocol to report; everything after, including the
// tool's own failure, is in the Result.
func (s *service) call(parent context.Context, c Call, cred peer.Cred, out func([]byte) error) (_ Result, err error) {
	s.begin()
	defer s.end()
	// A refusal may quote the input (a path, a value): the caller gets it
	// scrubbed like any output.
	defer func() { err = s.redact(err) }()
	start := time.Now()
	if c.Continue != "" {
		return s.page(parent, c, cred, out, start)
	}
	adm, err := s.admit(parent, c, cred)
	if err != nil {
		s.refused(c, cred, adm.session, start, err)
		return Result{}, err
	}
	// The call ends when the caller goes away or when the daemon stops draining.
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopAfter := context.AfterFunc(s.callsCtx, func() { cancel(context.Cause(s.callsCtx)) })
	defer stopAfter()

	admitted := time.Now()
	pipe := s.pipe(adm, out)
	o := s.run(ctx, adm, pipe)
	ran := time.Now()
	sum := s.respond(adm, pipe, &o)
	responded := time.Now()
	res := s.account(parent, adm, o, sum, start)
	// Where the call's time went, stage by stage, the tool's own stages
	// (the daemon's and its sandbox's) among them: bench/roundtrip's
	// latency, taken apart.
	adm.log.Debug("call stages", "admit_ms", msBetween(start, admitted), "run_ms", msBetween(admitted, ran),
		"respond_ms", msBetween(ran, responded), "account_ms", msBetween(responded, time.Now()), "tool_stages", o.Stages)
	return res, nil
}

// admission is what admit decided: the call may run, with this environment
// and this budget.
type admission struct {
	c        Call
	cred     peer.Cred
	session  string // known from early on, for the records of refusals
	run      tools.Call
	env      *tools.Env
	warnings []string       // admit's own, for the Result (the tool adds its own)
	tokens   int            // the response budget
	branches []store.Branch // the session's open branches, charged by account
	log      *slog.Logger
}

// admit checks a call before anything runs: the tool and its input, the
// session, the workspace, the budget (the tool's, less if asked, less if an
// open branch has less left) and, for a state tool, its store.
func (s *service) admit(ctx context.Context, c Call, cred peer.Cred) (*admission, error) {
	adm := &admission{c: c, cred: cred}
	tool, err := s.opts.Tools.Get(c.Tool)
	if err != nil {
		return adm, err
	}
	if adm.run, err = tool.Decode(c.Input); err != nil {
		return adm, err
	}
	if adm.session, err = sessionOf(c, cred); err != nil {
		return adm, err
	}
	place, err := workspace.Find(c.Cwd, s.opts.Config.WorkspaceMarkers)
	if err != nil {
		return adm, err
	}
	adm.env = &tools.Env{Place: place, Session: adm.session, Peer: cred, CallerEnv: c.Env,
		Config: s.opts.Config, Runner: s.opts.Runner}
	adm.log = s.opts.Logger.With("tool", c.Tool, "peer_pid", cred.PID, "peer_uid", cred.UID, "session", adm.session)
	tokens, warn, err := s.budgetFor(c.Tool, c.MaxTokens)
	if err != nil {
		return adm, err
	}
	if warn != "" {
		adm.warnings = append(adm.warnings, warn)
	}
	if adm.branches, adm.tokens, err = s.branchGate(ctx, adm.session, c.Tool, tokens); err != nil {
		return adm, err
	}
	if toolspec.KindOf(c.Tool) == toolspec.State {
		// A store that cannot be opened refuses the call with the reason
		// (a locked file, a Qdrant server down).
		if adm.env.Store, err = s.stateStore(ctx); err != nil {
			return adm, err
		}
	}
	return adm, nil
}

// refused logs and audits a call that admit turned away.
func (s *service) refused(c Call, cred peer.Cred, session string, start time.Time, err error) {
	s.opts.Logger.Info("call refused", "tool", c.Tool, "peer_pid", cred.PID, "peer_uid", cred.UID,
		"code", catalog.ClassOf(err).Code, "err", s.redact(err))
	s.record(&audit.Record{Tool: c.Tool, Session: session, Error: catalog.ClassOf(err).Code, ExitCode: catalog.ExitCode(err)}, c, cred, start)
}

// pipe is the response pipe the tool writes into: the daemon's scrub with
// the session's vault, the budget, and the page store.
func (s *service) pipe(adm *admission, out func([]byte) error) *respond.Pipe {
	env := adm.env
	env.Counter, env.Budget = s.counter, adm.tokens
	env.Vault = s.vaults.get(env.Session)
	env.Layer = &respond.Layer{Scrubber: s.scrubber, Vault: env.Vault}
	env.Rules = s.rules
	env.Scrubber, env.Sandbox = s.scrubber, s.sandbox
	env.Window = budget.Window(adm.tokens)
	var sal *salience.Set
	if adm.c.Tool == "safe_bash" || adm.c.Tool == "safe_read" {
		// The outputs that are logs and files; the state tools' answers
		// are shaped by the tools themselves.
		sal = s.salience
	}
	env.Salience = sal
	return respond.New(respond.Options{Layer: env.Layer, Counter: s.counter, Budget: adm.tokens, Salience: sal,
		Store: s.store, Session: env.Session, Tool: adm.c.Tool, Send: deliver(out)})
}

// msBetween is b-a in milliseconds, to the microsecond.
func msBetween(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }

// deliver is the pipe's Send: a write the caller cannot take means it is
// gone.
func deliver(out func([]byte) error) func([]byte) error {
	return func(b []byte) error {
		if err := out(b); err != nil {
			return fmt.Errorf("send output: %v: %w", err, catalog.ErrConnectionLost)
		}
		return nil
	}
}

// run runs the tool, which writes its output into the pipe.
func (s *service) run(ctx context.Context, adm *admission, pipe *respond.Pipe) tools.Outcome {
	adm.env.Out = pipe
	return adm.run.Run(ctx, adm.env)
}

// respond ends the pipe: it sends what is left within the budget (or the
// marker and the tail) and keeps the rest for pages. A failure there is the
// call's failure unless the tool had one of its own.
func (s *service) respond(adm *admission, pipe *respond.Pipe, o *tools.Outcome) respond.Summary {
	sum, err := pipe.Close()
	if err != nil && o.Err == nil {
		o.Err = fmt.Errorf("%s: response: %v: %w", adm.c.Tool, err, catalog.ErrIO)
	}
	return sum
}

// account charges the session's open branches, logs the call, writes its
// audit record and returns its Result.
func (s *service) account(ctx context.Context, adm *admission, o tools.Outcome, sum respond.Summary, start time.Time) Result {
	env := adm.env
	var warnings []string
	warnings = append(warnings, adm.warnings...)
	warnings = append(warnings, o.Warnings...)
	branch := s.branchCharge(ctx, adm.branches, adm.c.Tool, sum.TokensUsed)
	// The caller reads how to allow a refused host; the audit record lists
	// the connections themselves instead (auditNet).
	var shown []string
	shown = append(shown, warnings...)
	if o.Egress != nil {
		shown = append(shown, o.Egress.Lines...)
	}
	shown = append(shown, branch...)
	warnings = append(warnings, branch...)
	res := Result{
		ExitCode:   o.ExitCode,
		Error:      s.scrubDetail(env.Layer, o.Err),
		Session:    env.Session,
		Workspace:  env.Place.Root,
		TokensUsed: sum.TokensUsed,
		Truncated:  sum.Truncated,
		Continue:   sum.Continue,
		Warnings:   shown,
		Sandbox:    o.Layers,
	}
	attrs := []any{"exit", o.ExitCode, "duration_ms", time.Since(start).Milliseconds(),
		"scope", o.Layers.Scope, "seccomp", o.Layers.Seccomp, "network", o.Layers.Network}
	if o.Layers.Scope == "" && o.Layers.ScopeNote != "" {
		attrs = append(attrs, "scope_missing", o.Layers.ScopeNote)
	}
	if o.Err != nil {
		attrs = append(attrs, "code", catalog.ClassOf(o.Err).Code, "err", s.redact(o.Err))
	}
	second := 0
	for _, n := range env.Layer.Catches {
		second += n
	}
	attrs = append(attrs, "bytes", sum.Bytes, "tokens", sum.TokensUsed, "truncated", sum.Truncated,
		"findings", countAll(o.Findings), "second_layer", second)
	adm.log.Info("call", attrs...)
	rec := &audit.Record{Tool: adm.c.Tool, Session: env.Session, Workspace: env.Place.Root,
		ExitCode: o.ExitCode, BytesProduced: sum.Bytes, TokensReturned: sum.TokensUsed, Truncated: sum.Truncated,
		Findings: merge(o.Findings, env.Layer.Catches), SecondLayer: second, SecondLayerRules: env.Layer.Catches,
		Warnings: warnings}
	rec.Sandbox, rec.Egress = auditNet(o.Layers, o.Egress)
	if o.Err != nil {
		rec.Error = catalog.ClassOf(o.Err).Code
	}
	rec.Args = s.scrubArgs(env.Layer, adm.c.Input)
	s.record(rec, adm.c, adm.cred, start)
	return res
}

// auditNet is a call's sandbox and connections as its audit record has
// them: the egress proxy, named with where its rules come from, when the
// call's process had one in its own network namespace.
func auditNet(l sandboxinfo.Layers, net *netview.Summary) (audit.Sandbox, []sandboxinfo.Connection) {
	sb := audit.Sandbox{Layers: l}
	if net == nil {
		return sb, nil
	}
	if l.Namespaces && !l.Network {
		sb.EgressRules = net.RulesFrom
	}
	return sb, net.Connections
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

// redact returns err with any secret in its message replaced by
// [REDACTED:<rule>]; the class (and so the code and exit status) is kept.
func (s *service) redact(err error) error {
	if err == nil || s.scrubber == nil {
		return err
	}
	msg := []byte(err.Error())
	fs := s.scrubber.Find(msg)
	if len(fs) == 0 {
		return err
	}
	out := scrub.Replace(msg, fs, func(f scrub.Finding) string { return "[REDACTED:" + f.Rule + "]" })
	return &redactedError{msg: string(out), err: err}
}

// redactedError is an error whose message had secrets taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
