package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/mcp/jsonrpc"
)

type textIn struct {
	Text string `json:"text"`
}

// newSDKServer is a real MCP server from the official Go SDK with three tools:
// echo, ask (which asks the client's model, a server-to-client request) and
// hangup (which closes its own event stream mid-call, as a server may, so that
// the client has to resume it).
func newSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-test", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			// Sampling is deprecated from protocol 2026-07-28 but still in
			// use; server-to-client requests must keep flowing.
			//lint:ignore SA1019 exercising a server-to-client request on purpose
			msgs := []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}}
			//lint:ignore SA1019 exercising a server-to-client request on purpose
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: msgs})
			if err != nil {
				return nil, nil, err
			}
			tc, _ := res.Content.(*mcp.TextContent)
			if tc == nil {
				return nil, nil, fmt.Errorf("no text from the model")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said " + tc.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hangup", Description: "Closes its stream, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			}
			time.Sleep(100 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after " + in.Text}}}, nil, nil
		})
	return s
}

func readCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func write(t *testing.T, c Conn, msg string) {
	t.Helper()
	if err := c.Write(readCtx(t), []byte(msg)); err != nil {
		t.Fatalf("Write(%.80s): %v", msg, err)
	}
}

// readID reads until the response or error with the given id, returning its
// raw bytes; other messages go to others (when not nil).
func readID(t *testing.T, c Conn, id string, others *[]string) []byte {
	t.Helper()
	ctx := readCtx(t)
	want := jsonrpc.Key(jsonrpc.ClientToServer, json.RawMessage(id))
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("Read waiting for id %s: %v", id, err)
		}
		info, err := jsonrpc.Classify(msg)
		if err != nil {
			t.Fatalf("server sent an invalid message %.200q: %v", msg, err)
		}
		if (info.Kind == jsonrpc.KindResponse || info.Kind == jsonrpc.KindError) && jsonrpc.Key(jsonrpc.ClientToServer, info.ID) == want {
			return msg
		}
		if others != nil {
			*others = append(*others, string(msg))
		}
	}
}

// readKind reads until a message of the given kind and method.
func readKind(t *testing.T, c Conn, kind jsonrpc.Kind, method string) ([]byte, jsonrpc.Info) {
	t.Helper()
	ctx := readCtx(t)
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("Read waiting for %v %s: %v", kind, method, err)
		}
		info, err := jsonrpc.Classify(msg)
		if err == nil && info.Kind == kind && info.Method == method {
			return msg, info
		}
	}
}

func mustContain(t *testing.T, msg []byte, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(msg), p) {
			t.Fatalf("message %.300s lacks %q", msg, p)
		}
	}
}

func initializeMsg(id int, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"sampling":{}},"clientInfo":{"name":"raw-test","version":"0"}}}`, id, version)
}

// session drives a real server through c with raw messages: initialize,
// initialized, tools/list and tools/call, and when sampling is set, a tool
// call during which the server asks the client's model.
func session(t *testing.T, c Conn, version string, sampling bool) {
	t.Helper()
	write(t, c, initializeMsg(1, version))
	res := readID(t, c, "1", nil)
	mustContain(t, res, `"protocolVersion":"`+version+`"`, `"sdk-test"`)
	write(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	write(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	mustContain(t, readID(t, c, "2", nil), `"echo"`, `"ask"`)

	// An unknown field and an unusual id spelling travel as they are.
	write(t, c, `{"jsonrpc":"2.0","id":"call-3","method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo \u263a"}},"x-extra":{"k":[1,2]}}`)
	mustContain(t, readID(t, c, `"call-3"`, nil), `"héllo ☺"`)

	write(t, c, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
	mustContain(t, readID(t, c, "4", nil), `nope`)

	if sampling {
		write(t, c, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"text":"2+2?"}}}`)
		_, req := readKind(t, c, jsonrpc.KindRequest, "sampling/createMessage")
		write(t, c, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"role":"assistant","content":{"type":"text","text":"four"},"model":"m"}}`)
		mustContain(t, readID(t, c, "5", nil), `"model said four"`)
	}
}
