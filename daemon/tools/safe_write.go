package tools

import (
	"bytes"
	"context"
	"fmt"

	"github.com/contextd/contextd/catalog"
)

// SafeWrite replaces a file of the workspace atomically.
type SafeWrite struct{}

// Name implements Tool.
func (SafeWrite) Name() string { return "safe_write" }

// WriteInput is safe_write's input (toolspec/safe_write/schema.json). Content is a
// pointer so that an empty file ("") is told apart from a missing field.
type WriteInput struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// Decode implements Tool.
func (SafeWrite) Decode(input []byte) (Call, error) {
	var in WriteInput
	if err := decodeStrict("safe_write", input, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, missing("safe_write", "path")
	}
	if in.Content == nil {
		return nil, missing("safe_write", "content")
	}
	return &writeCall{in}, nil
}

type writeCall struct{ in WriteInput }

func (c *writeCall) Run(ctx context.Context, env *Env) Outcome {
	rel, err := env.Place.Resolve(c.in.Path)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_write: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return Outcome{Err: canceled(ctx)}
	}
	root, err := openRoot(env)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_write: %w", err)}
	}
	defer root.Close()
	data := []byte(*c.in.Content)
	res, err := root.WriteFile(rel, data)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_write: %w", err)}
	}
	verb := "replaced"
	if res.Created {
		verb = "created"
	}
	lines := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	if _, err := fmt.Fprintf(env.Out, "%s %s: %s, %s, mode %04o\n", verb, res.Path, plural(len(data), "byte"), plural(lines, "line"), res.Mode); err != nil {
		// The file is written; only the confirmation was lost.
		return Outcome{Err: fmt.Errorf("safe_write: wrote %s but could not confirm: %w", res.Path, catalog.ErrConnectionLost)}
	}
	return Outcome{}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
