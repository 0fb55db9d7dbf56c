package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/syncbuf"
)

func TestAppendVerify(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	fill(t, l, 1, 10)
	if seq, hash := l.Last(); seq != 10 || len(hash) != 64 {
		t.Errorf("Last = %d %q, want 10 and a hash", seq, hash)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(o.Dir)
	if err != nil {
		t.Fatalf("Verify: %v (%v)", err, rep.Problems)
	}
	if rep.Records != 10 || rep.Files != 1 || rep.FirstSeq != 1 || rep.LastSeq != 10 || rep.HeadSeq != 10 || len(rep.Warnings) != 0 {
		t.Errorf("report = %+v", rep)
	}

	names := logNames(t, o.Dir)
	ls := readLines(t, filepath.Join(o.Dir, names[0]))
	var first, second Record
	if err := json.Unmarshal([]byte(ls[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ls[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || first.Prev != "" || second.Prev != first.Hash || first.V != FormatVersion {
		t.Errorf("chain: first %d prev %q hash %s; second prev %s", first.Seq, first.Prev, first.Hash, second.Prev)
	}
	if !strings.HasSuffix(ls[0], `,"hash":"`+first.Hash+`"}`) {
		t.Errorf("hash is not the last member: %s", ls[0])
	}
	if !strings.Contains(ls[0], `make test && echo 1 > out.txt`) {
		t.Errorf("args were HTML-escaped: %s", ls[0])
	}
}

func TestAppendFillsFields(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	defer l.Close()
	when := time.Date(2026, 3, 1, 12, 0, 0, 5, time.FixedZone("X", 3600))
	r := &Record{Tool: "safe_read", Seq: 99, Prev: "forged", Hash: "forged", Time: when}
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 1 || r.Prev != "" || len(r.Hash) != 64 || r.V != FormatVersion {
		t.Errorf("Append kept caller's chain fields: %+v", r)
	}
	if !r.Time.Equal(when) || r.Time.Location() != time.UTC {
		t.Errorf("Time = %v, want %v in UTC", r.Time, when)
	}
	r2 := &Record{Tool: "safe_read"}
	before := time.Now()
	if err := l.Append(r2); err != nil {
		t.Fatal(err)
	}
	if r2.Time.Before(before.Add(-time.Second)) || r2.Prev != r.Hash {
		t.Errorf("second record: time %v prev %s", r2.Time, r2.Prev)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     json.RawMessage
		wantArgs string // prefix
		warning  string
	}{
		{"json", json.RawMessage(`{"path": "a.go"}`), `{"path":"a.go"}`, ""},
		{"not json", json.RawMessage(`{"path": a.go`), `"{\"path\": a.go"`, "not valid JSON"},
		{"too large", json.RawMessage(`"` + strings.Repeat("x", maxLine) + `"`), `"[dropped: `, "args dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t)
			l := openTest(t, o)
			r := &Record{Tool: "safe_write", Args: tt.args}
			if err := l.Append(r); err != nil {
				t.Fatal(err)
			}
			l.Close()
			es, err := Tail(o.Dir, 1)
			if err != nil || len(es) != 1 {
				t.Fatalf("Tail = %v, %v", es, err)
			}
			if !strings.HasPrefix(string(es[0].Args), tt.wantArgs) {
				t.Errorf("stored args = %.60s, want %s…", es[0].Args, tt.wantArgs)
			}
			if got := strings.Join(r.Warnings, ";"); !strings.Contains(got, tt.warning) || (tt.warning == "") != (got == "") {
				t.Errorf("warnings = %q, want %q", got, tt.warning)
			}
			if rep, err := Verify(o.Dir); err != nil {
				t.Errorf("Verify: %v %v", err, rep.Problems)
			}
		})
	}
}

func TestReopenContinuesChain(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	fill(t, l, 1, 3)
	l.Close()
	if err := l.Append(call(4)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}

	l = openTest(t, o)
	if seq, _ := l.Last(); seq != 3 {
		t.Errorf("reopened at seq %d, want 3", seq)
	}
	fill(t, l, 4, 6)
	l.Close()
	rep, err := Verify(o.Dir)
	if err != nil || rep.Records != 6 || rep.Files != 1 || rep.Resets != 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

func TestOpenLocked(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	defer l.Close()
	if _, err := Open(o); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", err)
	}
}

func TestEmptyOpenClose(t *testing.T) {
	o := testOptions(t)
	openTest(t, o).Close()
	l := openTest(t, o) // head.json of an empty log
	l.Close()
	rep, err := Verify(o.Dir)
	if err != nil || rep.Records != 0 {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
	if _, err := Verify(filepath.Join(o.Dir, "nope")); !errors.Is(err, ErrNoLog) {
		t.Errorf("Verify of a missing dir = %v, want ErrNoLog", err)
	}
}

func TestRotation(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize = 3000
	l := openTest(t, o)
	fill(t, l, 1, 40)
	l.Close()
	names := logNames(t, o.Dir)
	if len(names) < 5 {
		t.Fatalf("%d files, want rotation into several: %v", len(names), names)
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(o.Dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > o.MaxFileSize {
			t.Errorf("%s is %d bytes, more than %d", n, fi.Size(), o.MaxFileSize)
		}
	}
	rep, err := Verify(o.Dir)
	if err != nil || rep.Records != 40 || rep.Files != len(names) {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	// Reopening continues in the last file.
	l = openTest(t, o)
	fill(t, l, 41, 42)
	l.Close()
	if rep, err := Verify(o.Dir); err != nil || rep.Records != 42 {
		t.Fatalf("Verify after reopen = %+v, %v", rep, err)
	}
}

func TestRetention(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize, o.MaxFiles = 3000, 2
	l := openTest(t, o)
	fill(t, l, 1, 60)
	l.Close()
	names := logNames(t, o.Dir)
	if len(names) != 3 {
		t.Fatalf("files = %v, want 2 rotated + the current one", names)
	}
	rep, err := Verify(o.Dir)
	if err != nil {
		t.Fatalf("Verify after retention: %v %v", err, rep.Problems)
	}
	if rep.BaseSeq <= 1 || rep.FirstSeq != rep.BaseSeq {
		t.Errorf("base %d, first %d: want the base moved to the first kept record", rep.BaseSeq, rep.FirstSeq)
	}
	var retention int
	for e, err := range Read(o.Dir, Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == KindRetention {
			retention++
			if !strings.Contains(e.Reason, "deleted 1 old file(s)") {
				t.Errorf("retention reason: %s", e.Reason)
			}
		}
	}
	if retention == 0 {
		t.Error("no retention record")
	}

	// Deleting the oldest kept file by hand is not retention.
	if err := os.Remove(filepath.Join(o.Dir, names[0])); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(o.Dir)
	if !errors.Is(err, ErrTampered) || len(rep.Problems) == 0 || rep.Problems[0].Kind != ProblemStart {
		t.Errorf("Verify after deleting the oldest file = %v %v, want a start problem", err, rep.Problems)
	}
}

func TestConcurrentAppend(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize = 20000
	l := openTest(t, o)
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := l.Append(call(w*each + i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.Close()
	rep, err := Verify(o.Dir)
	if err != nil || rep.Records != workers*each || rep.LastSeq != workers*each {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

func TestPermissions(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	fill(t, l, 1, 1)
	l.Close()
	mode := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(o.Dir); m != 0o700 {
		t.Errorf("dir mode %v, want 0700", m)
	}
	for _, n := range append(logNames(t, o.Dir), headName, lockName) {
		if m := mode(filepath.Join(o.Dir, n)); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", n, m)
		}
	}

	// Loose permissions are tightened, with a warning in verify meanwhile.
	name := filepath.Join(o.Dir, logNames(t, o.Dir)[0])
	if err := os.Chmod(o.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(o.Dir)
	if err != nil || len(rep.Warnings) != 1 || rep.Warnings[0].Kind != WarnPermissions {
		t.Errorf("Verify of a 0644 file = %v, warnings %v", err, rep.Warnings)
	}
	l = openTest(t, o)
	l.Close()
	if m := mode(o.Dir); m != 0o700 {
		t.Errorf("dir mode after Open %v, want 0700", m)
	}
	if m := mode(name); m != 0o600 {
		t.Errorf("file mode after Open %v, want 0600", m)
	}

	// A directory of another user is refused.
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	if err := os.Chown(o.Dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("Open of another user's dir = %v", err)
	}
}

// TestPartialLine is a crash in the middle of a write: verify says where, and
// Open starts a new file after a chain-reset record instead of gluing the
// next record to the cut one.
func TestPartialLine(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	fill(t, l, 1, 5)
	l.Close()
	name := logNames(t, o.Dir)[0]
	p := filepath.Join(o.Dir, name)
	fi, _ := os.Stat(p)
	if err := os.Truncate(p, fi.Size()-40); err != nil {
		t.Fatal(err)
	}

	rep, err := Verify(o.Dir)
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("Verify = %v, want ErrTampered", err)
	}
	if got := strings.Join(kinds(rep.Problems, []string{name}), " "); got != "partial@0:5 end@-:0" {
		t.Errorf("problems = %s (%v)", got, rep.Problems)
	}
	if !strings.Contains(err.Error(), name+":5: partial line") {
		t.Errorf("error does not say where: %v", err)
	}

	var logged syncbuf.Buffer
	o.Logger = slogTo(&logged)
	l = openTest(t, o)
	fill(t, l, 6, 7)
	l.Close()
	if !strings.Contains(logged.String(), "partial line") {
		t.Errorf("no warning at Open: %q", logged.String())
	}
	names := logNames(t, o.Dir)
	if len(names) != 2 {
		t.Fatalf("files = %v, want a new one", names)
	}
	ls := readLines(t, filepath.Join(o.Dir, names[1]))
	reset, err := parseLine([]byte(ls[0]))
	if err != nil || reset.Kind != KindReset || reset.Seq != 6 || !strings.Contains(reset.Reason, "partial line") {
		t.Errorf("first record of the new file = %+v, %v", reset, err)
	}
	rep, err = Verify(o.Dir)
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("Verify after reset = %v", err)
	}
	// The cut line and the reset, and nothing after: new records are chained.
	if got := strings.Join(kinds(rep.Problems, names), " "); got != "partial@0:5 chain-reset@1:1" {
		t.Errorf("problems = %s (%v)", got, rep.Problems)
	}
	if rep.Resets != 1 || rep.LastSeq != 8 {
		t.Errorf("report = %+v", rep)
	}
}

// TestOpenRepairs covers what Open finds at start: damage it must record with
// a chain reset, and states that are fine.
func TestOpenRepairs(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		reason string // "" for no reset
	}{
		{"intact", func(*testing.T, string) {}, ""},
		{"head one behind", func(t *testing.T, dir string) {
			// contextd stopped between writing record 5 and head.json.
			p := filepath.Join(dir, logNames(t, dir)[0])
			r, _ := parseLine([]byte(readLines(t, p)[3]))
			h, _, _ := readHead(dir)
			h.Seq, h.Hash = r.Seq, r.Hash
			if err := writeHead(dir, h, false); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"empty newest file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, fileName(6, time.Now().Add(time.Hour))), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"head missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, headName))
		}, "head.json is missing"},
		{"head garbage", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, headName), []byte("{"), 0o600)
		}, "head.json is unreadable"},
		{"last record deleted", func(t *testing.T, dir string) {
			p := filepath.Join(dir, logNames(t, dir)[0])
			ls := readLines(t, p)
			writeLines(t, p, ls[:len(ls)-1])
		}, "records were deleted or lost"},
		{"last record edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, logNames(t, dir)[0])
			ls := readLines(t, p)
			ls[4] = strings.Replace(ls[4], "safe_bash", "safe_read", 1)
			writeLines(t, p, ls)
		}, "hash does not match"},
		{"all files deleted", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, logNames(t, dir)[0]))
		}, "no log file holds a record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t)
			l := openTest(t, o)
			fill(t, l, 1, 5)
			l.Close()
			tt.damage(t, o.Dir)

			l = openTest(t, o)
			fill(t, l, 6, 6)
			l.Close()
			var resets []Record
			for e, err := range Read(o.Dir, Filter{}) {
				if err == nil && e.Kind == KindReset {
					resets = append(resets, e.Record)
				}
			}
			if tt.reason == "" {
				if rep, err := Verify(o.Dir); err != nil || len(resets) > 0 {
					t.Errorf("Verify = %v %v, resets %v", err, rep.Problems, resets)
				}
				return
			}
			if len(resets) != 1 || !strings.Contains(resets[0].Reason, tt.reason) {
				t.Fatalf("resets = %+v, want one saying %q", resets, tt.reason)
			}
			if resets[0].Seq < 6 {
				t.Errorf("reset reused seq %d", resets[0].Seq)
			}
			rep, err := Verify(o.Dir)
			if !errors.Is(err, ErrTampered) || rep.Resets != 1 {
				t.Errorf("Verify = %v, %+v", err, rep)
			}
			// The record after the reset is chained to it.
			for _, p := range rep.Problems {
				if p.Seq > resets[0].Seq {
					t.Errorf("problem after the reset: %v", p)
				}
			}
		})
	}
}

// TestWriteFailure: a failed write leaves no partial line behind and the
// chain where it was.
func TestWriteFailure(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	defer l.Close()
	fill(t, l, 1, 2)
	// Make the next write fail as a full disk would.
	l.mu.Lock()
	good := l.f
	ro, err := os.Open(filepath.Join(o.Dir, l.name))
	if err != nil {
		t.Fatal(err)
	}
	l.f = ro
	l.mu.Unlock()
	if err := l.Append(call(3)); err == nil || !errors.Is(err, syscall.EBADF) {
		t.Errorf("Append on a failing file = %v", err)
	}
	l.mu.Lock()
	l.f = good
	ro.Close()
	l.mu.Unlock()
	if seq, _ := l.Last(); seq != 2 {
		t.Errorf("chain moved on to %d after a failed write", seq)
	}
	fill(t, l, 3, 3)
	if rep, err := Verify(o.Dir); err != nil || rep.Records != 3 {
		t.Errorf("Verify = %+v %v", rep, err)
	}
}
