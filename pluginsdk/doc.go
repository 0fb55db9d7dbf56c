// Package pluginsdk is how a contextd tool is written in Go: implement Tool,
// call Serve from main, and contextd runs the binary as a plugin in its
// sandbox, with the same scrub, budget, pages and audit as its own tools.
//
// A whole tool:
//
//	package main
//
//	import (
//		"context"
//		"encoding/json"
//		"fmt"
//
//		"github.com/contextd/contextd/pluginsdk"
//	)
//
//	type greet struct{}
//
//	func (greet) Execute(ctx context.Context, input json.RawMessage, out pluginsdk.Output) (pluginsdk.Result, error) {
//		var in struct{ Name string `json:"name"` }
//		if err := json.Unmarshal(input, &in); err != nil {
//			return pluginsdk.Result{}, err
//		}
//		fmt.Fprintf(out, "hello, %s\n", in.Name)
//		return pluginsdk.Result{Data: map[string]string{"greeted": in.Name}}, nil
//	}
//
//	func main() { pluginsdk.Serve(greet{}) }
//
// What Execute gets and gives:
//
//   - input is the agent's JSON, already checked against the tool's
//     schema.json.
//   - Text written to out streams to the agent as it is written; a long
//     output is cut to the call's budget and paged by contextd, so write it
//     all rather than trimming it yourself.
//   - The Result's Data is marshalled as JSON; Refs name what the agent may
//     follow; Truncated says the tool itself left something out; ExitCode is a
//     command-like tool's status.
//   - A returned error fails the call with its message (exit code 1 unless
//     the Result says otherwise). A panic fails the call too; the plugin keeps
//     serving.
//   - ctx ends when the call is cancelled or reaches its deadline (the
//     manifest's timeout): stop then, and return ctx.Err().
//   - CallOf(ctx) gives the call's session and workspace, and its Host: the
//     daemon's scrubber, log, memory and checkpoints, scoped to the session.
//
// The binary speaks go-plugin's gRPC protocol (wire/toolplugin); run by
// hand it explains itself and exits.
package pluginsdk
