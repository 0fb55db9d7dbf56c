package audit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tamperLog writes 20 records over several files and returns the directory
// and the files in order.
func tamperLog(t *testing.T) (string, []string) {
	t.Helper()
	o := testOptions(t)
	o.MaxFileSize = 3000
	l := openTest(t, o)
	fill(t, l, 1, 20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names := logNames(t, o.Dir)
	if len(names) < 4 {
		t.Fatalf("want at least 4 files, got %v", names)
	}
	if rep, err := Verify(o.Dir); err != nil {
		t.Fatalf("Verify before tampering: %v %v", err, rep.Problems)
	}
	return o.Dir, names
}

// editLine applies fn to line n (1-based) of file.
func editLine(t *testing.T, path string, n int, fn func(string) string) {
	t.Helper()
	ls := readLines(t, path)
	ls[n-1] = fn(ls[n-1])
	writeLines(t, path, ls)
}

// rehash changes the tool of a record and computes its hash again, as someone
// who read the package documentation would.
func rehash(t *testing.T, line string) string {
	t.Helper()
	r, err := parseLine([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	r.Tool = "safe_read"
	b, err := encodeLine(&r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func TestVerifyDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string, names []string)
		want   func(names []string, lastLines int) []string
	}{
		{"edit a field", func(t *testing.T, dir string, names []string) {
			editLine(t, filepath.Join(dir, names[1]), 2, func(s string) string { return strings.Replace(s, "safe_bash", "safe_read", 1) })
		}, fixed("edited@1:2")},
		{"edit one byte of the hash", func(t *testing.T, dir string, names []string) {
			editLine(t, filepath.Join(dir, names[1]), 2, func(s string) string {
				b := []byte(s)
				b[len(b)-3] ^= 1
				return string(b)
			})
		}, fixed("edited@1:2", "chain@1:3")},
		{"edit and rehash", func(t *testing.T, dir string, names []string) {
			editLine(t, filepath.Join(dir, names[1]), 2, func(s string) string { return rehash(t, s) })
		}, fixed("chain@1:3")},
		{"edit and rehash the last record", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[len(names)-1])
			editLine(t, p, len(readLines(t, p)), func(s string) string { return rehash(t, s) })
		}, func(names []string, last int) []string {
			return []string{fmt.Sprintf("head@%d:%d", len(names)-1, last)}
		}},
		{"delete a line", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			writeLines(t, p, slices.Delete(readLines(t, p), 1, 2))
		}, fixed("missing@1:2")},
		{"delete the first record", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[0])
			writeLines(t, p, readLines(t, p)[1:])
		}, fixed("file-name@0:1", "start@0:1")},
		{"delete the last record", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[len(names)-1])
			ls := readLines(t, p)
			writeLines(t, p, ls[:len(ls)-1])
		}, fixed("end@-:0")},
		{"swap two lines", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			ls := readLines(t, p)
			ls[1], ls[2] = ls[2], ls[1]
			writeLines(t, p, ls)
		}, fixed("missing@1:2", "order@1:3")},
		{"duplicate a line", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			ls := readLines(t, p)
			writeLines(t, p, slices.Insert(ls, 2, ls[1]))
		}, fixed("order@1:3")},
		{"insert a forged record", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			ls := readLines(t, p)
			writeLines(t, p, slices.Insert(ls, 1, rehash(t, ls[1])))
		}, fixed("order@1:3", "chain@1:4")},
		{"insert garbage", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			writeLines(t, p, slices.Insert(readLines(t, p), 2, `{"v":1,"seq":3}`))
		}, fixed("malformed@1:3")},
		{"insert an empty line", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[1])
			writeLines(t, p, slices.Insert(readLines(t, p), 2, ""))
		}, fixed("malformed@1:3")},
		{"delete a middle file", func(t *testing.T, dir string, names []string) {
			os.Remove(filepath.Join(dir, names[1]))
		}, fixed("missing@2:1")},
		{"delete the first file", func(t *testing.T, dir string, names []string) {
			os.Remove(filepath.Join(dir, names[0]))
		}, fixed("start@1:1")},
		{"delete the last file", func(t *testing.T, dir string, names []string) {
			os.Remove(filepath.Join(dir, names[len(names)-1]))
		}, fixed("end@-:0")},
		{"delete every file", func(t *testing.T, dir string, names []string) {
			for _, n := range names {
				os.Remove(filepath.Join(dir, n))
			}
		}, fixed("end@-:0")},
		{"rename a file", func(t *testing.T, dir string, names []string) {
			lf, _ := parseFileName(names[2])
			os.Rename(filepath.Join(dir, names[2]), filepath.Join(dir, fileName(lf.seq+1, lf.at)))
		}, fixed("file-name@-:1")},
		{"delete head.json", func(t *testing.T, dir string, names []string) {
			os.Remove(filepath.Join(dir, headName))
		}, fixed("head@head:0")},
		{"edit head.json", func(t *testing.T, dir string, names []string) {
			h, _, _ := readHead(dir)
			h.Hash = strings.Repeat("0", 64)
			writeHead(dir, h, false)
		}, func(names []string, last int) []string {
			return []string{fmt.Sprintf("head@%d:%d", len(names)-1, last)}
		}},
		{"cut the end of the last line", func(t *testing.T, dir string, names []string) {
			p := filepath.Join(dir, names[len(names)-1])
			fi, _ := os.Stat(p)
			os.Truncate(p, fi.Size()-10)
		}, func(names []string, last int) []string {
			return []string{fmt.Sprintf("partial@%d:%d", len(names)-1, last), "end@-:0"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, names := tamperLog(t)
			last := len(readLines(t, filepath.Join(dir, names[len(names)-1])))
			tt.tamper(t, dir, names)
			rep, err := Verify(dir)
			if !errors.Is(err, ErrTampered) {
				t.Fatalf("Verify = %v, want ErrTampered", err)
			}
			got, want := kinds(rep.Problems, names), tt.want(names, last)
			if !slices.Equal(got, want) {
				t.Errorf("problems = %v, want %v", got, want)
				for _, p := range rep.Problems {
					t.Log(p)
				}
			}
			if !strings.Contains(err.Error(), rep.Problems[0].String()) {
				t.Errorf("error %q does not name the first problem %q", err, rep.Problems[0])
			}
		})
	}
}

func fixed(want ...string) func([]string, int) []string {
	return func([]string, int) []string { return want }
}

// TestSameUserRewrite documents the limit of an unkeyed chain: whoever can
// write the files can recompute every hash from an edit onwards and head.json,
// and verify passes. Only a copy out of the user's reach (the journal) tells.
func TestSameUserRewrite(t *testing.T) {
	dir, names := tamperLog(t)
	prev := ""
	var seq uint64
	var hash string
	for _, n := range names {
		p := filepath.Join(dir, n)
		ls := readLines(t, p)
		for i, line := range ls {
			r, err := parseLine([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if r.Seq == 7 {
				r.Args = []byte(`{"command":"true"}`)
			}
			if r.Seq > 1 {
				r.Prev = prev
			}
			b, _ := encodeLine(&r)
			ls[i] = strings.TrimSuffix(string(b), "\n")
			prev, seq, hash = r.Hash, r.Seq, r.Hash
		}
		writeLines(t, p, ls)
	}
	h, _, _ := readHead(dir)
	h.Seq, h.Hash = seq, hash
	writeHead(dir, h, false)
	if rep, err := Verify(dir); err != nil {
		t.Errorf("a consistent rewrite was detected after all? %v %v", err, rep.Problems)
	}
}

// TestShellRecipe checks the package documentation's sha256sum recipe.
func TestShellRecipe(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	dir, names := tamperLog(t)
	p := filepath.Join(dir, names[1])
	r, err := parseLine([]byte(readLines(t, p)[1]))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `line=$(sed -n 2p "$1"); printf '%s}' "${line%,\"hash\":*}" | sha256sum`, "-", p).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := strings.Cut(string(out), " "); got != r.Hash {
		t.Errorf("recipe gives %s, record says %s", got, r.Hash)
	}
}

func TestVerifyWarnings(t *testing.T) {
	dir, names := tamperLog(t)
	// An empty file left by a crash right after creating it is not loss.
	lf, _ := parseFileName(names[len(names)-1])
	empty := fileName(21, lf.at.Add(3600e9))
	if err := os.WriteFile(filepath.Join(dir, empty), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir)
	if err != nil || len(rep.Warnings) != 1 || rep.Warnings[0].Kind != WarnEmpty {
		t.Errorf("Verify = %v, warnings %v", err, rep.Warnings)
	}
}

// TestVerifyLive verifies while records are appended, files rotated and old
// ones deleted: none of that is damage.
func TestVerifyLive(t *testing.T) {
	o := testOptions(t)
	o.MaxFileSize, o.MaxFiles = 3000, 3
	l := openTest(t, o)
	fill(t, l, 1, 5)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 6; i <= 600; i++ {
			if err := l.Append(call(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	runs := 0
	for live := true; live; runs++ {
		select {
		case <-done:
			live = false
		default:
		}
		if rep, err := Verify(o.Dir); err != nil {
			t.Errorf("Verify of a live log, run %d: %v %v", runs, err, rep.Problems)
			break
		}
	}
	<-done
	l.Close()
	t.Logf("%d verifications", runs)
}
