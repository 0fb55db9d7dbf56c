package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/contextd/contextd/catalog"
)

// DefaultMaxMessage is the default limit on one message's size: 64 MiB. MCP
// results carry whole files and images (base64), so the limit is generous; it
// exists so that a peer that never sends a newline cannot make the reader
// buffer without end.
const DefaultMaxMessage = 64 << 20

// ErrTooLarge reports a message over the size limit. The reader has dropped
// it and can go on with the next one.
var ErrTooLarge = fmt.Errorf("jsonrpc: message over the size limit: %w", catalog.ErrBadInput)

// Reader splits newline-delimited JSON-RPC (MCP's stdio transport) into
// messages. It is not safe for concurrent use.
type Reader struct {
	br   *bufio.Reader
	max  int
	skip bool  // the rest of an oversized line is still to be dropped
	err  error // sticky error from the underlying reader
}

// NewReader reads messages from r, refusing any longer than max bytes
// (DefaultMaxMessage when max <= 0).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Read returns the next message: the bytes of its line exactly, without the
// "\n" that ends it or a "\r" before that. The slice is the caller's. Blank
// lines are skipped; a last line without "\n" is still a message. A message
// over the limit yields an error wrapping ErrTooLarge, after which Read goes
// on with the next line. At the end of input Read returns io.EOF; any other
// error of the underlying reader is returned as it is, and again on every
// later call.
func (r *Reader) Read() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		if r.skip {
			if err := r.drop(); err != nil {
				r.err = err
				return nil, err
			}
			r.skip = false
		}
		line, err := r.line()
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, err
			}
			r.err = err
			if len(line) == 0 || err != io.EOF {
				return nil, err // a line cut by a failure is no message
			}
		}
		if !blank(line) {
			return line, nil
		}
	}
}

// line reads up to and including the next "\n", returning the content. At the
// end of input it returns what there was together with the error.
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == nil { // a whole line
			l := chunk
			if buf != nil {
				buf = append(buf, chunk...)
				l = buf
			}
			n := len(l) - 1
			if n > 0 && l[n-1] == '\r' {
				n--
			}
			if n > r.max {
				return nil, r.tooLarge()
			}
			if buf == nil {
				return bytes.Clone(l[:n]), nil
			}
			return buf[:n], nil
		}
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			// Without its end yet, the line already holds len(buf)-1 bytes of
			// content at least (the last byte may be the "\r" of a "\r\n").
			if len(buf)-1 > r.max {
				r.skip = true
				return nil, r.tooLarge()
			}
			continue
		}
		n := len(buf)
		if n > 0 && buf[n-1] == '\r' {
			n--
		}
		if n > r.max {
			r.err = err
			return nil, r.tooLarge()
		}
		return buf[:n], err
	}
}

func (r *Reader) tooLarge() error {
	return fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, r.max)
}

// drop discards input up to and including the next "\n".
func (r *Reader) drop() error {
	for {
		_, err := r.br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Writer writes newline-delimited messages. Whole messages may be written from
// several goroutines at once: each goes out in one piece.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter writes messages to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes msg and a "\n". A newline inside msg would split it in two on
// the wire; in well-formed JSON a "\n" or "\r" can only be insignificant
// white space between tokens (inside strings they must be escaped), so each is
// replaced by a space. That is the only change framing makes. An empty message
// is refused.
func (w *Writer) Write(msg []byte) error {
	if blank(msg) {
		return fmt.Errorf("jsonrpc: empty message: %w", catalog.ErrBadInput)
	}
	breaks := bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0
	w.mu.Lock()
	defer w.mu.Unlock()
	if !breaks && len(msg) > 256<<10 {
		// Large and clean: two writes under the lock spare a copy.
		if _, err := w.w.Write(msg); err != nil {
			return err
		}
		_, err := w.w.Write([]byte{'\n'})
		return err
	}
	buf := append(w.buf[:0], msg...)
	if breaks {
		for i, c := range buf {
			if c == '\n' || c == '\r' {
				buf[i] = ' '
			}
		}
	}
	buf = append(buf, '\n')
	_, err := w.w.Write(buf)
	if cap(buf) <= 1<<20 {
		w.buf = buf[:0]
	} else {
		w.buf = nil // do not keep a large buffer alive for small messages
	}
	return err
}
