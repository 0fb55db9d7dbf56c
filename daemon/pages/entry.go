package pages

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeBuffer batches small writes (commands write a line at a time) into
// few syscalls, and is all an Entry holds in memory, whatever the output's
// size.
const writeBuffer = 64 << 10

// Entry is an output being stored. It is an io.Writer for one goroutine:
// write the output, then Commit it to make it readable, or Discard it when it
// fit the response. Deferring Discard right after Create is safe: after
// Commit it does nothing.
type Entry struct {
	s       *Store
	key, id string
	tool    string
	path    string
	f       *os.File
	w       *bufio.Writer
	size    int64 // bytes stored
	lines   int64 // '\n' among them
	dropped int64 // bytes past MaxEntry
	holes   []Hole
	holeLen int64 // bytes of the holes
	err     error // the first write error; every later call returns it
	done    bool  // committed or discarded
}

// Create starts storing an output of tool for session.
func (s *Store) Create(session, tool string) (*Entry, error) {
	if session == "" {
		return nil, errors.New("pages: create: empty session id")
	}
	key := sessionKey(session)
	dir := filepath.Join(s.dir, key)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("pages: mkdir %s: %w", dir, err)
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, id+".out")
	// O_EXCL: a new file or nothing; never write through something planted.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pages: open %s: %w", p, err)
	}
	return &Entry{s: s, key: key, id: id, tool: tool, path: p, f: f, w: bufio.NewWriterSize(f, writeBuffer)}, nil
}

// ID returns the output's id, for FormatRef: a response can name its pages
// before Commit (which must still happen before they are read).
func (e *Entry) ID() string { return e.id }

// Size returns the bytes stored so far (at most MaxEntry).
func (e *Entry) Size() int64 { return e.size }

// Lines returns the number of '\n' stored so far.
func (e *Entry) Lines() int64 { return e.lines }

// Dropped returns the bytes written past MaxEntry, which are not stored.
func (e *Entry) Dropped() int64 { return e.dropped }

// Write stores p. Past MaxEntry it drops the bytes but still reports them
// written, so that the command producing them is drained, not failed.
func (e *Entry) Write(p []byte) (int, error) {
	if e.done {
		return 0, fmt.Errorf("pages: write %s: %w", e.path, os.ErrClosed)
	}
	if e.err != nil {
		return 0, e.err
	}
	keep := p[:min(int64(len(p)), max(e.s.maxEntry-e.size, 0))]
	n, err := e.w.Write(keep)
	e.size += int64(n)
	e.lines += int64(bytes.Count(keep[:n], []byte{'\n'}))
	if err != nil {
		e.err = fmt.Errorf("pages: write %s: %w", e.path, err)
		return n, e.err
	}
	e.dropped += int64(len(p) - len(keep))
	return len(p), nil
}

// Hole adds n bytes to the output that are not stored: a page that needs
// them gets them from the reader's FillFunc, given source. Past MaxEntry the
// hole is dropped like bytes are.
func (e *Entry) Hole(n int64, source []byte) error {
	if e.done {
		return fmt.Errorf("pages: hole in %s: %w", e.path, os.ErrClosed)
	}
	if n <= 0 || len(source) == 0 {
		return fmt.Errorf("pages: hole of %d bytes without a source", n)
	}
	if e.dropped > 0 {
		e.dropped += n
		return nil
	}
	e.holes = append(e.holes, Hole{At: e.size + e.holeLen, Len: n, Source: append([]byte(nil), source...)})
	e.holeLen += n
	return nil
}

// Commit makes the output readable for its session until it expires, and
// returns the reference to its first byte. meta is kept with it; when it has
// no "tool", the tool given to Create is recorded. If storing the output
// would take the store past MaxTotal, the oldest outputs are evicted; an
// output larger than MaxTotal itself is refused with ErrTooLarge. On error the
// output is discarded.
func (e *Entry) Commit(meta Meta) (ref string, err error) {
	if e.done {
		return "", fmt.Errorf("pages: commit %s: %w", e.path, os.ErrClosed)
	}
	defer func() {
		if err != nil {
			e.Discard()
		}
	}()
	if e.err != nil {
		return "", e.err
	}
	if err := e.w.Flush(); err != nil {
		return "", fmt.Errorf("pages: write %s: %w", e.path, err)
	}
	if err := e.f.Close(); err != nil {
		return "", fmt.Errorf("pages: close %s: %w", e.path, err)
	}
	if e.size > e.s.maxTotal {
		return "", fmt.Errorf("pages: %d bytes of output, store limit (MaxTotal) %d: %w", e.size, e.s.maxTotal, ErrTooLarge)
	}
	m := meta.clone()
	if _, ok := m["tool"]; !ok && e.tool != "" {
		if m == nil {
			m = Meta{}
		}
		m["tool"] = e.tool
	}
	now := e.s.now()
	r := &record{id: e.id, Session: e.key, Size: e.size, Lines: e.lines, Dropped: e.dropped,
		Created: now, Expires: now.Add(e.s.ttl), Meta: m, Holes: e.holes}
	if err := e.s.writeMeta(r); err != nil {
		return "", err
	}
	e.done = true
	// A failed removal of an evicted output leaves files that are already
	// unreachable; the next daemon's Open removes them. Not this call's error.
	_ = e.s.removeAll(e.s.admit(r))
	return FormatRef(e.id, 0), nil
}

// Discard removes the output. It does nothing after Commit or a previous
// Discard.
func (e *Entry) Discard() error {
	if e.done {
		return nil
	}
	e.done = true
	e.f.Close() // already closed if Commit failed late; the file goes anyway
	return e.s.remove(e.key, e.id)
}
