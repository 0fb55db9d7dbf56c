package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/scrub"
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
	out, err := newOutput(stream)
	if err != nil {
		return err
	}
	res, terr := s.tool.Execute(ctx, req.GetInputJson(), out)
	if err := out.Close(); err != nil && terr == nil {
		terr = err
	}
	fin, err := final(res, terr)
	if err != nil {
		return err
	}
	fin.Error = string(out.scrub([]byte(fin.Error)))
	fin.DataJson = out.scrub(fin.DataJson)
	return stream.Send(&toolplugin.Frame{Kind: &toolplugin.Frame_Final{Final: fin}})
}

// scrubber is the SDK's own scrub, the first of a plugin's two: a secret
// the tool writes is replaced before it leaves the plugin, and the daemon
// scrubs again what arrives.
var scrubber = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

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

// output sends what the tool writes as text frames, scrubbed: a secret is
// replaced by a marker naming its rule ([REDACTED:rule:N]) before the frame
// leaves the plugin. Whole lines are scrubbed, so a write that ends mid-line
// waits for the rest of its line (or the end of the call).
type output struct {
	sc     *scrub.Scrubber
	stream toolplugin.Tool_ExecuteServer
	st     *scrub.Stream
	n      int // findings so far, numbering the markers
}

func newOutput(stream toolplugin.Tool_ExecuteServer) (*output, error) {
	sc, err := scrubber()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "pluginsdk: scrubber: %v", err)
	}
	o := &output{sc: sc, stream: stream}
	o.st = scrub.NewStream(sc, o.emit)
	return o, nil
}

func (o *output) Write(p []byte) (int, error) {
	if _, err := o.st.Write(p); err != nil {
		return 0, fmt.Errorf("pluginsdk: output: %w", err)
	}
	return len(p), nil
}

// Close sends what is left of an unfinished last line.
func (o *output) Close() error { return o.st.Close() }

func (o *output) emit(text []byte, fs []scrub.Finding) error {
	if len(text) == 0 {
		return nil
	}
	if len(fs) > 0 {
		text = scrub.Replace(text, fs, o.marker)
	}
	// The frame is marshalled before Send returns, so text may be reused.
	return o.stream.Send(&toolplugin.Frame{Kind: &toolplugin.Frame_Text{Text: text}})
}

func (o *output) marker(f scrub.Finding) string {
	o.n++
	return fmt.Sprintf("[REDACTED:%s:%d]", f.Rule, o.n)
}

// scrub replaces the secrets in b (the result's data and error).
func (o *output) scrub(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if fs := o.sc.Find(b); len(fs) > 0 {
		return scrub.Replace(b, fs, o.marker)
	}
	return b
}
