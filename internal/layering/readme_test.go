package layering

import (
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
		if strings.TrimSpace(col) != "" && strings.Trim(strings.TrimSpace(col), "0123456789abc") == "" {
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
