package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Entry is a record as read back, with where it was found.
type Entry struct {
	Record
	File string // base name of the log file
	Line int    // 1-based
	Raw  []byte // the line as stored, without '\n'
}

// Filter selects records for Read. Zero fields select everything.
type Filter struct {
	Session string
	Tool    string
	Since   time.Time // records whose Time is not before Since
	Until   time.Time // records whose Time is before Until
}

func (f Filter) match(r *Record) bool {
	return (f.Session == "" || r.Session == f.Session) &&
		(f.Tool == "" || r.Tool == f.Tool) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since)) &&
		(f.Until.IsZero() || r.Time.Before(f.Until))
}

var (
	errTooLong = fmt.Errorf("line longer than %d bytes", maxLine)
	errPartial = errors.New("partial line: the file does not end with a newline")
)

// lineError is a line that is not a good record. It is an ErrTampered.
type lineError struct {
	file string
	line int
	err  error
}

func (e *lineError) Error() string   { return fmt.Sprintf("%s:%d: %v", e.file, e.line, e.err) }
func (e *lineError) Unwrap() []error { return []error{e.err, ErrTampered} }

// scanLines calls fn for each complete line of path from byte offset off,
// where line lines have gone before. raw is only valid during the call. It
// returns the offset and line count after the last complete line, and whether
// an incomplete line follows it.
func scanLines(path string, off int64, line int, fn func(raw []byte, n int, tooLong bool) error) (end int64, endLine int, partial bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return off, line, false, fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer f.Close()
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return off, line, false, fmt.Errorf("audit: lseek %s: %w", path, err)
		}
	}
	return scanReader(f, off, line, fn)
}

// scanReader is scanLines on an open file positioned at off.
func scanReader(f *os.File, off int64, line int, fn func(raw []byte, n int, tooLong bool) error) (end int64, endLine int, partial bool, err error) {
	lr, start := newLineReader(f), off
	for {
		raw, complete, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return off, line, false, nil
		}
		if err != nil {
			return off, line, false, fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
		if !complete {
			return off, line, true, nil
		}
		line++
		if err := fn(raw, line, tooLong); err != nil {
			return off, line, false, err
		}
		off = start + lr.off
	}
}

// entry parses one line of a file.
func entry(file string, n int, raw []byte, tooLong bool) (Entry, error) {
	e := Entry{File: file, Line: n}
	if tooLong {
		return e, &lineError{file, n, errTooLong}
	}
	e.Raw = slices.Clone(raw)
	r, err := parseLine(raw)
	e.Record = r
	if err != nil {
		return e, &lineError{file, n, err}
	}
	return e, nil
}

// Read yields the records of the log in dir that f selects, oldest first. A
// line that is not a good record is yielded with an error wrapping
// ErrTampered (and the entry's File, Line and Raw) whatever the filter, and
// reading goes on; any other error ends the sequence. The incomplete last
// line of a log being written is not yielded.
func Read(dir string, f Filter) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		files, err := listFiles(dir)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		for i, lf := range files {
			// Every record of a file was written before the next file was
			// created (the name's time, to the second).
			if !f.Since.IsZero() && i+1 < len(files) && files[i+1].at.Add(time.Second).Before(f.Since) {
				continue
			}
			stop := errors.New("stop")
			_, _, _, err := scanLines(filepath.Join(dir, lf.name), 0, 0, func(raw []byte, n int, tooLong bool) error {
				e, err := entry(lf.name, n, raw, tooLong)
				if err == nil && !f.match(&e.Record) {
					return nil
				}
				if !yield(e, err) {
					return stop
				}
				return nil
			})
			if errors.Is(err, stop) {
				return
			}
			if err != nil {
				yield(Entry{}, err)
				return
			}
		}
	}
}

// Tail returns the last n records of the log in dir, oldest first. Lines that
// are not good records are skipped and reported in the error, which then wraps
// ErrTampered; the entries are returned all the same.
func Tail(dir string, n int) ([]Entry, error) {
	files, err := listFiles(dir)
	if err != nil || n <= 0 {
		return nil, err
	}
	var out []Entry
	var bad []error
	for i := len(files) - 1; i >= 0 && len(out) < n; i-- {
		var these []Entry
		_, _, _, err := scanLines(filepath.Join(dir, files[i].name), 0, 0, func(raw []byte, line int, tooLong bool) error {
			e, err := entry(files[i].name, line, raw, tooLong)
			if err != nil {
				bad = append(bad, err)
				return nil
			}
			these = append(these, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(these, out...)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, errors.Join(bad...)
}

// followEvery is how often Follow looks for new records.
var followEvery = 250 * time.Millisecond

// Follow calls fn for every record of the log in dir with a seq after
// afterSeq, as they are written, until ctx ends (it then returns ctx.Err()) or
// fn returns an error. Lines that are not good records are passed to fn with
// an error wrapping ErrTampered. It polls, and follows rotation.
func Follow(ctx context.Context, dir string, afterSeq uint64, fn func(Entry, error) error) error {
	var (
		cur  string // file being read; "" until the start is found
		off  int64
		line int
	)
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		files, err := listFiles(dir)
		if err != nil {
			return err
		}
		if cur == "" && len(files) > 0 {
			// Start in the last file that begins at or before the first seq wanted.
			cur = files[0].name
			for _, lf := range files {
				if lf.seq <= afterSeq+1 {
					cur = lf.name
				}
			}
		}
		for cur != "" {
			var partial bool
			off, line, partial, err = scanLines(filepath.Join(dir, cur), off, line, func(raw []byte, n int, tooLong bool) error {
				e, err := entry(cur, n, raw, tooLong)
				if err == nil {
					if e.Seq <= afterSeq {
						return nil
					}
					afterSeq = e.Seq
				}
				return fn(e, err)
			})
			if errors.Is(err, os.ErrNotExist) {
				cur, off, line = "", 0, 0 // deleted by retention: find the next record again
				break
			}
			if err != nil {
				return err
			}
			i := slices.IndexFunc(files, func(lf logFile) bool { return lf.name == cur })
			if i < 0 || i+1 >= len(files) {
				break
			}
			// A newer file was listed, so the daemon had finished with this one
			// before it was read: an incomplete last line will stay so.
			if partial {
				if err := fn(Entry{File: cur, Line: line + 1}, &lineError{cur, line + 1, errPartial}); err != nil {
					return err
				}
			}
			cur, off, line = files[i+1].name, 0, 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
