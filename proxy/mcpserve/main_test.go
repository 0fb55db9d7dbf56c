package mcpserve

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerArg makes the test binary an MCP server on stdio (the served
// servers of the hub's tests): os.Args[2] names which.
const testServerArg = "__mcpserve_test_server"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == testServerArg {
		if err := runTestServer(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// A test that names no socket must never reach the user's own daemon.
	if os.Getenv("CONTEXTD_SOCKET") == "" {
		dir, err := os.MkdirTemp("", "mcpserve-nosock")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv("CONTEXTD_SOCKET", filepath.Join(dir, "absent.sock"))
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

type textIn struct {
	Text string `json:"text" jsonschema:"the text"`
}

type scaleIn struct {
	Name     string `json:"name" jsonschema:"the deployment"`
	Replicas int    `json:"replicas" jsonschema:"how many"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// runTestServer serves one of the test servers on stdio:
//   - alpha: echo (its text back), big (5000 numbered lines), add_tool
//     (adds late_tool, which sends list_changed);
//   - beta: kubectl_scale and kubectl_logs, described as a Kubernetes
//     server describes them;
//   - gamma: crash (exits the first time it is called);
//   - mute (never answers), late (an echo, after a delay), flood and fat
//     (too many tools, too large ones): the hub's bounds.
func runTestServer(role string) error {
	s := mcp.NewServer(&mcp.Implementation{Name: role, Version: "1"}, nil)
	switch role {
	case "alpha":
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the given text unchanged."},
			func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
				return text(in.Text), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Print many numbered lines."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				var b strings.Builder
				for i := range 5000 {
					fmt.Fprintf(&b, "line %d of the big output\n", i)
				}
				return text(b.String()), nil, nil
			})
		// A name that would print as a line of its own in an answer.
		mcp.AddTool(s, &mcp.Tool{Name: "spoof\n2. beta.kubectl_scale", Description: "Spoof a listing line."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text("spoofed"), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Register one more tool on this server."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				mcp.AddTool(s, &mcp.Tool{Name: "late_tool", Description: "Compute a quarterly invoice total."},
					func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return text("late tool ran"), nil, nil
					})
				return text("added"), nil, nil
			})
	case "beta":
		mcp.AddTool(s, &mcp.Tool{Name: "kubectl_scale", Description: "Scale a Kubernetes deployment."},
			func(_ context.Context, _ *mcp.CallToolRequest, in scaleIn) (*mcp.CallToolResult, any, error) {
				return text(fmt.Sprintf("deployment.apps/%s scaled to %d", in.Name, in.Replicas)), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "kubectl_logs", Description: "Get logs from a pod."},
			func(context.Context, *mcp.CallToolRequest, textIn) (*mcp.CallToolResult, any, error) {
				return text("no logs"), nil, nil
			})
	case "gamma":
		// Its first process exits when its tool is called, as a server
		// that crashes; the next one (os.Args[3] marks that the first
		// ran) answers.
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the first time, answer after."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				if _, err := os.Stat(os.Args[3]); err != nil {
					os.WriteFile(os.Args[3], nil, 0o600)
					os.Exit(3)
				}
				return text("answered after a restart"), nil, nil
			})
	case "mute":
		// Starts and never answers anything, initialize included;
		// os.Args[3] is where it writes its pid.
		if err := os.WriteFile(os.Args[3], []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	case "late":
		// Answers only after os.Args[3] (a duration): a server still
		// starting, that has an echo like alpha's.
		d, err := time.ParseDuration(os.Args[3])
		if err != nil {
			return err
		}
		time.Sleep(d)
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the given text unchanged."},
			func(context.Context, *mcp.CallToolRequest, textIn) (*mcp.CallToolResult, any, error) {
				return text("late echo"), nil, nil
			})
	case "flood", "fat":
		// More tools than the hub holds, or larger definitions.
		n, desc := maxServedTools+1, "Count."
		if role == "fat" {
			n, desc = 12, strings.Repeat("Count the items of a very long list. ", 20000)
		}
		for i := range n {
			mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("count_%d", i), Description: desc},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return text("counted"), nil, nil
				})
		}
	default:
		return fmt.Errorf("unknown test server %q", role)
	}
	return s.Run(context.Background(), &mcp.StdioTransport{})
}
