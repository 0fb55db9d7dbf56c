package tools

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
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
	// Placeholders the agent read from this very file get their secrets
	// back; others are written as they are, and the caller is told.
	content := *c.in.Content
	if env.Vault != nil {
		out, _, unresolved := env.Vault.Restore([]byte(content), filepath.Join(env.Place.Root, rel))
		content = string(out)
		if len(unresolved) > 0 {
			env.Warnings = append(env.Warnings, fmt.Sprintf(
				"%d placeholder(s) written as they are (%s): they did not come from reading %s in this session, so contextd has no secret to put back",
				len(unresolved), strings.Join(firstN(unresolved, 3), ", "), c.in.Path))
		}
	}
	return runFileOp(ctx, env, toolproto.Op{Tool: "safe_write", Root: env.Place.Root, Rel: rel, Display: c.in.Path, Content: &content})
}

// writeFile is safe_write's I/O, run in tool mode inside the sandbox.
func writeFile(root *workspace.Root, op toolproto.Op, sc *scrub.Scrubber, fw *toolproto.Writer) error {
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
	msg := []byte(fmt.Sprintf("%s %s: %s, %s, mode %04o\n", verb, res.Path, plural(len(data), "byte"), plural(lines, "line"), res.Mode))
	return fw.Scrubbed(msg, sc.Find(msg))
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}
