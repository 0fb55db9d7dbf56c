package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("audit: log is closed")
	// ErrLocked is returned by Open when another process writes the directory.
	ErrLocked = errors.New("another contextd is writing this audit log")
)

// Log appends records to the audit log of one directory. It is safe for
// concurrent use.
//
// Locking: mu is the only lock. It is held from numbering a record until the
// record and head.json are written (rotation and retention included), so the
// order of the lines is the order of the seqs. The journal is sent to after mu
// is released; the logger may be called with mu held and must not call back.
type Log struct {
	mu       sync.Mutex
	opt      Options
	dir      string
	lock     *os.File // flock(2)ed dir/lock; closing it releases the lock
	hf       *headFile
	f        *os.File // current file; nil until the first record needs one
	name     string   // its name
	size     int64    // its size
	next     uint64   // seq of the next record
	prev     string   // hash of the last record
	lastFile string   // file holding the last record
	baseSeq  uint64
	basePrev string
	// broken says why the current file must take no more lines; the next
	// record starts a new file after a chain-reset record giving this reason.
	broken      string
	closed      bool
	headFailing bool

	send         sendFunc // nil: no journal
	journalWarnd atomic.Bool
}

// Open opens the audit log in o.Dir for appending, creating it if needed, and
// continues its chain. A damaged log does not stop it: it warns and writes a
// chain-reset record (see the package documentation).
func Open(o *Options) (*Log, error) {
	opt, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if err := ensureDir(opt.Dir, opt.Logger); err != nil {
		return nil, err
	}
	lk, err := lockDir(opt.Dir)
	if err != nil {
		return nil, err
	}
	hf, err := openHeadFile(opt.Dir)
	if err != nil {
		lk.Close()
		return nil, err
	}
	l := &Log{opt: opt, dir: opt.Dir, lock: lk, hf: hf, send: journalSender(opt.Journal)}
	if err := l.recover(); err != nil {
		hf.Close()
		lk.Close()
		return nil, err
	}
	if l.broken == "" {
		return l, nil
	}
	opt.Logger.Warn("audit: the audit log is damaged; continuing in a new file after a chain-reset record (`contextd audit verify` shows the damage)",
		"dir", l.dir, "reason", l.broken)
	l.mu.Lock()
	written, err := l.rotate()
	l.mu.Unlock()
	if err != nil {
		l.Close()
		return nil, err
	}
	l.journal(written...)
	return l, nil
}

// Dir is the directory of the log.
func (l *Log) Dir() string { return l.dir }

// Last returns the seq and hash of the last record written (0 and "" for an
// empty log).
func (l *Log) Last() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1, l.prev
}

// Append numbers r, chains it to the previous record and writes it as one line.
// It sets r.V, r.Seq, r.Prev and r.Hash, sets r.Time to now when it is zero,
// and stores it in UTC. When Append fails, r is not in the log.
func (l *Log) Append(r *Record) error {
	if len(r.Args) > 0 && !json.Valid(r.Args) {
		s, _ := json.Marshal(string(r.Args)) // a string always encodes
		r.Args = s
		r.Warnings = append(r.Warnings, "args were not valid JSON; stored as a string")
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()

	l.mu.Lock()
	written, err := l.appendLocked(r)
	l.mu.Unlock()
	l.journal(written...)
	return err
}

// appendLocked writes r, and before it whatever records rotation writes. It
// returns every record written.
func (l *Log) appendLocked(r *Record) ([]*Record, error) {
	if l.closed {
		return nil, ErrClosed
	}
	line, err := l.stamp(r)
	if err != nil {
		return nil, err
	}
	var written []*Record
	if l.f == nil || l.broken != "" || (l.size > 0 && l.size+int64(len(line)) > l.opt.MaxFileSize) {
		if written, err = l.rotate(); err != nil {
			return written, err
		}
		if line, err = l.stamp(r); err != nil { // rotation may have used seqs
			return written, err
		}
	}
	if err := l.write(r, line); err != nil {
		return written, err
	}
	return append(written, r), nil
}

// stamp numbers r as the next record and encodes it.
func (l *Log) stamp(r *Record) ([]byte, error) {
	r.V, r.Seq, r.Prev = FormatVersion, l.next, l.prev
	line, err := encodeLine(r)
	if err != nil || len(line) <= maxLine {
		return line, err
	}
	// Keep the record, lose the bulk: a reader must be able to bound a line.
	r.Warnings = append(r.Warnings, fmt.Sprintf("args dropped: the record was %d bytes, the audit log takes at most %d", len(line), maxLine))
	r.Args = json.RawMessage(fmt.Sprintf(`"[dropped: %d bytes]"`, len(r.Args)))
	if line, err = encodeLine(r); err == nil && len(line) > maxLine {
		return nil, fmt.Errorf("audit: record %d is %d bytes even without its args, more than %d", r.Seq, len(line), maxLine)
	}
	return line, err
}

// write appends a stamped record's line to the current file and moves the
// chain on.
func (l *Log) write(r *Record, line []byte) error {
	n, err := l.f.Write(line)
	if err != nil {
		if n > 0 {
			// A full disk cut the line: take it back so that the file still ends
			// with a whole record, or give up on the file.
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Sprintf("a write to %s stopped after %d of %d bytes (%v) and ftruncate failed (%v)", l.name, n, len(line), err, terr)
			}
		}
		return fmt.Errorf("audit: write(2) %s: %w", filepath.Join(l.dir, l.name), err)
	}
	l.size += int64(n)
	l.next, l.prev, l.lastFile = r.Seq+1, r.Hash, l.name
	if l.opt.SyncEveryRecord {
		if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
			return fmt.Errorf("audit: fdatasync %s: %w", filepath.Join(l.dir, l.name), err)
		}
	}
	l.saveHead(l.opt.SyncEveryRecord)
	return nil
}

// saveHead writes head.json. Failing to is not failing the append: the record
// is in the log, and verify will see head.json lagging behind.
func (l *Log) saveHead(sync bool) error {
	err := l.hf.write(head{
		Seq: l.next - 1, Hash: l.prev, File: l.lastFile,
		BaseSeq: l.baseSeq, BasePrev: l.basePrev, Updated: time.Now().UTC(),
	}, sync)
	switch {
	case err != nil && !l.headFailing:
		l.opt.Logger.Warn("audit: cannot update head.json; deletions at the end of the log will not be detected until it can", "err", err)
		l.headFailing = true
	case err == nil && l.headFailing:
		l.opt.Logger.Info("audit: head.json is updated again")
		l.headFailing = false
	}
	return err
}

// rotate closes the current file and starts a new one, named after the next
// seq. If the old file was broken, the new one starts with a chain-reset
// record; if retention deletes files, a retention record follows.
func (l *Log) rotate() ([]*Record, error) {
	if l.f != nil {
		old := filepath.Join(l.dir, l.name)
		if err := l.f.Sync(); err != nil && l.broken == "" {
			return nil, fmt.Errorf("audit: fsync %s: %w", old, err)
		}
		if err := l.f.Close(); err != nil && l.broken == "" {
			return nil, fmt.Errorf("audit: close %s: %w", old, err)
		}
		l.f = nil
	}
	f, name, err := createFile(l.dir, l.next, l.opt)
	if err != nil {
		return nil, err
	}
	l.f, l.name, l.size = f, name, 0
	if err := syncDir(l.dir); err != nil {
		return nil, err
	}
	var written []*Record
	if l.broken != "" {
		r := &Record{Time: time.Now().UTC(), Kind: KindReset, Reason: l.broken}
		if err := l.writeOwn(r); err != nil {
			return nil, err
		}
		l.broken = ""
		written = append(written, r)
	}
	if r := l.prune(); r != nil {
		if err := l.writeOwn(r); err != nil {
			return written, err
		}
		written = append(written, r)
	}
	return written, nil
}

// writeOwn writes a record of the log's own (reset, retention).
func (l *Log) writeOwn(r *Record) error {
	line, err := l.stamp(r)
	if err != nil {
		return err
	}
	return l.write(r, line)
}

// prune deletes the oldest rotated files beyond Options.MaxFiles and returns
// the retention record to write, or nil. It moves the base in head.json
// forward, durably, before deleting anything, so that a crash in between
// leaves extra old files, never a log that seems to be missing its start.
func (l *Log) prune() *Record {
	if l.opt.MaxFiles <= 0 {
		return nil
	}
	files, err := listFiles(l.dir)
	if err != nil {
		l.opt.Logger.Warn("audit: retention skipped", "err", err)
		return nil
	}
	var rotated []logFile
	for _, lf := range files {
		if lf.name != l.name {
			rotated = append(rotated, lf)
		}
	}
	if len(rotated) <= l.opt.MaxFiles {
		return nil
	}
	victims, keep := rotated[:len(rotated)-l.opt.MaxFiles], rotated[len(rotated)-l.opt.MaxFiles]
	first, err := firstRecord(filepath.Join(l.dir, keep.name))
	if err != nil {
		// Deleting without knowing where the log then starts would make the
		// deletion look like tampering; keep the files instead.
		l.opt.Logger.Warn("audit: retention skipped: cannot read the first record of the oldest file to keep", "file", keep.name, "err", err)
		return nil
	}
	l.baseSeq, l.basePrev = first.Seq, first.Prev
	if err := l.saveHead(true); err != nil {
		return nil
	}
	var gone []string
	for i, v := range victims {
		last := keep.seq - 1
		if i+1 < len(victims) {
			last = victims[i+1].seq - 1
		}
		if err := os.Remove(filepath.Join(l.dir, v.name)); err != nil {
			l.opt.Logger.Warn("audit: retention could not delete a file", "file", v.name, "err", err)
			continue
		}
		gone = append(gone, fmt.Sprintf("%s (seq %d-%d)", v.name, v.seq, last))
	}
	if err := syncDir(l.dir); err != nil {
		l.opt.Logger.Warn("audit: retention", "err", err)
	}
	return &Record{Time: time.Now().UTC(), Kind: KindRetention,
		Reason: fmt.Sprintf("deleted %d old file(s) to keep %d (max files): %s; the log now starts at seq %d",
			len(gone), l.opt.MaxFiles, strings.Join(gone, ", "), first.Seq)}
}

// Close syncs the log and head.json to disk and releases the directory.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if l.f != nil {
		p := filepath.Join(l.dir, l.name)
		if err := l.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("audit: fsync %s: %w", p, err))
		}
		if err := l.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("audit: close %s: %w", p, err))
		}
		l.f = nil
	}
	if err := l.saveHead(true); err != nil {
		errs = append(errs, err)
	}
	if err := l.hf.Close(); err != nil {
		errs = append(errs, fmt.Errorf("audit: close %s: %w", filepath.Join(l.dir, headName), err))
	}
	if err := l.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("audit: close %s: %w", filepath.Join(l.dir, lockName), err))
	}
	return errors.Join(errs...)
}

// createFile creates the log file whose first record will have seq.
func createFile(dir string, seq uint64, opt Options) (*os.File, string, error) {
	name := fileName(seq, time.Now())
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Same seq in the same second: contextd stopped right after creating
		// this file, before writing to it. Use it if it is still empty.
		var size int64
		if f, size, err = openAppend(p, opt); err == nil && size != 0 {
			f.Close()
			return nil, "", fmt.Errorf("audit: %s already exists and is not empty", p)
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("audit: create %s: %w", p, err)
	}
	return f, name, nil
}

// openAppend opens an existing log file for appending, making it 0600 if it
// was open to others.
func openAppend(p string, opt Options) (*os.File, int64, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: open %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("audit: fstat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("audit: %s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("audit: fchmod 0600 %s: %w", p, err)
		}
		opt.Logger.Warn("audit: log file was open to other users; made it 0600", "file", p, "was", fi.Mode().Perm().String())
	}
	return f, fi.Size(), nil
}
