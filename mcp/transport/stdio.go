package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// StdioOptions configures a stdio Conn. The zero value (or nil) means the
// defaults.
type StdioOptions struct {
	// MaxMessage is the largest message read, in bytes
	// (jsonrpc.DefaultMaxMessage when <= 0).
	MaxMessage int
}

// Stdio is MCP's stdio transport: newline-delimited messages over a reader
// and a writer. It serves the agent's side of a wrap (the proxy's stdin and
// stdout) and a server launched as a process (its stdout and stdin).
type Stdio struct {
	r  *jsonrpc.Reader
	w  *jsonrpc.Writer
	rc io.Closer // the reader, when it can be closed
	wc io.Closer // the writer, when it can be closed

	in       chan readResult
	done     chan struct{} // closed by Close
	pumpOnce sync.Once
	closing  sync.Once

	mu     sync.Mutex
	sticky error // the reader's final error, repeated by every later Read
}

type readResult struct {
	msg []byte
	err error
}

// NewStdio reads messages from r and writes them to w. Close closes whichever
// of the two is an io.Closer: for a server process, closing its stdin is how
// MCP asks it to exit.
func NewStdio(r io.Reader, w io.Writer, opts *StdioOptions) *Stdio {
	if opts == nil {
		opts = &StdioOptions{}
	}
	s := &Stdio{
		r:    jsonrpc.NewReader(r, opts.MaxMessage),
		w:    jsonrpc.NewWriter(w),
		in:   make(chan readResult),
		done: make(chan struct{}),
	}
	s.rc, _ = r.(io.Closer)
	s.wc, _ = w.(io.Closer)
	return s
}

// pump reads in the background, so that Read can honour its context: a read
// from a pipe cannot itself be interrupted, only ended by closing the pipe.
func (s *Stdio) pump() {
	for {
		msg, err := s.r.Read()
		select {
		case s.in <- readResult{msg, err}:
		case <-s.done:
			return
		}
		if err != nil && !errors.Is(err, jsonrpc.ErrTooLarge) {
			return
		}
	}
}

// Read implements Conn.
func (s *Stdio) Read(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	sticky := s.sticky
	s.mu.Unlock()
	if sticky != nil {
		return nil, sticky
	}
	s.pumpOnce.Do(func() { go s.pump() })
	select {
	case res := <-s.in:
		if res.err != nil && !errors.Is(res.err, jsonrpc.ErrTooLarge) {
			if res.err != io.EOF {
				res.err = fmt.Errorf("mcp stdio: read: %w: %w", catalog.ErrIO, res.err)
			}
			s.mu.Lock()
			s.sticky = res.err
			s.mu.Unlock()
		}
		return res.msg, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

// Write implements Conn. A write blocked on a full pipe ends when the pipe is
// closed, not when ctx does; ctx is checked before writing.
func (s *Stdio) Write(ctx context.Context, msg []byte) error {
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.w.Write(msg); err != nil {
		if errors.Is(err, catalog.ErrBadInput) {
			return err
		}
		return fmt.Errorf("mcp stdio: write: %w: %w", catalog.ErrIO, err)
	}
	return nil
}

// Close implements Conn: it closes the writer, then the reader.
func (s *Stdio) Close() error {
	var err error
	s.closing.Do(func() {
		close(s.done)
		var errs []error
		if s.wc != nil {
			errs = append(errs, s.wc.Close())
		}
		if s.rc != nil && !sameCloser(s.rc, s.wc) {
			errs = append(errs, s.rc.Close())
		}
		for _, e := range errs {
			if e != nil && !IsClosed(e) {
				err = fmt.Errorf("mcp stdio: close: %w: %w", catalog.ErrIO, e)
			}
		}
	})
	return err
}

// sameCloser reports whether a and b are one object (a socket used both ways),
// without comparing values whose types are not comparable.
func sameCloser(a, b io.Closer) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
