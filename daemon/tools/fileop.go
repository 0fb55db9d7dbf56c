package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/workspace"
)

// fileOp is a file tool's operation as the daemon hands it to the sandbox: the
// input is decoded and the path resolved against the workspace in the daemon; the
// file I/O itself happens in the sandbox, in contextd's tool mode (ToolMain), where
// the workspace is the only writable place and the seccomp allowlist admits only
// what this code needs. The confinement by openat2 applies there too.
type fileOp struct {
	Tool    string  `json:"tool"`
	Root    string  `json:"root"`
	Rel     string  `json:"rel"`
	Display string  `json:"display"` // the path as the caller wrote it, for messages
	Offset  int     `json:"offset,omitempty"`
	Limit   int     `json:"limit,omitempty"`
	Content *string `json:"content,omitempty"`
}

// runFileOp runs op through the call's runner and turns the tool process's report
// back into an outcome.
func runFileOp(ctx context.Context, env *Env, op fileOp) Outcome {
	in, err := json.Marshal(op)
	if err != nil {
		return Outcome{Err: fmt.Errorf("%s: encode operation: %v: %w", op.Tool, err, catalog.ErrInternal)}
	}
	var stderr bytes.Buffer
	ex, err := env.Runner.Run(ctx, runner.Spec{
		Tool:      op.Tool,
		Mode:      runner.Tool,
		Args:      []string{op.Tool},
		Stdin:     in,
		Dir:       env.Place.Root,
		Env:       []string{"PATH=/usr/bin:/bin"},
		Workspace: env.Place.Root,
		Home:      homeDir(),
		ReadOnly:  protected(env.Place.Root),
		Output:    env.Out,
		Stderr:    &limitedBuffer{buf: &stderr, max: 64 << 10},
		Timeout:   env.Config.Tools.FileTimeout.Duration,
		Limits:    env.limits(op.Tool),
	})
	env.Layers = ex.Layers
	if err != nil {
		return Outcome{Err: fmt.Errorf("%s: %w", op.Tool, err)}
	}
	switch {
	case ex.TimedOut:
		return Outcome{Err: fmt.Errorf("%s: killed after %s: %w", op.Tool, env.Config.Tools.FileTimeout, catalog.ErrTimeout)}
	case ex.Canceled:
		return Outcome{Err: canceled(ctx)}
	case ex.Code == 0:
		return Outcome{}
	}
	// The tool reports its failure as one JSON catalog error on stderr.
	var d catalog.Detail
	if json.Unmarshal(bytes.TrimSpace(stderr.Bytes()), &d) == nil && d.Code != "" {
		return Outcome{Err: catalog.FromDetail(&d)}
	}
	return Outcome{Err: fmt.Errorf("%s: the sandboxed tool failed (exit %d): %s: %w",
		op.Tool, ex.Code, strings.TrimSpace(stderr.String()), catalog.ErrInternal)}
}

// ToolMain is contextd's tool mode: it reads one fileOp on stdin, performs it,
// writes the tool's output on stdout, and on failure one JSON catalog error on
// stderr; the exit status is the error's. It runs inside the sandbox, already
// under the tool's seccomp profile.
func ToolMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := toolMain(args, stdin, stdout)
	if err == nil {
		return 0
	}
	b, _ := json.Marshal(catalog.ToDetail(err))
	stderr.Write(append(b, '\n'))
	return catalog.ExitCode(err)
}

func toolMain(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("tool mode: want one argument (the tool), got %d: %w", len(args), catalog.ErrUsage)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<30))
	if err != nil {
		return fmt.Errorf("tool mode: read operation: %v: %w", err, catalog.ErrIO)
	}
	var op fileOp
	if err := json.Unmarshal(b, &op); err != nil {
		return fmt.Errorf("tool mode: decode operation: %v: %w", err, catalog.ErrInternal)
	}
	if op.Tool != args[0] {
		return fmt.Errorf("tool mode: operation for %q given to %q: %w", op.Tool, args[0], catalog.ErrInternal)
	}
	root, err := workspace.Open(op.Root)
	if err != nil {
		return fmt.Errorf("%s: %w", op.Tool, err)
	}
	defer root.Close()
	out := bufio.NewWriterSize(stdout, 64<<10)
	switch op.Tool {
	case "safe_read":
		err = readFile(root, op, out)
	case "safe_write":
		err = writeFile(root, op, out)
	default:
		err = fmt.Errorf("tool mode: %q: %w", op.Tool, catalog.ErrUnknownTool)
	}
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("%s: send output: %v: %w", op.Tool, ferr, catalog.ErrIO)
	}
	return err
}

// limitedBuffer keeps at most max bytes: a tool's error report is small, and a
// broken tool must not make the daemon buffer without bound.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
