package safeunpack

import (
	"archive/tar"
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// seedMembers are the attack archives' and a good archive's members, the
// seeds of both archive fuzzers (testdata/fuzz holds their bytes too).
var seedMembers = [][]member{
	{{name: "./", kind: tar.TypeDir}, {name: "./a/", kind: tar.TypeDir}, {name: "./a/b", body: "hello", mode: 0o755}},
	{{name: "../x", body: "evil"}},
	{{name: "/etc/x", body: "evil"}},
	{{name: "a/../../x", body: "evil"}},
	{{name: "lnk", kind: tar.TypeSymlink, link: ".."}, {name: "lnk/x", body: "evil"}},
	{{name: "a", body: "1"}, {name: "a", body: "2"}},
	{{name: "s", body: "x", mode: 0o6777}},
	{{name: "zeros", size: 8 << 10}},
}

// fuzzExtract extracts data and checks what must hold for any input: no
// panic, nothing beside dest, nothing in dest but plain files and
// directories with safe modes, and a Scan that agrees with a success.
func fuzzExtract(t *testing.T, data []byte) {
	lim := Limits{MaxBytes: 1 << 20, MaxFiles: 64}
	parent, dest := sandboxDirs(t)
	rep, err := Extract(bytes.NewReader(data), int64(len(data)), dest, lim)
	assertContained(t, parent)
	if rep.Bytes > lim.MaxBytes+1 || rep.Files+rep.Dirs > lim.MaxFiles {
		t.Fatalf("report %+v passes the bounds %+v", rep, lim)
	}
	if err != nil {
		var r *refusal
		if !errors.As(err, &r) {
			t.Fatalf("error %v names no reason", err)
		}
		return
	}
	srep, serr := Scan(bytes.NewReader(data), int64(len(data)), lim)
	if serr != nil || srep != rep {
		t.Fatalf("Extract = %+v but Scan = %+v, %v", rep, srep, serr)
	}
}

func FuzzTarEntries(f *testing.F) {
	for _, ms := range seedMembers {
		f.Add(tarOf(f, ms...))
		f.Add(gzipOf(f, tarOf(f, ms...)))
	}
	f.Add(tarOf(f, member{name: "h", kind: tar.TypeLink, link: "/etc/passwd"}))
	f.Fuzz(fuzzExtract)
}

func FuzzZipEntries(f *testing.F) {
	for _, ms := range seedMembers {
		f.Add(zipOf(f, ms...))
	}
	f.Fuzz(fuzzExtract)
}

func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"a", "./a/b/", "../x", "/etc/x", "a/../../x", "a//b", ".", "./", "a\x00b", `..\x`, "a/./b/..", "\u0085x", "é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rel, err := CleanName(name)
		if err != nil {
			var r *refusal
			if !errors.As(err, &r) || rel != "" {
				t.Fatalf("CleanName(%q) = %q, %v", name, rel, err)
			}
			return
		}
		if rel == "" {
			if strings.Trim(name, "./") != "" {
				t.Fatalf("CleanName(%q) = the root", name)
			}
			return
		}
		if !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
			t.Fatalf("CleanName(%q) = %q, not a clean local path", name, rel)
		}
		for _, elem := range strings.Split(rel, "/") {
			if elem == ".." || elem == "." || elem == "" {
				t.Fatalf("CleanName(%q) = %q keeps %q", name, rel, elem)
			}
		}
		if strings.ContainsFunc(rel, func(r rune) bool { return unicode.IsControl(r) || r == '\\' }) {
			t.Fatalf("CleanName(%q) = %q keeps a control character or backslash", name, rel)
		}
		if strings.Contains("/"+name+"/", "/../") {
			t.Fatalf("CleanName(%q) accepted a .. element", name)
		}
		if again, err := CleanName(rel); err != nil || again != rel {
			t.Fatalf("CleanName(%q) = %q, %v; want it unchanged", rel, again, err)
		}
	})
}
