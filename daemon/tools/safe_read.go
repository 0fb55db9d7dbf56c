package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/workspace"
	"github.com/contextd/contextd/scrub"
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
	op := fileOp{Tool: "safe_read", Root: env.Place.Root, Rel: rel, Display: c.in.Path, Window: env.Window}
	// Secrets read from this file may be written back to it (safe_write).
	env.Source = filepath.Join(env.Place.Root, rel)
	if env.Layer != nil {
		env.Layer.Source = env.Source
	}
	if c.in.Offset != nil {
		op.Offset = *c.in.Offset
	}
	if c.in.Limit != nil {
		op.Limit = *c.in.Limit
	}
	return runFileOp(ctx, env, op)
}

// readFile is safe_read's I/O, run in tool mode inside the sandbox. It
// scrubs the file's own bytes and numbers the lines afterwards, so that a
// secret is found as it is in the file (a PEM key's lines are not broken up
// by numbers) and its placeholder stands for exactly those bytes: written
// back by safe_write, the file comes out byte for byte. Line numbers stay the
// file's: a secret spanning lines takes the numbers of the lines it hides.
func readFile(root *workspace.Root, op fileOp, sc *scrub.Scrubber, fw *frameWriter) error {
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
	var sel selection
	if first == 1 && limit < 0 {
		// The whole file, the common case: one read into a buffer mapped in
		// advance (see prefaulted).
		buf, release, err := readWhole(f, br)
		if err != nil {
			return fmt.Errorf("safe_read: %s: %w", op.Display, err)
		}
		defer release()
		sel = selection{buf: buf, a: 0, e: len(buf)}
	} else if sel, err = selectLines(br, first, limit); err != nil {
		return fmt.Errorf("safe_read: %s: %w", op.Display, err)
	}
	if first > 1 && sel.lines < first {
		return fmt.Errorf("safe_read: offset %d is past the end of %s (%d lines): %w", first, op.Display, sel.lines, catalog.ErrBadInput)
	}
	fw.mark("read")
	fs, rawFrom, rawTo := findSelected(sc, sel.buf, sel.a, sel.e, op.Window)
	fw.mark("scrub")
	err = emitNumbered(fw, sel.buf, sel.a, sel.e, first, fs, rawFrom, rawTo)
	fw.mark("emit")
	return err
}

// readWhole reads the rest of f (br wraps it and may hold its start).
func readWhole(f *os.File, br *bufio.Reader) ([]byte, func(), error) {
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	buf, release := prefaulted(int(size) + 1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew: the heap takes over
		}
		n, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, release, nil
		}
		if err != nil {
			release()
			return nil, func() {}, fmt.Errorf("read: %v: %w", err, catalog.ErrIO)
		}
	}
}

// prefaulted returns an empty buffer of capacity n whose pages are mapped
// already (MAP_POPULATE), and the function that frees it. A tool runs in a
// fresh process for every call, and on a virtual machine each first touch of
// a page can cost tens of microseconds: a 10 MB file is 2,560 of them. One
// mmap that maps them all up front is far cheaper. Small buffers, or a failed
// mmap, come from the heap.
func prefaulted(n int) ([]byte, func()) {
	if n >= 1<<20 {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err == nil {
			return b[:0], func() { unix.Munmap(b) }
		}
	}
	return make([]byte, 0, n), func() {}
}

// selection is the lines a read asked for, buf[a:e], with up to scrubMargin
// bytes of the file on either side: a secret that crosses the selection's
// edge is still seen whole.
type selection struct {
	buf   []byte
	a, e  int
	lines int // lines of the file seen (all of them when the read went to the end)
}

// selectLines reads lines first.. (at most limit; -1 for all) from r.
func selectLines(r *bufio.Reader, first, limit int) (selection, error) {
	var s selection
	s.a = -1
	atStart := true
	for {
		piece, err := r.ReadSlice('\n')
		if len(piece) > 0 {
			if atStart {
				if limit >= 0 && s.lines == first-1+limit {
					// Past the selection: keep a margin of what follows.
					s.e = len(s.buf)
					s.buf = append(s.buf, piece...)
					more := make([]byte, max(0, scrubMargin-len(piece)))
					n, _ := io.ReadFull(r, more)
					s.buf = append(s.buf, more[:n]...)
					return s, nil
				}
				s.lines++
				if s.lines == first {
					s.a = len(s.buf)
				}
			}
			s.buf = append(s.buf, piece...)
			if s.a < 0 && len(s.buf) > 2*scrubMargin {
				// Before the selection only the margin is kept.
				s.buf = append(s.buf[:0], s.buf[len(s.buf)-scrubMargin:]...)
			}
			atStart = piece[len(piece)-1] == '\n'
		}
		switch {
		case err == io.EOF:
			if s.a < 0 {
				s.a = len(s.buf)
			}
			s.e = len(s.buf)
			return s, nil
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return s, fmt.Errorf("read: %v: %w", err, catalog.ErrIO)
		}
	}
}

// findSelected finds the secrets of buf[a:e] (offsets in buf; a secret may
// reach past a or e). With a window (> 0) and a long selection it scrubs only
// the first and last window bytes, the part a first response can show, and
// reports the middle, buf[rawFrom:rawTo], as unscrubbed: the daemon scrubs
// whatever of it leaves later (a continuation page).
func findSelected(sc *scrub.Scrubber, buf []byte, a, e, window int) (fs []scrub.Finding, rawFrom, rawTo int) {
	if window <= 0 || e-a <= 2*window+2*scrubMargin {
		fs, _, _ = sc.FindRange(buf, a, e, scrubMargin)
		return fs, e, e
	}
	head, _, headEnd := sc.FindRange(buf, a, a+window, scrubMargin)
	tail, tailStart, _ := sc.FindRange(buf, e-window, e, scrubMargin)
	if headEnd >= tailStart {
		fs, _, _ = sc.FindRange(buf, a, e, scrubMargin)
		return fs, e, e
	}
	return append(head, tail...), headEnd, tailStart
}

// emitNumbered writes buf[a:e] as numbered lines ("%6d\t<line>\n", the first
// one numbered line), each finding as a secret frame, buf[rawFrom:rawTo] as
// raw frames. A last line without a newline gets one.
func emitNumbered(fw *frameWriter, buf []byte, a, e, line int, fs []scrub.Finding, rawFrom, rawTo int) error {
	// One buffer of about a MiB, sent and reused: a large file's numbered
	// copy never exists whole.
	out, release := prefaulted(min(e-a, 1<<20) + 1<<16)
	defer release()
	kind := byte(frameText)
	flush := func() error {
		err := fw.data(kind, out)
		out = out[:0]
		return err
	}
	atStart := true
	// text numbers buf[p:q], which holds no secret.
	text := func(p, q int) error {
		for p < q {
			k := byte(frameText)
			if p >= rawFrom && p < rawTo {
				k = frameRaw
			}
			end := q
			if k == frameText && p < rawFrom {
				end = min(q, rawFrom)
			} else if k == frameRaw {
				end = min(q, rawTo)
			}
			if k != kind {
				if err := flush(); err != nil {
					return err
				}
				kind = k
			}
			for p < end {
				if atStart {
					out = appendNum(out, line)
					atStart = false
				}
				if len(out) >= 1<<20 {
					if err := flush(); err != nil {
						return err
					}
				}
				nl := bytes.IndexByte(buf[p:end], '\n')
				if nl < 0 {
					out = append(out, buf[p:end]...)
					p = end
					break
				}
				out = append(out, buf[p:p+nl+1]...)
				p += nl + 1
				line++
				atStart = true
			}
		}
		return nil
	}
	at := a
	for _, f := range fs {
		if f.End <= at || f.Start >= e {
			continue
		}
		if err := text(at, max(at, f.Start)); err != nil {
			return err
		}
		if atStart {
			out = appendNum(out, line)
			atStart = false
		}
		if err := flush(); err != nil {
			return err
		}
		if err := fw.secret(f.Rule, buf[f.Start:f.End]); err != nil {
			return err
		}
		hidden := buf[max(at, f.Start):min(e, f.End)]
		line += bytes.Count(hidden, []byte{'\n'})
		atStart = len(hidden) > 0 && hidden[len(hidden)-1] == '\n'
		at = min(e, f.End)
	}
	if err := text(at, e); err != nil {
		return err
	}
	if !atStart && e > a {
		out = append(out, '\n')
	}
	return flush()
}

// appendNum appends a line number as "%6d\t".
func appendNum(b []byte, n int) []byte {
	var d [20]byte
	num := strconv.AppendInt(d[:0], int64(n), 10)
	for i := len(num); i < 6; i++ {
		b = append(b, ' ')
	}
	b = append(b, num...)
	return append(b, '\t')
}
