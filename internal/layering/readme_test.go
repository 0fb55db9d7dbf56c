package layering

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// wholeTrees are README layout entries that stand for every package below
// them (drivers and generators, no layer of their own).
var wholeTrees = []string{"bench/", "e2e/", "packaging/", "cmd/contextd-proxy/"}

// TestREADMELayout: the README's layout tables name every package of the
// module, and name no package that does not exist, so that a newcomer who
// reads them finds every package where it sits.
func TestREADMELayout(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	g := moduleGraph(t)
	cell := regexp.MustCompile("`([a-z0-9_./-]+/)`")
	named := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 3 {
			continue
		}
		// The package column: the second of a numbered row, else the first.
		col := cols[1]
		if strings.TrimSpace(col) != "" && strings.Trim(strings.TrimSpace(col), "0123456789abcdefgh") == "" {
			col = cols[2]
		}
		for _, m := range cell.FindAllStringSubmatch(col, -1) {
			named[m[1]] = true
		}
	}
	if len(named) < 20 {
		t.Fatalf("found only %d package paths in the README's layout tables: the check would prove nothing", len(named))
	}
	var missing []string
	for rel := range g {
		if rel == "" || named[rel+"/"] {
			continue
		}
		covered := false
		for _, w := range wholeTrees {
			covered = covered || strings.HasPrefix(rel+"/", w)
		}
		if !covered {
			missing = append(missing, rel)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("packages the README's layout tables do not name: %v", missing)
	}
	for n := range named {
		dir := strings.TrimSuffix(n, "/")
		if _, ok := g[dir]; ok {
			continue
		}
		found := false
		for rel := range g {
			found = found || strings.HasPrefix(rel+"/", n)
		}
		if !found {
			t.Errorf("the README names %s, which holds no package of the module", n)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the README's table of import rules from the rule table")

// The README's table of import rules sits between these two lines.
const (
	rulesBegin = "<!-- import rules: generated from internal/layering/rules_test.go by go test ./internal/layering -update -->\n"
	rulesEnd   = "<!-- end of the import rules -->\n"
)

// TestREADMERules: the README shows the rule table as it is, so that where a
// package sits, and what it may not link, is read in one place.
func TestREADMERules(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	before, rest, ok := strings.Cut(readme, rulesBegin)
	_, after, ok2 := strings.Cut(rest, rulesEnd)
	if !ok || !ok2 {
		t.Fatalf("README.md has no table of import rules between %q and %q", rulesBegin, rulesEnd)
	}
	want := before + rulesBegin + renderRules(rules) + rulesEnd + after
	if readme == want {
		return
	}
	if !*update {
		t.Fatal("README.md's table of import rules differs from the rule table: run go test ./internal/layering -update")
	}
	if err := os.WriteFile("../../README.md", []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renderRules writes the rule table as a Markdown table.
func renderRules(rules []rule) string {
	var b strings.Builder
	b.WriteString("| packages | may not | because |\n|---|---|---|\n")
	for _, r := range rules {
		who := patterns(r.from)
		if len(r.except) > 0 {
			who += ", but " + patterns(r.except)
		}
		verb := "import "
		if r.deep {
			verb = "link "
		}
		what := verb + patterns(r.forbid)
		if len(r.allow) > 0 {
			what += ", but " + patterns(r.allow)
		}
		if r.pending != "" {
			what = "**pending** on " + r.pending + ": " + what
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", who, what, r.why)
	}
	return b.String()
}

// patterns names rule patterns as the README writes them.
func patterns(ps []string) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		switch {
		case p == "...":
			out[i] = "every package"
		case strings.HasPrefix(p, "*"):
			out[i] = "`…" + p[1:] + "` packages"
		default:
			out[i] = "`" + p + "`"
		}
	}
	return strings.Join(out, ", ")
}
