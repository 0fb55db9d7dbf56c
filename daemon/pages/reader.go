package pages

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Reader reads a stored output for its pages. It is an io.ReaderAt, safe for
// concurrent use. An output expired or evicted while it is open stays readable
// through it until Close.
type Reader struct {
	f      *os.File
	r      record // a copy: the index's may go away
	offset int64
}

// Open returns the output ref names, if session stored it and it has not
// expired; otherwise ErrUnknown, the same for every reason, so that one
// session cannot learn about another's outputs. The reader's Offset is where
// ref says the page starts.
func (s *Store) Open(session, ref string) (*Reader, error) {
	id, off, err := ParseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	key := sessionKey(session)
	now := s.now()
	s.mu.Lock()
	r, ok := s.index[id]
	if ok && !now.Before(r.Expires) {
		// Expired before the janitor came by: gone now.
		s.drop(id)
		s.mu.Unlock()
		s.remove(r.Session, id)
		return nil, ErrUnknown
	}
	s.mu.Unlock()
	if !ok || r.Session != key || off > r.Size {
		return nil, ErrUnknown
	}
	p := filepath.Join(s.dir, key, id+".out")
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrUnknown // evicted or swept since the lookup
	}
	if err != nil {
		return nil, fmt.Errorf("pages: open %s: %w", p, err)
	}
	rr := &Reader{f: f, r: *r, offset: off}
	rr.r.Meta = r.Meta.clone()
	return rr, nil
}

// ReadAt implements io.ReaderAt over the stored bytes.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.r.Size {
		return 0, io.EOF
	}
	if rest := r.r.Size - off; int64(len(p)) > rest {
		n, err := r.f.ReadAt(p[:rest], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return r.f.ReadAt(p, off)
}

// ID returns the output's id.
func (r *Reader) ID() string { return r.r.id }

// Offset returns where the reference given to Open says the page starts.
func (r *Reader) Offset() int64 { return r.offset }

// Size returns the number of bytes stored.
func (r *Reader) Size() int64 { return r.r.Size }

// Lines returns the number of '\n' stored.
func (r *Reader) Lines() int64 { return r.r.Lines }

// Dropped returns the bytes of the output past MaxEntry, which were not
// stored: when it is not zero, the last page should say the output was cut.
func (r *Reader) Dropped() int64 { return r.r.Dropped }

// Expires returns when the output stops being readable.
func (r *Reader) Expires() time.Time { return r.r.Expires }

// Meta returns the metadata given to Commit.
func (r *Reader) Meta() Meta { return r.r.Meta.clone() }

// Close closes the reader.
func (r *Reader) Close() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("pages: close %s: %w", r.f.Name(), err)
	}
	return nil
}
