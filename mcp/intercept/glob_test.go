package intercept

import (
	"strings"
	"testing"
	"time"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "tools/call", true},
		{"*", "", true},
		{"tools/*", "tools/call", true},
		{"tools/*", "tools/", true},
		{"tools/*", "resources/read", false},
		{"notifications/*/list_changed", "notifications/tools/list_changed", true},
		{"read_?", "read_a", true},
		{"read_?", "read_é", true},
		{"read_?", "read_ab", false},
		{"*_file", "delete_file", true},
		{"*_file", "delete_files", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "abcbc", true},
		{"a*b*c", "acb", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{"exact", "exact", true},
		{"exact", "Exact", false},
		{"", "", true},
		{"", "x", false},
	} {
		g, err := compileGlob(tc.pat)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tc.pat, err)
		}
		if got := g.match(tc.s); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
	if _, err := compileGlob(`trailing\`); err == nil {
		t.Error("a lone trailing backslash compiled")
	}
}

// A pattern with many stars against a long name from the other side must not
// backtrack exponentially.
func TestGlobWorstCase(t *testing.T) {
	g, err := compileGlob("*a*a*a*a*a*a*a*a*b")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("a", 20000)
	start := time.Now()
	if g.match(s) {
		t.Fatal("matched without a b")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("worst case took %v", d)
	}
}
