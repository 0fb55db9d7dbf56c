package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/tools/toolproto"
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
	// back; others are written as they are, and the caller is told. "This
	// very file" is the one the read of this path opened: the sandbox
	// replaces it and nothing else (Op.Over), so that a link or directory
	// swapped in since cannot carry its secrets into another file.
	name := filepath.Join(env.Place.Root, rel)
	content := *c.in.Content
	var warnings, put []string
	var over string
	if env.Vault != nil {
		over = env.Vault.FileOf(name)
		var out []byte
		var unresolved []string
		out, put, unresolved = env.Vault.RestoreFile([]byte(content), over)
		content = string(out)
		if len(unresolved) > 0 {
			warnings = append(warnings, fmt.Sprintf(
				"%d placeholder(s) written as they are (%s): they did not come from reading %s in this session, so contextd has no secret to put back",
				len(unresolved), strings.Join(firstN(unresolved, 3), ", "), c.in.Path))
		}
	}
	if len(put) == 0 {
		over = "" // no secret of a file in content: any target will do
	}
	git := gitguard.Find(env.Place.Root)
	o := guardGit("safe_write", env, git, func() Outcome {
		return runFileOp(ctx, env, toolproto.Op{Tool: "safe_write", Root: env.Place.Root, Rel: rel, Display: c.in.Path, Content: &content, Over: over}, "", git)
	})
	o.Warnings = append(warnings, o.Warnings...)
	if key := o.File.Key(); key != "" && o.Err == nil && len(put) > 0 {
		// The write made a new file (a new inode) that holds these
		// secrets: the next write by this path may put them back there.
		env.Vault.Bind(put, key)
		env.Vault.Opened(name, key)
		env.Vault.Opened(o.File.Path, key)
	}
	return o
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}
