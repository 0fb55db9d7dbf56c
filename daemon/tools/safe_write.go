package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/workspace"
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
	return runFileOp(ctx, env, fileOp{Tool: "safe_write", Root: env.Place.Root, Rel: rel, Display: c.in.Path, Content: c.in.Content})
}

// writeFile is safe_write's I/O, run in tool mode inside the sandbox.
func writeFile(root *workspace.Root, op fileOp, out *bufio.Writer) error {
	if op.Content == nil {
		return fmt.Errorf("safe_write: no content: %w", catalog.ErrInternal)
	}
	data := []byte(*op.Content)
	res, err := root.WriteFile(op.Rel, data)
	if err != nil {
		return fmt.Errorf("safe_write: %w", err)
	}
	verb := "replaced"
	if res.Created {
		verb = "created"
	}
	lines := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	fmt.Fprintf(out, "%s %s: %s, %s, mode %04o\n", verb, res.Path, plural(len(data), "byte"), plural(lines, "line"), res.Mode)
	return nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
