package safeunpack

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

// sandboxDirs makes a parent directory holding only dest: whatever an
// extraction leaves beside dest escaped it.
func sandboxDirs(t testing.TB) (parent, dest string) {
	t.Helper()
	parent = t.TempDir()
	dest = filepath.Join(parent, "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, dest
}

// assertContained fails when anything but dest sits in parent, or when
// dest holds a link, a special file, or a mode with special bits or write
// for group or others.
func assertContained(t testing.TB, parent string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "dest" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("something landed outside dest: %q", names)
	}
	err = filepath.WalkDir(filepath.Join(parent, "dest"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := info.Mode()
		if !m.IsRegular() && !m.IsDir() {
			t.Errorf("%s: type %v in dest", p, m.Type())
		}
		if m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || m.Perm()&0o022 != 0 {
			t.Errorf("%s: mode %v keeps a special bit or write for others", p, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeOf reads what dest holds: each path with its mode, and a file's
// contents.
func treeOf(t testing.TB, dest string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dest {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = fmt.Sprintf("%v", info.Mode())
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%v %s", info.Mode(), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDetect(t *testing.T) {
	good := []member{{name: "a", body: "x"}}
	tests := []struct {
		name string
		data []byte
		want Format
		err  error
	}{
		{"tar", tarOf(t, good...), Tar, nil},
		{"tar.gz", gzipOf(t, tarOf(t, good...)), TarGzip, nil},
		{"zip", zipOf(t, good...), Zip, nil},
		{"empty zip", zipOf(t), Zip, nil},
		{"text", []byte("#!/bin/sh\necho hi\n"), 0, ErrFormat},
		{"nothing", nil, 0, ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(bytes.NewReader(tt.data), int64(len(tt.data)))
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Detect = %v, %v; want %v, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestExtractRefuses(t *testing.T) {
	type format func(testing.TB, ...member) []byte
	tgz := func(t testing.TB, ms ...member) []byte { return gzipOf(t, tarOf(t, ms...)) }
	small := Limits{MaxBytes: 1 << 20, MaxFiles: 5}
	many := make([]member, 6)
	for i := range many {
		many[i] = member{name: fmt.Sprintf("f%d", i), body: "x"}
	}
	tests := []struct {
		name    string
		formats map[string]format
		members []member
		lim     Limits
		err     error
		class   *catalog.Class
		inErr   string // the entry the error must name
	}{
		{name: "dot-dot", members: []member{{name: "../x", body: "evil"}}, err: ErrEscape, class: catalog.ErrPolicy, inErr: `"../x"`},
		{name: "absolute", members: []member{{name: "/etc/x", body: "evil"}}, err: ErrEscape, class: catalog.ErrPolicy, inErr: `"/etc/x"`},
		{name: "dot-dot inside", members: []member{{name: "a/../../x", body: "evil"}}, err: ErrEscape, class: catalog.ErrPolicy, inErr: `"a/../../x"`},
		{name: "dot-dot that stays", members: []member{{name: "a/../b", body: "x"}}, err: ErrEscape, class: catalog.ErrPolicy},
		{name: "symlink", members: []member{{name: "key", kind: tar.TypeSymlink, link: "/home/u/.ssh/id_rsa"}}, err: ErrLink, class: catalog.ErrPolicy, inErr: `"key"`},
		{name: "symlink then a file through it", members: []member{
			{name: "lnk", kind: tar.TypeSymlink, link: ".."},
			{name: "lnk/x", body: "evil"},
		}, err: ErrLink, class: catalog.ErrPolicy, inErr: `"lnk"`},
		{name: "hardlink", formats: map[string]format{"tar": tarOf, "tar.gz": tgz},
			members: []member{{name: "a", body: "x"}, {name: "b", kind: tar.TypeLink, link: "/etc/shadow"}}, err: ErrLink, class: catalog.ErrPolicy, inErr: `"b"`},
		{name: "fifo", members: []member{{name: "p", kind: tar.TypeFifo}}, err: ErrSpecial, class: catalog.ErrPolicy, inErr: `"p"`},
		{name: "device", formats: map[string]format{"tar": tarOf},
			members: []member{{name: "null", kind: tar.TypeChar}}, err: ErrSpecial, class: catalog.ErrPolicy, inErr: `"null"`},
		{name: "control character", members: []member{{name: "a\nb", body: "x"}}, err: ErrBadName, class: catalog.ErrBadInput},
		{name: "NUL", formats: map[string]format{"zip": zipOf},
			members: []member{{name: "a\x00b", body: "x"}}, err: ErrBadName, class: catalog.ErrBadInput},
		{name: "backslash", members: []member{{name: `..\..\x`, body: "x"}}, err: ErrBadName, class: catalog.ErrBadInput},
		{name: "duplicate", members: []member{{name: "a", body: "1"}, {name: "a", body: "2"}}, err: ErrDuplicate, class: catalog.ErrBadInput, inErr: `"a"`},
		{name: "duplicate once cleaned", members: []member{{name: "a", body: "1"}, {name: "./a", body: "2"}}, err: ErrDuplicate, class: catalog.ErrBadInput},
		{name: "beneath a file", members: []member{{name: "a", body: "1"}, {name: "a/b", body: "2"}}, err: ErrDuplicate, class: catalog.ErrBadInput},
		{name: "file over a directory", members: []member{{name: "a/b", body: "1"}, {name: "a", body: "2"}}, err: ErrDuplicate, class: catalog.ErrBadInput},
		{name: "bomb", members: []member{{name: "zeros", size: 10 << 20}}, lim: small, err: ErrTooLarge, class: catalog.ErrPolicy, inErr: `"zeros"`},
		{name: "bomb in pieces", members: []member{{name: "a", size: 700 << 10}, {name: "b", size: 700 << 10}}, lim: small, err: ErrTooLarge, class: catalog.ErrPolicy, inErr: `"b"`},
		{name: "too many files", members: many, lim: small, err: ErrTooMany, class: catalog.ErrPolicy, inErr: `"f5"`},
	}
	all := map[string]format{"tar": tarOf, "tar.gz": tgz, "zip": zipOf}
	for _, tt := range tests {
		formats := tt.formats
		if formats == nil {
			formats = all
		}
		for fname, build := range formats {
			t.Run(tt.name+"/"+fname, func(t *testing.T) {
				data := build(t, tt.members...)
				parent, dest := sandboxDirs(t)
				rep, err := Extract(bytes.NewReader(data), int64(len(data)), dest, tt.lim)
				if !errors.Is(err, tt.err) || !errors.Is(err, tt.class) {
					t.Fatalf("Extract = %v; want %v (%s)", err, tt.err, tt.class.Code)
				}
				if !strings.Contains(err.Error(), tt.inErr) {
					t.Errorf("error %q does not name %s", err, tt.inErr)
				}
				if _, serr := Scan(bytes.NewReader(data), int64(len(data)), tt.lim); !errors.Is(serr, tt.err) {
					t.Errorf("Scan = %v; want %v", serr, tt.err)
				}
				assertContained(t, parent)
				lim := tt.lim.withDefaults()
				if rep.Bytes > lim.MaxBytes+1 {
					t.Errorf("wrote %d bytes past the bound %d", rep.Bytes, lim.MaxBytes)
				}
				for p := range treeOf(t, dest) {
					if strings.Contains(p, "evil") || p == "x" {
						t.Errorf("refused entry %q landed in dest", p)
					}
				}
			})
		}
	}
}

func TestExtractGood(t *testing.T) {
	members := []member{
		{name: "./", kind: tar.TypeDir, mode: 0o755},
		{name: "./bin/", kind: tar.TypeDir, mode: 0o755},
		{name: "./bin/tool", body: "#!/bin/sh\necho tool\n", mode: 0o755},
		{name: "./contextd-tool.toml", body: "name = \"hello\"\n"},
		{name: "src/deep/er/main.go", body: "package main\n"},
		{name: "src/", kind: tar.TypeDir, mode: 0o750},
		{name: "empty", body: ""},
		{name: "setuid", body: "s", mode: 0o4777},
		{name: "shared/", kind: tar.TypeDir, mode: 0o1777},
		{name: "ro", body: "r", mode: 0o444},
	}
	want := map[string]string{
		"bin/":                "drwxr-xr-x",
		"bin/tool":            "-rwxr-xr-x #!/bin/sh\necho tool\n",
		"contextd-tool.toml":  "-rw-r--r-- name = \"hello\"\n",
		"src/":                "drwxr-x---",
		"src/deep/":           "drwxr-xr-x",
		"src/deep/er/":        "drwxr-xr-x",
		"src/deep/er/main.go": "-rw-r--r-- package main\n",
		"empty":               "-rw-r--r-- ",
		"setuid":              "-rwxr-xr-x s",
		"shared/":             "drwxr-xr-x",
		"ro":                  "-rw-r--r-- r",
	}
	for fname, data := range map[string][]byte{
		"tar":    tarOf(t, members...),
		"tar.gz": gzipOf(t, tarOf(t, members...)),
		"zip":    zipOf(t, members...),
	} {
		t.Run(fname, func(t *testing.T) {
			old := unixUmask(0o022)
			defer unixUmask(old)
			parent, dest := sandboxDirs(t)
			rep, err := Extract(bytes.NewReader(data), int64(len(data)), dest, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			assertContained(t, parent)
			got := treeOf(t, dest)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: got %q, want %q", k, got[k], v)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected %s", k)
				}
			}
			wantRep := Report{Files: 6, Dirs: 3, Bytes: int64(len("#!/bin/sh\necho tool\n") + len("name = \"hello\"\n") + len("package main\n") + 2)}
			if rep != wantRep {
				t.Errorf("report %+v, want %+v", rep, wantRep)
			}
			if srep, err := Scan(bytes.NewReader(data), int64(len(data)), Limits{}); err != nil || srep != rep {
				t.Errorf("Scan = %+v, %v; want %+v", srep, err, rep)
			}
		})
	}
}

// TestExtractRaces plants links in dest before the extraction, as a
// process racing it would: the resolution under dest's descriptor refuses
// to follow them, whatever the archive's names.
func TestExtractRaces(t *testing.T) {
	tests := []struct {
		name  string
		plant string // a link in dest to the parent
		entry string
		err   error
	}{
		{"link as a parent", "a", "a/x", ErrLink},
		{"link as the file", "x", "x", ErrDuplicate},
		{"link deeper", "d/e", "d/e/f/x", ErrLink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, dest := sandboxDirs(t)
			plant := filepath.Join(dest, tt.plant)
			if err := os.MkdirAll(filepath.Dir(plant), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(parent, plant); err != nil {
				t.Fatal(err)
			}
			data := tarOf(t, member{name: tt.entry, body: "evil"})
			_, err := Extract(bytes.NewReader(data), int64(len(data)), dest, Limits{})
			if !errors.Is(err, tt.err) {
				t.Fatalf("Extract = %v; want %v", err, tt.err)
			}
			if _, err := os.Lstat(filepath.Join(parent, "x")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file landed beside dest: %v", err)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Fatalf("parent holds %d entries, want only dest", len(ents))
			}
		})
	}
}

func TestExtractDamaged(t *testing.T) {
	good := gzipOf(t, tarOf(t, member{name: "a", size: 64 << 10}, member{name: "b", body: "x"}))
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated gzip", good[:len(good)/2]},
		{"gzip of text", gzipOf(t, []byte("not a tar at all, just some words that go on for a while"))},
		{"zip without its directory", zipOf(t, member{name: "a", body: "x"})[:30]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, dest := sandboxDirs(t)
			_, err := Extract(bytes.NewReader(tt.data), int64(len(tt.data)), dest, Limits{})
			if !errors.Is(err, ErrFormat) || !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("Extract = %v; want %v", err, ErrFormat)
			}
			assertContained(t, parent)
		})
	}
}

func TestExtractKeepsPAXGlobalHeader(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// What git archive writes first: the commit, for the whole archive.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": "0123456789abcdef"}}); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("x"))
	tw.Close()
	_, dest := sandboxDirs(t)
	rep, err := Extract(bytes.NewReader(buf.Bytes()), int64(buf.Len()), dest, Limits{})
	if err != nil || rep.Files != 1 {
		t.Fatalf("Extract = %+v, %v", rep, err)
	}
	if got := treeOf(t, dest); len(got) != 1 || got["a"] == "" {
		t.Fatalf("dest holds %q, want only a", got)
	}
}
