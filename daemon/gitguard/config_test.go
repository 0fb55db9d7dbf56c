package gitguard

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The forms git writes and reads, including the ones an attacker would use
// to hide a key from a naive reader (quotes, continuations, the old
// subsection form, odd case).
func TestParseConfig(t *testing.T) {
	cfg := "# comment\n[core]\n\tbare = false ; trailing\n\tHooksPath = \".hu\\\"sky\" # c\n" +
		"[Core]\n\tfsMonitor = touch \\\n/tmp/x\n[includeIf \"gitdir:~/w/\"]\n\tpath = a.inc\n" +
		"[remote.Origin]\n\turl = x\n[broken\n\tkey = skipped\n[alias]\n\tst\n\tlg = \"log  --oneline\"  \n"
	got := []string{}
	for _, e := range ParseConfig([]byte(cfg)) {
		got = append(got, e.Name()+"="+e.Value)
	}
	want := []string{"core.bare=false", `core.hookspath=.hu"sky`, "core.fsmonitor=touch /tmp/x",
		"includeif.gitdir:~/w/.path=a.inc", "remote.origin.url=x", "alias.st=true", "alias.lg=log  --oneline"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// Whatever the bytes, the parser returns and every entry it gives has the
// shape callers rely on (lower-case section and key, a valid key).
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\thooksPath = .husky\n",
		"[include]\n\tpath = ../x\n[includeIf \"onbranch:m\"]\npath=y",
		"[a \"b\\\"c\"]\n k = \"v\\\\\" ; c\n",
		"[x.y]\nk=\\\n\\\nv",
		"[\n]\n=\n\"\\",
		"[core]\r\n\tfsmonitor = \"a;b\"\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range ParseConfig(data) {
			if e.Section != strings.ToLower(e.Section) || e.Key != strings.ToLower(e.Key) || !validKey(e.Key) {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// A gitdir: file never yields a target outside the root, whatever it says.
func FuzzGitFileTarget(f *testing.F) {
	for _, s := range []string{"gitdir: .git/modules/a", "gitdir: ../../etc", "gitdir: /root/w/.git/worktrees/x", "gitdir:", "gitdir: a/../../b\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := gitFileTarget("/root/w", "sub/.git", []byte(s))
		if got != "" && (got == ".." || strings.HasPrefix(got, "../") || filepath.IsAbs(got)) {
			t.Fatalf("%q gave %q", s, got)
		}
	})
}
