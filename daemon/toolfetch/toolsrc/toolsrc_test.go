package toolsrc

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

func TestParse(t *testing.T) {
	sum := "sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		src                  string
		kind                 Kind
		url, ref, sub, check string
		rule                 string
		pinned               bool
		locked               string
	}{
		{src: "git::file:///srv/repo?ref=v1", kind: Git, url: "file:///srv/repo", ref: "v1", pinned: true, locked: "git::file:///srv/repo?ref=v1"},
		{src: "git::https://example.com/r.git//tools/x?ref=main", kind: Git, url: "https://example.com/r.git", ref: "main", sub: "tools/x", rule: "example.com:443", pinned: true,
			locked: "git::https://example.com/r.git//tools/x?ref=main"},
		{src: "https://example.com/r.git", kind: Git, url: "https://example.com/r.git", rule: "example.com:443", locked: "git::https://example.com/r.git"},
		{src: "http://127.0.0.1:8080/t.tar.gz?checksum=" + sum, kind: HTTP, url: "http://127.0.0.1:8080/t.tar.gz", check: sum, rule: "127.0.0.1:8080", pinned: true,
			locked: "http://127.0.0.1:8080/t.tar.gz"},
		{src: "https://Example.COM/a.zip?v=2", kind: HTTP, url: "https://Example.COM/a.zip?v=2", rule: "example.com:443", pinned: true, locked: "https://Example.COM/a.zip?v=2"},
		{src: "./tool", kind: Local, url: "/home/u/tool", locked: "/home/u/tool"},
		{src: "file:///opt/tool//sub", kind: Local, url: "/opt/tool", sub: "sub", locked: "/opt/tool//sub"},
	}
	for _, c := range cases {
		s, err := Parse(c.src, "/home/u")
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if s.Kind != c.kind || s.URL != c.url || s.Ref != c.ref || s.Subdir != c.sub || s.Checksum != c.check || s.Rule() != c.rule || s.Pinned() != c.pinned || s.Locked() != c.locked {
			t.Errorf("%s: got %+v rule %q pinned %v locked %q", c.src, s, s.Rule(), s.Pinned(), s.Locked())
		}
		again, err := Parse(s.Locked(), "/")
		if err != nil || again.Locked() != s.Locked() {
			t.Errorf("%s: its locked form %q reads back as %+v, %v", c.src, s.Locked(), again, err)
		}
	}
}

func TestParseRefused(t *testing.T) {
	for _, src := range []string{
		"", "git::file:///r?ref=-x", "git::file:///r?ref=--upload-pack=touch", "git::file:///r?ref=a..b", "git::file:///r?ref=a%20b",
		"git::https://h/r?sshkey=AAAA", "https://h/a.tgz?sshkey=x", "s3::https://b/k", "hg::https://h/r", "ssh://git@h/r.git",
		"git::ssh://git@h/r", "https://u:p@h/a.tgz", "git::file:///r//../../etc", "/a//b/../../c", "https://h/a.tgz?archive=false",
		"https://h/a.tgz?checksum=md5:00", "git::https://h/r?depth=1", "file://host/x", "relative/path", "https:///nohost.tgz",
		"https://h:99999/a.tgz", "git::file:///r//*", "a b",
	} {
		if _, err := Parse(src, "/"); !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("%q: %v, want %v", src, err, catalog.ErrBadInput)
		}
	}
}

// FuzzParse: whatever the source, a parse either fails as bad input or
// gives a source whose parts hold what the getters may safely be given: a
// ref git cannot read as an option, a subdir inside the tree, a host with
// no room for another rule, and a locked form that reads back the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"git::file:///r?ref=v1", "https://h:8/a.tgz//x?checksum=sha256:" + strings.Repeat("0", 64),
		"./t", "git::https://h/r.git//a/b?ref=-x", "file:///x//../y", "http://[::1]:80/a.zip", "git::file:///r?ref=a&ref=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(src, "/cwd")
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("%q: %v is not bad input", src, err)
			}
			return
		}
		if s.Ref != "" && CheckRef(s.Ref) != nil {
			t.Fatalf("%q: ref %q", src, s.Ref)
		}
		if strings.HasPrefix(s.Ref, "-") || strings.HasPrefix(s.Subdir, "/") || strings.Contains("/"+s.Subdir+"/", "/../") {
			t.Fatalf("%q: ref %q subdir %q", src, s.Ref, s.Subdir)
		}
		if strings.ContainsAny(s.Host, " \t\n/") {
			t.Fatalf("%q: host %q", src, s.Host)
		}
		again, err := Parse(s.Locked(), "/")
		if err != nil || again.Locked() != s.Locked() || again.Kind != s.Kind {
			t.Fatalf("%q: locked %q reads back as %+v, %v", src, s.Locked(), again, err)
		}
	})
}
