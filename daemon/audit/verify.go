package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

var (
	// ErrTampered is wrapped by Verify's error when the log has problems, and
	// by the errors for lines that are not good records.
	ErrTampered = errors.New("audit log damaged or tampered with")
	// ErrNoLog is wrapped by Verify's error when the directory does not exist.
	ErrNoLog = errors.New("no audit log")
)

// ProblemKind names what is wrong.
type ProblemKind string

// The problems Verify finds. Each is a reason for it to fail.
const (
	ProblemMalformed ProblemKind = "malformed"   // a line that is not a record
	ProblemPartial   ProblemKind = "partial"     // a file ends without '\n': a cut write
	ProblemEdited    ProblemKind = "edited"      // a record's hash does not match its content
	ProblemChain     ProblemKind = "chain"       // prev is not the previous record's hash: one was rehashed, replaced or inserted
	ProblemMissing   ProblemKind = "missing"     // seqs skipped: records or a whole file deleted or lost
	ProblemOrder     ProblemKind = "order"       // seq goes back or repeats: lines moved or copied
	ProblemStart     ProblemKind = "start"       // the log starts later than head.json's base: old records deleted
	ProblemEnd       ProblemKind = "end"         // the log ends before head.json's last record: recent records deleted
	ProblemHead      ProblemKind = "head"        // head.json missing, unreadable or disagreeing with the log
	ProblemFileName  ProblemKind = "file-name"   // a file's name does not match its first record
	ProblemReset     ProblemKind = "chain-reset" // contextd found damage at start and restarted the chain
)

// The warnings Verify gives. They are not evidence of loss.
const (
	WarnEmpty       ProblemKind = "empty"       // a file with no line: contextd stopped right after creating it
	WarnPermissions ProblemKind = "permissions" // a file readable by other users
	WarnRetention   ProblemKind = "retention"   // files older than the base are left: retention was interrupted
)

// Problem is one thing wrong with the log, or a warning.
type Problem struct {
	Kind   ProblemKind
	File   string // base name; "" for the log as a whole
	Line   int    // 1-based; 0 when it is about the file
	Seq    uint64 // the record's seq, 0 when unknown
	Detail string
}

func (p Problem) String() string {
	s := ""
	switch {
	case p.File != "" && p.Line > 0:
		s = fmt.Sprintf("%s:%d: ", p.File, p.Line)
	case p.File != "":
		s = p.File + ": "
	}
	if p.Seq > 0 {
		s += fmt.Sprintf("seq %d: ", p.Seq)
	}
	return s + p.Detail
}

// Report is what Verify found.
type Report struct {
	Dir      string
	Files    int    // log files read
	Records  int    // lines that parsed as records
	FirstSeq uint64 // first and last seq read
	LastSeq  uint64
	HeadSeq  uint64 // last seq according to head.json
	BaseSeq  uint64 // first seq the log should hold, according to head.json
	Resets   int    // chain-reset records
	Problems []Problem
	Warnings []Problem // oddities that are not evidence of loss, e.g. an empty file
}

// OK says whether Verify found no problem.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Verify checks the audit log in dir: every record's hash, every chain link,
// seq continuity across files, the first record against head.json's base and
// the last against head.json. Its error wraps ErrTampered when it found
// problems (the Report lists them all), ErrNoLog when dir does not exist, or
// is an I/O error.
//
// Verify can run while contextd appends, rotates and deletes old files: when
// it finds problems and head.json changed meanwhile, it reads again, so a line
// being written or a file deleted by retention is not reported as damage.
func Verify(dir string) (Report, error) {
	var (
		rep Report
		gen uint64
		err error
	)
	for attempt := 0; ; attempt++ {
		rep, gen, err = verifyOnce(dir)
		if attempt == 2 || err != nil || rep.OK() {
			break
		}
		time.Sleep(20 * time.Millisecond)
		if h, ok, _ := readHead(dir); !ok || h.Gen == gen {
			break
		}
	}
	if err != nil {
		return rep, err
	}
	if n := len(rep.Problems); n > 0 {
		return rep, fmt.Errorf("audit: %s: %d problem(s), the first: %s: %w", dir, n, rep.Problems[0], ErrTampered)
	}
	return rep, nil
}

// verifier walks the chain.
type verifier struct {
	rep      *Report
	started  bool   // a record was read
	linked   bool   // prevSeq and prevHash can be checked against
	prevSeq  uint64 // last record read
	prevHash string
	prevAt   string // where it is, "file:line"
	basePrev string
	head     head
	hasHead  bool
	headSeen bool
	baseDue  bool // files older than the base are still there; check the base when passing it
}

func (rep *Report) problem(kind ProblemKind, file string, line int, seq uint64, format string, a ...any) {
	rep.Problems = append(rep.Problems, Problem{kind, file, line, seq, fmt.Sprintf(format, a...)})
}

func (rep *Report) warn(kind ProblemKind, file string, line int, seq uint64, format string, a ...any) {
	rep.Warnings = append(rep.Warnings, Problem{kind, file, line, seq, fmt.Sprintf(format, a...)})
}

// verifyOnce reads the log once; gen is the generation of head.json it used.
func verifyOnce(dir string) (rep Report, gen uint64, err error) {
	rep = Report{Dir: dir, BaseSeq: 1}
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return rep, 0, fmt.Errorf("audit: %s: %w", dir, ErrNoLog)
		}
		return rep, 0, fmt.Errorf("audit: stat %s: %w", dir, err)
	}
	// The files first, opened at once (retention may delete the oldest while
	// this reads; an open file stays readable), then head.json: records
	// appended meanwhile are still read, so the log read is never shorter
	// than the head says.
	files, open, err := openFiles(dir)
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	if err != nil {
		return rep, 0, err
	}
	h, hok, herr, err := headAfter(dir, &files, &open)
	if err != nil {
		return rep, 0, err
	}
	v := &verifier{rep: &rep, head: h, hasHead: hok}
	switch {
	case herr != nil:
		rep.problem(ProblemHead, headName, 0, 0, "unreadable (%v): deletions at the end of the log cannot be checked", herr)
	case !hok && len(files) > 0:
		rep.problem(ProblemHead, headName, 0, 0, "missing: deletions at the end of the log cannot be checked")
	case hok:
		rep.HeadSeq, rep.BaseSeq, v.basePrev = h.Seq, h.BaseSeq, h.BasePrev
	}
	for i, lf := range files {
		if err := v.file(open[i], lf); err != nil {
			return rep, h.Gen, err
		}
	}
	v.end()
	return rep, h.Gen, nil
}

// headAfter reads head.json once no file was created since files were
// listed, opening any that was: a head read after a rotation may name records
// in the new file.
func headAfter(dir string, files *[]logFile, open *[]*os.File) (h head, ok bool, herr, err error) {
	for attempt := 0; ; attempt++ {
		h, ok, herr = readHead(dir)
		if herr != nil && !errors.Is(herr, errMalformed) {
			return h, ok, herr, herr
		}
		now, err := listFiles(dir)
		if err != nil {
			return h, ok, herr, err
		}
		added := false
		for _, lf := range now {
			if n := len(*files); n > 0 && !later(lf, (*files)[n-1]) {
				continue
			}
			p := filepath.Join(dir, lf.name)
			f, err := os.Open(p)
			if err != nil {
				return h, ok, herr, fmt.Errorf("audit: open %s: %w", p, err)
			}
			*files, *open, added = append(*files, lf), append(*open, f), true
		}
		if !added || attempt == 100 {
			return h, ok, herr, nil
		}
	}
}

// later says whether a comes after b in chain order.
func later(a, b logFile) bool {
	return a.seq > b.seq || (a.seq == b.seq && a.name > b.name)
}

// openFiles lists and opens the log files of dir. A file deleted between the
// two (by retention) makes it list again.
func openFiles(dir string) ([]logFile, []*os.File, error) {
	for attempt := 0; ; attempt++ {
		files, err := listFiles(dir)
		if err != nil {
			return nil, nil, err
		}
		open := make([]*os.File, 0, len(files))
		for _, lf := range files {
			p := filepath.Join(dir, lf.name)
			f, err := os.Open(p)
			if err != nil {
				for _, o := range open {
					o.Close()
				}
				if errors.Is(err, fs.ErrNotExist) && attempt < 100 {
					break
				}
				return nil, nil, fmt.Errorf("audit: open %s: %w", p, err)
			}
			open = append(open, f)
		}
		if len(open) == len(files) {
			return files, open, nil
		}
	}
}

// file checks the lines of one log file.
func (v *verifier) file(f *os.File, lf logFile) error {
	rep := v.rep
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		rep.warn(WarnPermissions, lf.name, 0, 0, "readable by other users (mode %s)", fi.Mode().Perm())
	}
	first := true
	_, lines, partial, err := scanReader(f, 0, 0, func(raw []byte, n int, tooLong bool) error {
		if tooLong {
			rep.problem(ProblemMalformed, lf.name, n, 0, "%v", errTooLong)
			v.linked = false
			return nil
		}
		r, err := parseLine(raw)
		switch {
		case errors.Is(err, errEdited):
			rep.problem(ProblemEdited, lf.name, n, r.Seq, "%v: the record was changed", err)
		case err != nil:
			rep.problem(ProblemMalformed, lf.name, n, 0, "%v", err)
			v.linked = false
			return nil
		}
		if first && r.Seq != lf.seq {
			rep.problem(ProblemFileName, lf.name, n, r.Seq, "the file's name says its first record is seq %d (file renamed?)", lf.seq)
		}
		first = false
		v.record(&r, lf.name, n)
		return nil
	})
	if err != nil {
		return err
	}
	rep.Files++
	if partial {
		rep.problem(ProblemPartial, lf.name, lines+1, 0, "%v (a write cut short by a crash or a full disk, or the end cut off)", errPartial)
		v.linked = false
	} else if lines == 0 {
		rep.warn(WarnEmpty, lf.name, 0, 0, "empty (contextd stopped right after creating it?)")
	}
	return nil
}

// record checks one record's place in the chain.
func (v *verifier) record(r *Record, file string, n int) {
	rep := v.rep
	rep.Records++
	at := fmt.Sprintf("%s:%d", file, n)
	switch {
	case r.Kind == KindReset:
		rep.Resets++
		rep.problem(ProblemReset, file, n, r.Seq, "contextd restarted the chain here: %s", r.Reason)
	case !v.started:
		switch {
		case r.Seq == rep.BaseSeq && r.Prev != v.basePrev:
			rep.problem(ProblemStart, file, n, r.Seq, "the first record's prev %.12s… is not head.json's base_prev %.12s…: the oldest records were replaced", r.Prev, v.basePrev)
		case r.Seq < rep.BaseSeq:
			rep.warn(WarnRetention, file, n, r.Seq, "records before head.json's base (seq %d) are still here: retention was interrupted", rep.BaseSeq)
			v.baseDue = true
		case r.Seq > rep.BaseSeq:
			rep.problem(ProblemStart, file, n, r.Seq, "the log starts at seq %d but should start at seq %d: %s missing (oldest file deleted outside retention?)",
				r.Seq, rep.BaseSeq, span(rep.BaseSeq, r.Seq-1))
		}
	case r.Seq <= v.prevSeq:
		rep.problem(ProblemOrder, file, n, r.Seq, "comes after seq %d (%s): lines moved or copied", v.prevSeq, v.prevAt)
		return // keep following the chain from the record before
	case !v.linked:
		// After an unreadable line: its seq and hash are unknown, so this link
		// cannot be checked; the line itself is already reported.
	case r.Seq > v.prevSeq+1:
		where := ""
		if n == 1 {
			where = " (a whole file deleted?)"
		}
		rep.problem(ProblemMissing, file, n, r.Seq, "follows seq %d (%s): %s missing%s", v.prevSeq, v.prevAt, span(v.prevSeq+1, r.Seq-1), where)
	case r.Prev != v.prevHash:
		rep.problem(ProblemChain, file, n, r.Seq, "prev %.12s… is not the hash %.12s… of seq %d (%s): that record was rehashed after an edit, or one of the two was replaced",
			r.Prev, v.prevHash, v.prevSeq, v.prevAt)
	}
	if v.baseDue && r.Seq == rep.BaseSeq {
		v.baseDue = false
		if r.Prev != v.basePrev {
			rep.problem(ProblemStart, file, n, r.Seq, "prev %.12s… is not head.json's base_prev %.12s…", r.Prev, v.basePrev)
		}
	}
	if v.hasHead && r.Seq == v.head.Seq {
		v.headSeen = true
		if r.Hash != v.head.Hash {
			rep.problem(ProblemHead, file, n, r.Seq, "hash %.12s… is not the %.12s… head.json records for it", r.Hash, v.head.Hash)
		}
	}
	if !v.started {
		rep.FirstSeq = r.Seq
	}
	v.started, v.linked = true, true
	v.prevSeq, v.prevHash, v.prevAt = r.Seq, r.Hash, at
	rep.LastSeq = r.Seq
}

// end checks how the log ends against head.json.
func (v *verifier) end() {
	rep := v.rep
	if !v.hasHead {
		return
	}
	switch {
	case !v.started && v.head.Seq > 0:
		rep.problem(ProblemEnd, "", 0, 0, "head.json records seq %d but the log holds no record: every file was deleted", v.head.Seq)
	case !v.started:
	case rep.LastSeq < v.head.Seq:
		rep.problem(ProblemEnd, "", 0, 0, "the log ends at seq %d (%s) but head.json records seq %d: %s deleted or lost at the end",
			rep.LastSeq, v.prevAt, v.head.Seq, span(rep.LastSeq+1, v.head.Seq))
	case !v.headSeen && v.head.Seq >= rep.FirstSeq:
		rep.problem(ProblemHead, "", 0, v.head.Seq, "head.json records this seq but the log does not hold it")
	}
}

func span(from, to uint64) string {
	if from == to {
		return fmt.Sprintf("record %d", from)
	}
	return fmt.Sprintf("%d records (%d-%d)", to-from+1, from, to)
}
