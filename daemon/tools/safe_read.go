package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/workspace"
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

// sniffLen is how much of a file is checked for NUL bytes to tell binary from text,
// as git and grep do.
const sniffLen = 8000

func (c *readCall) Run(ctx context.Context, env *Env) Outcome {
	rel, err := env.Place.Resolve(c.in.Path)
	if err != nil {
		return Outcome{Err: fmt.Errorf("safe_read: %w", err)}
	}
	op := fileOp{Tool: "safe_read", Root: env.Place.Root, Rel: rel, Display: c.in.Path}
	if c.in.Offset != nil {
		op.Offset = *c.in.Offset
	}
	if c.in.Limit != nil {
		op.Limit = *c.in.Limit
	}
	return runFileOp(ctx, env, op)
}

// readFile is safe_read's I/O, run in tool mode inside the sandbox.
func readFile(root *workspace.Root, op fileOp, out *bufio.Writer) error {
	f, err := root.OpenRead(op.Rel)
	if err != nil {
		return fmt.Errorf("safe_read: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffLen)
	if bytes.IndexByte(head, 0) >= 0 {
		return fmt.Errorf("safe_read: %s looks binary (NUL bytes): %w", op.Display, catalog.ErrNotRegular)
	}
	first, limit := max(op.Offset, 1), -1
	if op.Limit > 0 {
		limit = op.Limit
	}
	n, err := numberLines(br, out, first, limit)
	if err != nil {
		return fmt.Errorf("safe_read: %s: %w", op.Display, err)
	}
	if first > 1 && n < first {
		return fmt.Errorf("safe_read: offset %d is past the end of %s (%d lines): %w", first, op.Display, n, catalog.ErrBadInput)
	}
	return nil
}

// numberLines copies lines first.. (at most limit; -1 for all) from r to w as
// "%6d\t<line>\n", streaming (a line longer than the buffer is copied in pieces),
// and returns how many lines of r it saw. A last line without a newline gets one.
func numberLines(r *bufio.Reader, w *bufio.Writer, first, limit int) (int, error) {
	n := 0
	atStart, printing := true, false
	for {
		piece, err := r.ReadSlice('\n')
		if len(piece) > 0 {
			if atStart {
				if printing && limit == 0 {
					return n, nil
				}
				n++
				printing = n >= first
				if printing {
					w.WriteString(padNum(n))
					w.WriteByte('\t')
					if limit > 0 {
						limit--
					}
				}
			}
			if printing {
				w.Write(piece)
			}
			atStart = piece[len(piece)-1] == '\n'
		}
		switch {
		case err == io.EOF:
			if !atStart && printing {
				w.WriteByte('\n')
			}
			return n, nil
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return n, fmt.Errorf("read: %v: %w", err, catalog.ErrIO)
		}
	}
}

func padNum(n int) string {
	s := strconv.Itoa(n)
	if len(s) < 6 {
		s = "      "[:6-len(s)] + s
	}
	return s
}
