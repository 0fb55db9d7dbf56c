package tools

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/gitguard"
	"github.com/contextd/contextd/daemon/tools/toolproto"
)

// SafeRead prints a text file of the workspace with line numbers.
type SafeRead struct{}

// Name implements Tool.
func (SafeRead) Name() string { return "safe_read" }

// ReadInput is safe_read's input (toolspec/safe_read/schema.json).
type ReadInput struct {
	Path   string `json:"path"`
	Offset *int   `json:"offset,omitempty"` // first line, 1-based
	Limit  *int   `json:"limit,omitempty"`  // most lines
}

// Decode implements Tool.
func (SafeRead) Decode(input []byte) (Call, error) {
	var in ReadInput
	if err := decodeStrict("safe_read", input, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, missing("safe_read", "path")
	}
	if in.Offset != nil && *in.Offset < 1 {
		return nil, fmt.Errorf("safe_read: offset is a 1-based line number: %w", catalog.ErrBadInput)
	}
	if in.Limit != nil && *in.Limit < 1 {
		return nil, fmt.Errorf("safe_read: limit must be at least 1: %w", catalog.ErrBadInput)
	}
	return &readCall{in}, nil
}

type readCall struct{ in ReadInput }

func (c *readCall) Run(ctx context.Context, env *Env) Outcome {
	rel, err := env.Place.Resolve(c.in.Path)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_read: %w", err)}
	}
	op := toolproto.Op{Tool: "safe_read", Root: env.Place.Root, Rel: rel, Display: c.in.Path, Window: env.Window}
	// Secrets read from this file may be written back to it (safe_write):
	// they are tied to the file the sandbox reports it opened (its device,
	// inode and resolved path), not to the path as written, which a link
	// or a renamed directory can point elsewhere by the time of the write.
	// Until that report nothing is tied to any file.
	source := filepath.Join(env.Place.Root, rel)
	if env.Layer != nil {
		env.Layer.Source = ""
	}
	if env.Salience != nil {
		op.Salience = &toolproto.Salience{}
		for _, r := range env.Salience.UserRules() {
			op.Salience.Rules = append(op.Salience.Rules, toolproto.SalienceRule{Name: r.Name, Pattern: r.Pattern,
				Kind: r.Kind, Before: r.Before, After: r.After})
		}
	}
	if c.in.Offset != nil {
		op.Offset = *c.in.Offset
	}
	if c.in.Limit != nil {
		op.Limit = *c.in.Limit
	}
	if _, ok := env.Out.(holeWriter); !ok {
		op.Window = 0 // an output that cannot hold a gap gets every byte
	}
	o := runFileOp(ctx, env, op, "", gitguard.Find(env.Place.Root))
	o.Source = source
	if key := o.File.Key(); key != "" && o.Err == nil && env.Vault != nil {
		env.Vault.Opened(source, key)
		env.Vault.Opened(o.File.Path, key)
	}
	return o
}
