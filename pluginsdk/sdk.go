package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/wire/toolplugin"
)

// Tool is a contextd tool.
type Tool interface {
	Execute(ctx context.Context, input json.RawMessage, out Output) (Result, error)
}

// Output streams a call's text to the agent; each Write is sent as it is
// made.
type Output interface {
	io.Writer
}

// Result is how a call ended.
type Result struct {
	// Data is the structured result, marshalled as JSON (nil: none).
	Data any
	// Refs name what the agent may follow: files, URLs, memory ids.
	Refs []string
	// Truncated says the tool left part of its output out.
	Truncated bool
	// ExitCode is a command-like tool's status; 0 is success.
	ExitCode int
}

// Call is what a call knows of where it runs.
type Call struct {
	Session   string
	Workspace string
	// Host is the daemon's side, for this call.
	Host Host
}

type callKey struct{}

// CallOf returns the call ctx belongs to (the zero Call outside one).
func CallOf(ctx context.Context) Call {
	c, _ := ctx.Value(callKey{}).(Call)
	return c
}

// Serve runs t as a contextd plugin until the daemon stops it. Call it from
// main.
func Serve(t Tool) {
	plugin.Serve(toolplugin.ServeConfig(func(b *plugin.GRPCBroker) toolplugin.ToolServer {
		return &server{tool: t, hosts: &hostDialer{broker: b}}
	}))
}

// server adapts a Tool to the Tool service.
type server struct {
	toolplugin.UnimplementedToolServer
	tool  Tool
	hosts *hostDialer
}

func (s *server) Execute(req *toolplugin.ExecuteRequest, stream toolplugin.Tool_ExecuteServer) (err error) {
	ctx := stream.Context()
	if n := req.GetDeadlineUnixNano(); n != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, n))
		defer cancel()
	}
	ctx = context.WithValue(ctx, callKey{}, Call{
		Session:   req.GetSession(),
		Workspace: req.GetWorkspace(),
		Host:      &host{dial: s.hosts, brokerID: req.GetHostBrokerId(), callID: req.GetCallId()},
	})
	defer func() {
		if p := recover(); p != nil {
			err = status.Errorf(codes.Internal, "tool panicked: %v", p)
		}
	}()
	res, terr := s.tool.Execute(ctx, req.GetInputJson(), &output{stream: stream})
	fin, err := final(res, terr)
	if err != nil {
		return err
	}
	return stream.Send(&toolplugin.Frame{Kind: &toolplugin.Frame_Final{Final: fin}})
}

// final turns what Execute returned into the last frame.
func final(res Result, err error) (*toolplugin.Final, error) {
	fin := &toolplugin.Final{Refs: res.Refs, Truncated: res.Truncated, ExitCode: int32(res.ExitCode)}
	if res.Data != nil {
		data, merr := json.Marshal(res.Data)
		if merr != nil {
			return nil, status.Errorf(codes.Internal, "tool result: %v", merr)
		}
		fin.DataJson = data
	}
	if err != nil {
		fin.Error = err.Error()
		if fin.ExitCode == 0 {
			fin.ExitCode = 1
		}
	}
	return fin, nil
}

// output sends each write as a text frame.
type output struct {
	stream toolplugin.Tool_ExecuteServer
}

func (o *output) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	// The frame is marshalled before Send returns, so p may be reused.
	if err := o.stream.Send(&toolplugin.Frame{Kind: &toolplugin.Frame_Text{Text: p}}); err != nil {
		return 0, fmt.Errorf("pluginsdk: output: %w", err)
	}
	return len(p), nil
}
