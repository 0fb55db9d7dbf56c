package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/contextd/contextd/daemon/mcpwrap"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/audit"
	"github.com/contextd/contextd/daemon/budget"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/daemon/workspace"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/wire"
)

// service implements wire.ToolsServer.
type service struct {
	wire.UnimplementedToolsServer
	opts     Options
	callsCtx context.Context // canceled when the daemon gives up draining
	started  time.Time
	act      activity

	// The response pipeline (set up by Run).
	scrubber *scrub.Scrubber
	rules    string // the user's extra gitleaks rules, for the tools' own scrub
	counter  *budget.Counter
	store    *pages.Store
	audit    *audit.Log // nil: auditing failed to start, and each call says so in the log
	vaults   vaults

	// state keeps memories, checkpoints and branches (set up by Run).
	state *stateStore
	// unbranched: sessions with no open branch (see branchGate).
	unbranched sessionSet

	// mcp runs `mcp wrap` sessions (set up by Run).
	mcp    *mcpwrap.Wrapper
	mcpOwn mcpOwnStore
}

// Status implements wire.ToolsServer.
func (s *service) Status(ctx context.Context, _ *wire.StatusRequest) (*wire.StatusReply, error) {
	if _, ok := peer.FromContext(ctx); !ok {
		return nil, wire.ToStatus(fmt.Errorf("no peer credentials: %w", catalog.ErrPeerRefused))
	}
	return s.status(), nil
}

func (s *service) status() *wire.StatusReply {
	return &wire.StatusReply{
		Version:         s.opts.Version,
		Pid:             int32(os.Getpid()),
		UptimeMs:        time.Since(s.started).Milliseconds(),
		CallsInFlight:   int32(s.inFlight()),
		SocketActivated: s.opts.Activated,
		Tools:           s.opts.Tools.Names(),
	}
}

// Call implements wire.ToolsServer.
func (s *service) Call(req *wire.CallRequest, stream wire.Tools_CallServer) error {
	cred, ok := peer.FromContext(stream.Context())
	if !ok {
		return wire.ToStatus(fmt.Errorf("no peer credentials: %w", catalog.ErrPeerRefused))
	}
	return wire.ToStatus(s.call(stream.Context(), req, cred, stream.Send))
}

// call runs one call for either protocol; send delivers its events in order.
// Errors before the tool runs are the caller's (or contextd's) and are returned,
// for the protocol to report; everything after, including the tool's own
// failure, goes back in the Result.
func (s *service) call(parent context.Context, req *wire.CallRequest, cred peer.Cred, send func(*wire.CallEvent) error) (err error) {
	s.begin()
	defer s.end()
	// A refusal may quote the input (a path, a value): the caller gets it
	// scrubbed like any output.
	defer func() { err = s.redact(err) }()
	start := time.Now()
	log := s.opts.Logger.With("tool", req.GetTool(), "peer_pid", cred.PID, "peer_uid", cred.UID)

	if req.GetContinueRef() != "" {
		return s.page(parent, req, cred, send, start)
	}
	env, call, err := s.prepare(req, cred)
	if err != nil {
		log.Info("call refused", "code", catalog.ClassOf(err).Code, "err", s.redact(err))
		s.record(&audit.Record{Tool: req.GetTool(), Error: catalog.ClassOf(err).Code, ExitCode: catalog.ExitCode(err)}, req, cred, start)
		return err
	}
	log = log.With("session", env.Session)
	tokens, warn, err := s.budgetFor(req.GetTool(), int(req.GetMaxTokens()))
	if err != nil {
		return err
	}
	if warn != "" {
		env.Warnings = append(env.Warnings, warn)
	}
	branches, tokens, err := s.branchGate(parent, env.Session, req.GetTool(), tokens)
	if err != nil {
		log.Info("call refused", "code", catalog.ClassOf(err).Code, "err", err)
		s.record(&audit.Record{Tool: req.GetTool(), Session: env.Session, Error: catalog.ClassOf(err).Code, ExitCode: catalog.ExitCode(err)}, req, cred, start)
		return err
	}
	if isStateTool(req.GetTool()) {
		// A store that cannot be opened refuses the call with the reason
		// (a locked file, a Qdrant server down).
		if env.Store, err = s.stateStore(parent); err != nil {
			log.Warn("call refused: state store unavailable", "err", err)
			s.record(&audit.Record{Tool: req.GetTool(), Session: env.Session, Error: catalog.ClassOf(err).Code, ExitCode: catalog.ExitCode(err)}, req, cred, start)
			return err
		}
	}
	env.Counter, env.Budget = s.counter, tokens

	// The call ends when the caller goes away or when the daemon stops draining.
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopAfter := context.AfterFunc(s.callsCtx, func() { cancel(context.Cause(s.callsCtx)) })
	defer stopAfter()

	sw := &streamWriter{send: send}
	env.Vault = s.vaults.get(env.Session)
	env.Layer = &respond.Layer{Scrubber: s.scrubber, Vault: env.Vault}
	env.Rules = s.rules
	env.Window = budget.Window(tokens)
	pipe := respond.New(respond.Options{Layer: env.Layer, Counter: s.counter, Budget: tokens,
		Store: s.store, Session: env.Session, Tool: req.GetTool(), Send: func(b []byte) error { _, err := sw.Write(b); return err }})
	env.Out = pipe
	out := call.Run(ctx, env)
	pipeStart := time.Now()
	sum, perr := pipe.Close()
	pipeDone := time.Now()
	if perr != nil && out.Err == nil {
		out.Err = fmt.Errorf("%s: response: %v: %w", req.GetTool(), perr, catalog.ErrIO)
	}
	env.Warnings = append(env.Warnings, s.branchCharge(parent, branches, req.GetTool(), sum.TokensUsed)...)
	res := &wire.Result{
		ExitCode:   int32(out.ExitCode),
		Error:      s.scrubError(env.Layer, out.Err),
		Session:    env.Session,
		Workspace:  env.Place.Root,
		TokensUsed: int64(sum.TokensUsed),
		Truncated:  sum.Truncated,
		HasMore:    sum.Truncated,
		Continue:   sum.Continue,
		Warnings:   env.Warnings,
	}
	if l := env.Layers; l.Namespaces || l.Seccomp != "" || l.Scope != "" {
		res.Sandbox = &wire.Sandbox{Namespaces: l.Namespaces, Seccomp: l.Seccomp, Scope: l.Scope, ScopeNote: l.ScopeNote, Network: l.Network}
	}
	attrs := []any{"exit", out.ExitCode, "duration_ms", time.Since(start).Milliseconds(),
		"scope", env.Layers.Scope, "seccomp", env.Layers.Seccomp, "network", env.Layers.Network}
	if env.Layers.Scope == "" && env.Layers.ScopeNote != "" {
		attrs = append(attrs, "scope_missing", env.Layers.ScopeNote)
	}
	if out.Err != nil {
		attrs = append(attrs, "code", catalog.ClassOf(out.Err).Code, "err", s.redact(out.Err))
	}
	second := 0
	for _, n := range env.Layer.Catches {
		second += n
	}
	attrs = append(attrs, "bytes", sum.Bytes, "tokens", sum.TokensUsed, "truncated", sum.Truncated,
		"findings", countAll(env.Findings), "second_layer", second)
	log.Info("call", attrs...)
	if len(env.Stages) > 0 {
		log.Debug("tool stages", "stages", env.Stages, "pipe_ms", float64(pipeDone.Sub(pipeStart).Microseconds())/1000)
	}
	rec := &audit.Record{Tool: req.GetTool(), Session: env.Session, Workspace: env.Place.Root,
		ExitCode: out.ExitCode, BytesProduced: sum.Bytes, TokensReturned: sum.TokensUsed, Truncated: sum.Truncated,
		Findings: merge(env.Findings, env.Layer.Catches), SecondLayer: second, SecondLayerRules: env.Layer.Catches,
		Warnings: env.Warnings, Sandbox: auditSandbox(env.Layers)}
	if out.Err != nil {
		rec.Error = catalog.ClassOf(out.Err).Code
	}
	rec.Args = s.scrubArgs(env.Layer, req.GetInputJson())
	s.record(rec, req, cred, start)
	if err := send(&wire.CallEvent{Event: &wire.CallEvent_Result{Result: res}}); err != nil {
		log.Info("result not delivered: caller gone", "err", err)
	}
	return nil
}

// prepare checks a request and builds its environment.
func (s *service) prepare(req *wire.CallRequest, cred peer.Cred) (*tools.Env, tools.Call, error) {
	tool, err := s.opts.Tools.Get(req.GetTool())
	if err != nil {
		return nil, nil, err
	}
	call, err := tool.Decode(req.GetInputJson())
	if err != nil {
		return nil, nil, err
	}
	sess, err := sessionOf(req, cred)
	if err != nil {
		return nil, nil, err
	}
	place, err := workspace.Find(req.GetCwd(), s.opts.Config.WorkspaceMarkers)
	if err != nil {
		return nil, nil, err
	}
	return &tools.Env{
		Place:     place,
		Session:   sess,
		Peer:      cred,
		CallerEnv: req.GetEnv(),
		Config:    s.opts.Config,
		Runner:    s.opts.Runner,
	}, call, nil
}

// sessionOf is the call's session: the one it names, or the one derived from
// the calling agent process.
func sessionOf(req *wire.CallRequest, cred peer.Cred) (string, error) {
	sess := req.GetSession()
	if sess != "" {
		if err := session.Validate(sess); err != nil {
			return "", err
		}
		return sess, nil
	}
	sess, err := session.Derive(int(cred.PID))
	if err != nil {
		return "", fmt.Errorf("%v: %w", err, catalog.ErrInternal)
	}
	return sess, nil
}

// streamWriter sends everything written to it as Output events. Writes are not
// concurrent: tools write from one goroutine at a time.
type streamWriter struct {
	send func(*wire.CallEvent) error
}

// maxChunk keeps each message well under gRPC's default 4 MiB receive limit.
const maxChunk = 256 << 10

func (w *streamWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), maxChunk)]
		// Send does not keep c after it returns, so the caller's buffer is safe.
		if err := w.send(&wire.CallEvent{Event: &wire.CallEvent_Output{Output: &wire.Output{Data: c}}}); err != nil {
			return n, fmt.Errorf("send output: %v: %w", err, catalog.ErrConnectionLost)
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
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
