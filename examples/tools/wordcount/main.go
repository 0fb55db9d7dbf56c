// Command wordcount is a contextd tool written with pluginsdk: it counts the
// lines and words of a text, streaming one line per input line.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/contextd/contextd/pluginsdk"
)

type wordcount struct{}

func (wordcount) Execute(ctx context.Context, input json.RawMessage, out pluginsdk.Output) (pluginsdk.Result, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return pluginsdk.Result{}, fmt.Errorf("input: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(in.Text, "\n"), "\n")
	words := 0
	for i, line := range lines {
		if err := ctx.Err(); err != nil {
			return pluginsdk.Result{}, err
		}
		n := len(strings.Fields(line))
		words += n
		fmt.Fprintf(out, "%d: %d words\n", i+1, n)
	}
	return pluginsdk.Result{Data: map[string]int{"lines": len(lines), "words": words}}, nil
}

func main() { pluginsdk.Serve(wordcount{}) }
