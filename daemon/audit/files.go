package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	filePrefix = "audit-"
	fileSuffix = ".jsonl"
	nameTime   = "20060102T150405Z"
	headName   = "head.json"
	lockName   = "lock"
)

// logFile is one log file of the directory: its name and the seq of its first
// record as the name says.
type logFile struct {
	name string
	seq  uint64
	at   time.Time // creation time from the name, truncated to the second
}

func fileName(seq uint64, at time.Time) string {
	return fmt.Sprintf("%s%012d-%s%s", filePrefix, seq, at.UTC().Format(nameTime), fileSuffix)
}

func parseFileName(name string) (logFile, bool) {
	rest, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return logFile{}, false
	}
	rest, ok = strings.CutSuffix(rest, fileSuffix)
	if !ok {
		return logFile{}, false
	}
	num, ts, ok := strings.Cut(rest, "-")
	if !ok || num == "" {
		return logFile{}, false
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return logFile{}, false
	}
	at, err := time.Parse(nameTime, ts)
	if err != nil {
		return logFile{}, false
	}
	return logFile{name: name, seq: seq, at: at}, true
}

// listFiles returns the log files of dir in chain order.
func listFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: read directory %s: %w", dir, err)
	}
	var out []logFile
	for _, e := range ents {
		if lf, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, lf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return later(out[j], out[i]) })
	return out, nil
}

// ensureDir creates dir (and missing parents) 0700, refuses a directory that
// belongs to someone else, and takes group and other permissions away from
// one that has them: the log names the user's commands and files.
func ensureDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("audit: mkdir %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("audit: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("audit: %s belongs to uid %d, not to %d: refusing to keep the audit log there", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("audit: chmod 0700 %s: %w", dir, err)
		}
		log.Warn("audit: directory was open to other users; made it 0700", "dir", dir, "was", fi.Mode().Perm().String())
	}
	return nil
}

// lockDir takes an exclusive flock(2) on dir/lock, so that two daemons never
// interleave their chains in one directory.
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("audit: flock %s: %w", p, ErrLocked)
		}
		return nil, fmt.Errorf("audit: flock %s: %w", p, err)
	}
	return f, nil
}

// syncDir makes a created, renamed or removed entry of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: fsync %s: %w", dir, err)
	}
	return nil
}

// tailLine is the end of a log file as Open needs it.
type tailLine struct {
	size     int64
	line     []byte // the last complete line, without '\n'; nil if there is none
	partial  bool   // the file does not end with '\n'
	tooLong  bool   // the last line is longer than maxLine
	lineFrom int64  // offset of line
}

// readTail reads the last line of a file without reading the whole file.
func readTail(path string) (tailLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return tailLine{}, fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tailLine{}, fmt.Errorf("audit: fstat %s: %w", path, err)
	}
	t := tailLine{size: fi.Size()}
	if t.size == 0 {
		return t, nil
	}
	for chunk := int64(64 << 10); ; chunk *= 2 {
		off := max(0, t.size-chunk)
		buf := make([]byte, t.size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return tailLine{}, fmt.Errorf("audit: pread %s: %w", path, err)
		}
		if buf[len(buf)-1] != '\n' {
			t.partial = true
			return t, nil
		}
		body := buf[:len(buf)-1]
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 || off == 0 {
			t.line, t.lineFrom = body[i+1:], off+int64(i+1)
			return t, nil
		}
		if chunk > 2*maxLine {
			t.tooLong = true
			return t, nil
		}
	}
}

// lineReader reads the lines of an untrusted file, never buffering more than
// maxLine bytes of one.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	line int   // number of the line last returned, 1-based
	off  int64 // offset just past the last line returned
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its '\n'. complete is false for a last
// line without '\n'; tooLong is true (and line nil) for a line longer than
// maxLine, which is skipped. At the end of the input it returns io.EOF.
func (lr *lineReader) next() (line []byte, complete, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	start := lr.off
	for {
		frag, err := lr.r.ReadSlice('\n')
		lr.off += int64(len(frag))
		if !tooLong {
			if len(lr.buf)+len(frag) > maxLine+1 {
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, frag...)
			}
		}
		switch {
		case err == nil:
			lr.line++
			if tooLong {
				return nil, true, true, nil
			}
			return lr.buf[:len(lr.buf)-1], true, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if lr.off == start {
				return nil, false, false, io.EOF
			}
			lr.line++
			if tooLong {
				return nil, false, true, nil
			}
			return lr.buf, false, false, nil
		default:
			return nil, false, false, err
		}
	}
}

// firstRecord parses the first line of a log file.
func firstRecord(path string) (Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, fmt.Errorf("audit: open %s: %w", path, err)
	}
	defer f.Close()
	line, complete, tooLong, err := newLineReader(f).next()
	switch {
	case errors.Is(err, io.EOF):
		return Record{}, fmt.Errorf("audit: %s is empty: %w", path, fs.ErrNotExist)
	case err != nil:
		return Record{}, fmt.Errorf("audit: read %s: %w", path, err)
	case tooLong || !complete:
		return Record{}, fmt.Errorf("audit: %s:1: %w: partial or too long", path, errMalformed)
	}
	return parseLine(line)
}
