package toolsearch

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"kubectl_scale", []string{"kubectl", "scale"}},
		{"API-post-search", []string{"api", "post", "search"}},
		{"getPullRequest", []string{"get", "pull", "request"}},
		{"HTTPServer v2", []string{"http", "server", "v", "2"}},
		{"files.read_text_file", []string{"files", "read", "text", "file"}},
		{"a/b\\c  d", []string{"a", "b", "c", "d"}},
		{"", nil},
		{"ÉtéRésumé", []string{"été", "résumé"}},
	} {
		if got := Words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStem(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"lists", "list"}, {"listing", "list"}, {"listed", "list"},
		{"replies", "reply"}, {"replied", "reply"},
		{"update", "updating"}, {"updated", "update"}, {"create", "created"},
		{"running", "run"}, {"committed", "commit"}, {"added", "add"},
		{"branches", "branch"}, {"files", "file"},
	} {
		if Stem(c.a) != Stem(c.b) {
			t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want one stem", c.a, Stem(c.a), c.b, Stem(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{{"pr", "prs"}, {"status", "statu"}, {"kubernetes", "kubernete"}} {
		if Stem(c.a) == Stem(c.b) && c.a != "pr" {
			t.Errorf("Stem(%q) and Stem(%q) meet at %q", c.a, c.b, Stem(c.a))
		}
	}
	if got := Stem("status"); got != "status" {
		t.Errorf("Stem(status) = %q", got)
	}
}

func TestTokensDropStopwords(t *testing.T) {
	got := Tokens("please list the Pods of my cluster")
	want := []string{"list", "pod", "cluster"}
	if !slices.Equal(got, want) {
		t.Errorf("Tokens = %q, want %q", got, want)
	}
}

// FuzzTokens holds the tokenizer's invariants on any input: tokens are
// lowercase runs of letters and digits, never empty, and the query parser
// never points a term at a word that is not there.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{"kubectl_scale", "bump web to 5 replicas", "API-post-search", "ÀÉ__x9Y", "", "...", "file a bug", ":tada:", "acme/api#77", "localhost:5173", "a@b.c", "51.5,-0.12", ":", "#", ":x:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range Words(s) {
			if w == "" || w != strings.ToLower(w) || strings.ContainsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
				t.Fatalf("Words(%q) yields %q", s, w)
			}
		}
		for _, w := range Tokens(s) {
			if w == "" {
				t.Fatalf("Tokens(%q) yields an empty token", s)
			}
		}
		qts, units := parseQuery(s)
		for _, qt := range qts {
			for _, u := range qt.units {
				if u < 0 || u >= units {
					t.Fatalf("parseQuery(%q): term %q points at word %d of %d", s, qt.term, u, units)
				}
			}
		}
	})
}
