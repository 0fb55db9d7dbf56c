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
	fill   FillFunc
}

// FillFunc fills p with the bytes [off, off+len(p)) of a hole (off counted
// from the hole's start), made again from the hole's source.
type FillFunc func(source []byte, off int64, p []byte) error

// ErrNoFill is returned by ReadAt for bytes in a hole when no FillFunc is set.
var ErrNoFill = errors.New("pages: output has parts not stored, and no way to make them was given")

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
	if !ok || r.Session != key || off > r.length() {
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

// SetFill sets how ReadAt makes the bytes of the output's holes.
func (r *Reader) SetFill(f FillFunc) { r.fill = f }

// ReadAt implements io.ReaderAt over the output: stored bytes from the file,
// holes from the FillFunc.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	size := r.Size()
	if off < 0 {
		return 0, fmt.Errorf("pages: read at %d: negative offset", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	var eof error
	if rest := size - off; int64(len(p)) > rest {
		p, eof = p[:rest], io.EOF
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		// before is the bytes of the holes that end at or before at; next
		// is the first hole that does not.
		before, next := int64(0), (*Hole)(nil)
		for i := range r.r.Holes {
			h := &r.r.Holes[i]
			if h.At+h.Len <= at {
				before += h.Len
				continue
			}
			next = h
			break
		}
		if next != nil && next.At <= at {
			k := int(min(int64(len(p)-n), next.At+next.Len-at))
			if r.fill == nil {
				return n, ErrNoFill
			}
			if err := r.fill(next.Source, at-next.At, p[n:n+k]); err != nil {
				return n, err
			}
			n += k
			continue
		}
		end := size
		if next != nil {
			end = next.At
		}
		k := int(min(int64(len(p)-n), end-at))
		m, err := r.f.ReadAt(p[n:n+k], at-before)
		n += m
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the file is shorter than its record
			}
			return n, err
		}
	}
	return n, eof
}

// ID returns the output's id.
func (r *Reader) ID() string { return r.r.id }

// Offset returns where the reference given to Open says the page starts.
func (r *Reader) Offset() int64 { return r.offset }

// Size returns the output's length: the bytes stored and the holes.
func (r *Reader) Size() int64 { return r.r.length() }

// Lines returns the number of '\n' stored (not counting the holes).
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
