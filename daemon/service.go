package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/daemon/session"
	"github.com/contextd/contextd/daemon/tools"
	"github.com/contextd/contextd/daemon/workspace"
	"github.com/contextd/contextd/wire"
)

// service implements wire.ToolsServer.
type service struct {
	wire.UnimplementedToolsServer
	opts     Options
	callsCtx context.Context // canceled when the daemon gives up draining
	started  time.Time
	act      activity
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
func (s *service) call(parent context.Context, req *wire.CallRequest, cred peer.Cred, send func(*wire.CallEvent) error) error {
	s.begin()
	defer s.end()
	start := time.Now()
	log := s.opts.Logger.With("tool", req.GetTool(), "peer_pid", cred.PID, "peer_uid", cred.UID)

	env, call, err := s.prepare(req, cred)
	if err != nil {
		log.Info("call refused", "code", catalog.ClassOf(err).Code, "err", err)
		return err
	}
	log = log.With("session", env.Session)

	// The call ends when the caller goes away or when the daemon stops draining.
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stopAfter := context.AfterFunc(s.callsCtx, func() { cancel(context.Cause(s.callsCtx)) })
	defer stopAfter()

	env.Out = &streamWriter{send: send}
	out := call.Run(ctx, env)
	res := &wire.Result{
		ExitCode:  int32(out.ExitCode),
		Error:     wire.ErrorOf(out.Err),
		Session:   env.Session,
		Workspace: env.Place.Root,
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
		attrs = append(attrs, "code", catalog.ClassOf(out.Err).Code, "err", out.Err)
	}
	log.Info("call", attrs...)
	if err := send(&wire.CallEvent{Event: &wire.CallEvent_Result{Result: res}}); err != nil {
		log.Info("result not delivered: caller gone", "err", err)
	}
	return nil
}

// prepare checks a request and builds its environment.
func (s *service) prepare(req *wire.CallRequest, cred peer.Cred) (*tools.Env, tools.Call, error) {
	if req.GetContinueRef() != "" {
		// No result is paged yet: every result is sent whole.
		return nil, nil, fmt.Errorf("continuation %q: %w", req.GetContinueRef(), catalog.ErrUnknownContinuation)
	}
	tool, err := s.opts.Tools.Get(req.GetTool())
	if err != nil {
		return nil, nil, err
	}
	call, err := tool.Decode(req.GetInputJson())
	if err != nil {
		return nil, nil, err
	}
	sess := req.GetSession()
	if sess != "" {
		if err := session.Validate(sess); err != nil {
			return nil, nil, err
		}
	} else if sess, err = session.Derive(int(cred.PID)); err != nil {
		return nil, nil, fmt.Errorf("%v: %w", err, catalog.ErrInternal)
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
