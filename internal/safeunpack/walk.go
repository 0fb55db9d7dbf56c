package safeunpack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// Limits bound what one source may unpack to. A zero field takes its
// default from DefaultLimits.
type Limits struct {
	// MaxBytes bounds the file contents written, summed over the source.
	// It counts the bytes that actually came out, never a header's claim,
	// so a decompression bomb stops at the bound whatever it declares.
	MaxBytes int64
	// MaxFiles bounds the entries, files and directories alike.
	MaxFiles int
}

// DefaultLimits are the bounds a zero Limits field takes: enough for a
// tool's source with its vendored dependencies.
var DefaultLimits = Limits{MaxBytes: 256 << 20, MaxFiles: 20000}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	return l
}

// Report says what a source held: its files and directories, and the
// bytes of its files' contents.
type Report struct {
	Files, Dirs int
	Bytes       int64
}

// Names longer than PATH_MAX, an element longer than NAME_MAX, or deeper
// than maxDepth are refused before anything is created: the kernel would
// refuse them later anyway, and the bound keeps the path tree small.
const (
	maxName  = 4096
	maxElem  = 255
	maxDepth = 128
)

// entry is one member of a source, whatever its container.
type entry struct {
	name  string
	dir   bool
	perm  fs.FileMode
	claim int64 // the size its header declares, -1 when none
	open  func() (io.ReadCloser, error)
}

// sink receives the checked entries: one writes them under a destination,
// the other only reads the contents through, to count them.
type sink interface {
	dir(rel string, perm fs.FileMode) error
	file(rel string, perm fs.FileMode, r io.Reader) (int64, error)
}

// node is one path of the source seen so far, so that a second entry for
// it, or one beneath a file, is caught without comparing every pair.
type node struct {
	kids     map[string]*node
	file     bool
	explicit bool
}

// walker applies the checks common to every source, in the source's order.
type walker struct {
	lim     Limits
	entries int
	root    node
	rep     Report
	sink    sink
}

func newWalker(lim Limits, s sink) *walker {
	return &walker{lim: lim.withDefaults(), sink: s}
}

// tick counts one member of the source against the entry bound, including
// members that are skipped (an archive's global header).
func (w *walker) tick(name string) error {
	w.entries++
	if w.entries > w.lim.MaxFiles {
		return fmt.Errorf("entry %q: %w (at most %d)", name, ErrTooMany, w.lim.MaxFiles)
	}
	return nil
}

func (w *walker) add(e entry) error {
	if err := w.tick(e.name); err != nil {
		return err
	}
	rel, err := CleanName(e.name)
	if err != nil {
		return err
	}
	if rel == "" {
		if e.dir {
			return nil // "./": the destination itself
		}
		return fmt.Errorf("entry %q: %w", e.name, ErrBadName)
	}
	if len(rel) > maxName {
		return fmt.Errorf("entry %q: %w (longer than %d bytes)", e.name, ErrBadName, maxName)
	}
	if err := w.place(rel, e.dir); err != nil {
		return fmt.Errorf("entry %q: %w", e.name, err)
	}
	if e.dir {
		w.rep.Dirs++
		if err := w.sink.dir(rel, dirPerm(e.perm)); err != nil {
			return fmt.Errorf("entry %q: %w", e.name, err)
		}
		return nil
	}
	left := w.lim.MaxBytes - w.rep.Bytes
	if e.claim > left {
		return fmt.Errorf("entry %q: %w (declares %d bytes, %d left of %d)", e.name, ErrTooLarge, e.claim, left, w.lim.MaxBytes)
	}
	rc, err := e.open()
	if err != nil {
		return fmt.Errorf("entry %q: %w", e.name, err)
	}
	defer rc.Close()
	n, err := w.sink.file(rel, filePerm(e.perm), io.LimitReader(rc, left+1))
	w.rep.Bytes += n
	if n > left {
		return fmt.Errorf("entry %q: %w (more than %d bytes in all)", e.name, ErrTooLarge, w.lim.MaxBytes)
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", e.name, err)
	}
	w.rep.Files++
	return nil
}

// place records rel in the path tree, refusing a path given twice, a path
// beneath a file, and a file where a directory was implied.
func (w *walker) place(rel string, dir bool) error {
	elems := strings.Split(rel, "/")
	if len(elems) > maxDepth {
		return fmt.Errorf("%w (deeper than %d)", ErrBadName, maxDepth)
	}
	n := &w.root
	for i, elem := range elems {
		if len(elem) > maxElem {
			return fmt.Errorf("%w (an element longer than %d bytes)", ErrBadName, maxElem)
		}
		if n.file {
			return ErrDuplicate
		}
		kid := n.kids[elem]
		last := i == len(elems)-1
		if kid == nil {
			kid = &node{}
			if n.kids == nil {
				n.kids = map[string]*node{}
			}
			n.kids[elem] = kid
		} else if last && (kid.explicit || kid.file || !dir) {
			return ErrDuplicate
		}
		if last {
			kid.explicit, kid.file = true, !dir
		}
		n = kid
	}
	return nil
}

// filePerm keeps a file's permission bits but the special ones and write
// for group and others; the owner can always read and write what it owns.
func filePerm(m fs.FileMode) fs.FileMode { return m.Perm()&0o755 | 0o600 }

// dirPerm is filePerm for a directory, which the owner can also enter.
func dirPerm(m fs.FileMode) fs.FileMode { return m.Perm()&0o755 | 0o700 }

// formatReader marks a failure to read the source as a damaged archive, so
// that it is told apart from a failure to write the destination.
type formatReader struct{ r io.Reader }

func (f formatReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return n, err
}

// scanSink writes nothing: it reads each file's contents through, so the
// bytes counted are those a real extraction would write.
type scanSink struct{}

func (scanSink) dir(string, fs.FileMode) error { return nil }
func (scanSink) file(_ string, _ fs.FileMode, r io.Reader) (int64, error) {
	return io.Copy(io.Discard, r)
}
