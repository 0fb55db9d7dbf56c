// Command smoke is a contextd tool for checking a plugin setup end to end:
// it prints a text, a number of numbered lines, and then waits. That is what
// shows contextd's scrubbing (a planted secret in the text), its paging (many
// lines) and its cancellation and timeouts (the wait) at work on a plugin.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/contextd/contextd/pluginsdk"
)

type smoke struct{}

func (smoke) Execute(ctx context.Context, input json.RawMessage, out pluginsdk.Output) (pluginsdk.Result, error) {
	var in struct {
		Text  string  `json:"text"`
		Lines int     `json:"lines"`
		Sleep float64 `json:"sleep_seconds"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return pluginsdk.Result{}, fmt.Errorf("input: %w", err)
	}
	if in.Text != "" {
		fmt.Fprintln(out, in.Text)
	}
	// Buffered, so that many short lines go out in few frames.
	w := bufio.NewWriterSize(out, 16<<10)
	for i := 1; i <= in.Lines; i++ {
		fmt.Fprintf(w, "line %d of %d\n", i, in.Lines)
	}
	if err := w.Flush(); err != nil {
		return pluginsdk.Result{}, err
	}
	if in.Sleep > 0 {
		fmt.Fprintf(out, "sleeping %gs\n", in.Sleep)
		select {
		case <-time.After(time.Duration(in.Sleep * float64(time.Second))):
		case <-ctx.Done():
			return pluginsdk.Result{}, ctx.Err()
		}
	}
	return pluginsdk.Result{Data: map[string]any{"lines": in.Lines, "slept_seconds": in.Sleep}}, nil
}

func main() { pluginsdk.Serve(smoke{}) }
