package audit

import (
	"errors"
	"fmt"
	"path/filepath"
)

// recover finds where the chain ends, for Open: the last record of the newest
// non-empty file, checked against head.json. When they disagree it sets
// l.broken to why, and carries over the last seq and hash it can trust.
func (l *Log) recover() error {
	l.next, l.baseSeq = 1, 1
	h, hok, herr := readHead(l.dir)
	if herr != nil && !errors.Is(herr, errMalformed) {
		return herr
	}
	if hok {
		l.baseSeq, l.basePrev = h.BaseSeq, h.BasePrev
	}
	files, err := listFiles(l.dir)
	if err != nil {
		return err
	}

	var (
		cur    logFile // newest file holding anything
		found  bool
		last   *Record // its last record, when that is whole and good
		damage string
	)
	for i := len(files) - 1; i >= 0 && !found; i-- {
		t, err := readTail(filepath.Join(l.dir, files[i].name))
		if err != nil {
			return err
		}
		if t.size == 0 {
			continue // created, then contextd stopped before writing to it
		}
		cur, found = files[i], true
		switch {
		case t.partial:
			damage = fmt.Sprintf("%s ends in a partial line (a write cut short by a crash or a full disk)", cur.name)
		case t.tooLong:
			damage = fmt.Sprintf("the last line of %s is longer than %d bytes", cur.name, maxLine)
		default:
			r, err := parseLine(t.line)
			if err != nil {
				damage = fmt.Sprintf("the last record of %s is bad: %v", cur.name, err)
			} else {
				last = &r
			}
		}
	}

	switch {
	case damage != "":
	case herr != nil:
		damage = fmt.Sprintf("head.json is unreadable: %v", herr)
	case !hok && !found:
		return nil // a new log
	case !hok:
		damage = "head.json is missing, so deletions at the end of the log cannot be ruled out"
	case !found && h.Seq == 0:
		return nil // opened and closed without a record
	case !found:
		damage = fmt.Sprintf("head.json records seq %d but no log file holds a record", h.Seq)
	case last.Seq == h.Seq && last.Hash == h.Hash:
	case last.Seq == h.Seq+1 && last.Prev == h.Hash:
		// contextd stopped between writing a record and head.json.
	default:
		damage = fmt.Sprintf("the log ends at seq %d in %s but head.json records seq %d (hash %.12s…): records were deleted or lost",
			last.Seq, cur.name, h.Seq, h.Hash)
	}

	if damage == "" {
		l.next, l.prev, l.lastFile = last.Seq+1, last.Hash, cur.name
		if cur.name == files[len(files)-1].name {
			f, size, err := openAppend(filepath.Join(l.dir, cur.name), l.opt)
			if err != nil {
				return err
			}
			l.f, l.name, l.size = f, cur.name, size
		} // else an empty file follows it, and the next record starts a new one.
		if last.Seq != h.Seq {
			l.saveHead(false)
		}
		return nil
	}

	// Carry the chain over from the latest record that is still good, or from
	// head.json if that is later, and number on past every seq seen so the new
	// file sorts last.
	l.broken = damage
	seen := uint64(0)
	if hok {
		l.next, l.prev, seen = h.Seq+1, h.Hash, h.Seq
	}
	if len(files) > 0 {
		seen = max(seen, files[len(files)-1].seq)
	}
	if found {
		good, maxSeq, err := lastGood(filepath.Join(l.dir, cur.name))
		if err != nil {
			return err
		}
		if good != nil && good.Seq+1 >= l.next {
			l.next, l.prev = good.Seq+1, good.Hash
		}
		seen = max(seen, maxSeq)
	}
	l.next = max(l.next, seen+1)
	return nil
}

// lastGood scans a whole file for its last good record and the highest seq
// any readable line claims.
func lastGood(path string) (good *Record, maxSeq uint64, err error) {
	_, _, _, err = scanLines(path, 0, 0, func(raw []byte, _ int, tooLong bool) error {
		if tooLong {
			return nil
		}
		r, perr := parseLine(raw)
		if perr == nil || errors.Is(perr, errEdited) {
			maxSeq = max(maxSeq, r.Seq)
		}
		if perr == nil {
			good = &r
		}
		return nil
	})
	return good, maxSeq, err
}
