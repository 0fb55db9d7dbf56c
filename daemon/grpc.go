package daemon

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/wire"
)

// The gRPC adapter: the typed public API for third-party clients
// (wire/contextd.proto). It converts to and from the core's types here and
// nowhere else; the core never sees a protobuf message.

// newGRPCServer is the gRPC server of svc: peer credentials checked by the
// listener's handshake, messages bounded by max_request_bytes.
func newGRPCServer(svc *service, maxBytes int) *grpc.Server {
	srv := grpc.NewServer(
		grpc.Creds(peer.ServerCredentials()),
		grpc.MaxRecvMsgSize(maxBytes),
		grpc.MaxSendMsgSize(maxBytes),
	)
	wire.RegisterToolsServer(srv, grpcServer{s: svc})
	return srv
}

// grpcServer is the service as wire.ToolsServer.
type grpcServer struct {
	wire.UnimplementedToolsServer
	s *service
}

// Status implements wire.ToolsServer.
func (g grpcServer) Status(ctx context.Context, _ *wire.StatusRequest) (*wire.StatusReply, error) {
	if _, ok := peer.FromContext(ctx); !ok {
		return nil, wire.ToStatus(fmt.Errorf("no peer credentials: %w", catalog.ErrPeerRefused))
	}
	st := g.s.status()
	return &wire.StatusReply{Version: st.Version, Pid: int32(st.PID), UptimeMs: st.Uptime.Milliseconds(),
		CallsInFlight: int32(st.CallsInFlight), SocketActivated: st.SocketActivated, Tools: st.Tools}, nil
}

// Call implements wire.ToolsServer.
func (g grpcServer) Call(req *wire.CallRequest, stream wire.Tools_CallServer) error {
	s := g.s
	cred, ok := peer.FromContext(stream.Context())
	if !ok {
		return wire.ToStatus(fmt.Errorf("no peer credentials: %w", catalog.ErrPeerRefused))
	}
	c := Call{Tool: req.GetTool(), Input: req.GetInputJson(), Session: req.GetSession(), Cwd: req.GetCwd(),
		Continue: req.GetContinueRef(), Env: req.GetEnv(), MaxTokens: int(req.GetMaxTokens())}
	res, err := s.call(stream.Context(), c, cred, func(b []byte) error { return sendChunks(stream, b) })
	if err != nil {
		return wire.ToStatus(err)
	}
	if err := stream.Send(&wire.CallEvent{Event: &wire.CallEvent_Result{Result: grpcResult(res)}}); err != nil {
		s.opts.Logger.Info("result not delivered: caller gone", "err", err)
	}
	return nil
}

// grpcChunk keeps each message well under gRPC's default 4 MiB receive
// limit; the light protocol has no such limit to work around.
const grpcChunk = 256 << 10

func sendChunks(stream wire.Tools_CallServer, b []byte) error {
	for len(b) > 0 {
		c := b[:min(len(b), grpcChunk)]
		// Send does not keep c after it returns, so the caller's buffer is safe.
		if err := stream.Send(&wire.CallEvent{Event: &wire.CallEvent_Output{Output: &wire.Output{Data: c}}}); err != nil {
			return err
		}
		b = b[len(c):]
	}
	return nil
}

func grpcResult(r Result) *wire.Result {
	out := &wire.Result{
		ExitCode:   int32(r.ExitCode),
		Session:    r.Session,
		Workspace:  r.Workspace,
		TokensUsed: int64(r.TokensUsed),
		Truncated:  r.Truncated,
		HasMore:    r.Truncated,
		Continue:   r.Continue,
		Warnings:   r.Warnings,
	}
	if d := r.Error; d != nil {
		out.Error = &wire.Error{Code: d.Code, Message: d.Message, Hint: d.Hint}
	}
	if l := r.Sandbox; sandboxed(l) {
		out.Sandbox = &wire.Sandbox{Namespaces: l.Namespaces, Seccomp: l.Seccomp, Scope: l.Scope, ScopeNote: l.ScopeNote, Network: l.Network}
	}
	return out
}
