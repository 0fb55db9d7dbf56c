package layering

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/contextd/contextd"

// pkg is one package of the module: its direct imports and everything it
// links, both module-relative and limited to the module's own packages.
type pkg struct {
	Imports []string
	Deps    []string
}

// graph maps each module-relative package path to its edges.
type graph map[string]pkg

var loaded struct {
	once sync.Once
	g    graph
	err  error
}

// moduleGraph lists every package of the module, those built only with the
// e2e tag included, once for all the tests of this package.
func moduleGraph(t *testing.T) graph {
	t.Helper()
	loaded.once.Do(func() {
		var wg sync.WaitGroup
		parts := make([]graph, 2)
		errs := make([]error, 2)
		for i, tags := range []string{"", "e2e"} {
			wg.Go(func() { parts[i], errs[i] = goList(tags) })
		}
		wg.Wait()
		loaded.g, loaded.err = merge(parts...), errors.Join(errs...)
	})
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.g
}

// goList reads the module's packages as the go command sees them with tags.
func goList(tags string) (graph, error) {
	cmd := exec.Command("go", "list", "-tags="+tags, "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = "../.."
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -tags=%q: %w: %s", tags, err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -tags=%q: %w", tags, err)
		}
		rel, ok := relative(p.ImportPath)
		if !ok {
			return nil, fmt.Errorf("go list -tags=%q listed %s, outside the module", tags, p.ImportPath)
		}
		g[rel] = pkg{Imports: ofModule(p.Imports), Deps: ofModule(p.Deps)}
	}
	return g, nil
}

// relative trims the module's path from an import path; ok is false for a
// package outside the module.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	return strings.CutPrefix(importPath, module+"/")
}

func ofModule(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rel, ok := relative(p); ok {
			out = append(out, rel)
		}
	}
	return out
}

// merge unites graphs listed with different tags: a package's edges are the
// union of its edges under each.
func merge(gs ...graph) graph {
	out := graph{}
	for _, g := range gs {
		for rel, p := range g {
			q := out[rel]
			out[rel] = pkg{Imports: union(q.Imports, p.Imports), Deps: union(q.Deps, p.Deps)}
		}
	}
	return out
}

func union(a, b []string) []string {
	s := slices.Concat(a, b)
	slices.Sort(s)
	return slices.Compact(s)
}

// check holds g against rules. It returns the failures (a forbidden edge, a
// package no rule places, a pattern that names no package, an empty graph,
// a pending rule that holds) and what the pending rules would forbid.
func check(g graph, rules []rule) (failures, pending []string) {
	edges := 0
	for _, p := range g {
		edges += len(p.Imports)
	}
	// A graph that lost its packages or its edges (go list failing quietly,
	// a wrong directory, a broken decoder) would pass every rule.
	if len(g) == 0 || edges == 0 {
		return []string{fmt.Sprintf("the package graph is empty (%d packages, %d imports between them): the rules would check nothing", len(g), edges)}, nil
	}
	rels := slices.Sorted(maps.Keys(g))
	for i, r := range rules {
		failures = append(failures, stale(r, rels)...)
		var found []string
		for _, rel := range rels {
			if r.binds(rel) {
				found = append(found, violations(r, rel, g[rel])...)
			}
		}
		switch {
		case r.pending == "":
			failures = append(failures, found...)
		case len(found) > 0:
			for _, v := range found {
				pending = append(pending, fmt.Sprintf("pending on %s: %s", r.pending, v))
			}
		default:
			failures = append(failures, fmt.Sprintf("rule %d (%v) holds: delete its pending (%s) to enforce it", i, r.from, r.pending))
		}
	}
	for _, rel := range rels {
		if !placed(rules, rel) {
			failures = append(failures, fmt.Sprintf("package %s has no rule in the layering table: name it in the from of the rule of its layer (span rules do not place a package)", rel))
		}
	}
	return failures, pending
}

// stale lists r's patterns that name no package: a rule about packages that
// are gone, or misspelled, checks nothing.
func stale(r rule, rels []string) []string {
	var out []string
	for _, group := range [][]string{r.from, r.except, r.forbid, r.allow} {
		for _, p := range group {
			if !slices.ContainsFunc(rels, func(rel string) bool { return matches(p, rel) }) {
				out = append(out, fmt.Sprintf("rule %v names %s, which matches no package: the table is out of date", r.from, p))
			}
		}
	}
	return out
}

// violations lists the edges of the package rel that r forbids.
func violations(r rule, rel string, p pkg) []string {
	edges, verb := p.Imports, "imports"
	if r.deep {
		edges, verb = p.Deps, "links"
	}
	var out []string
	for _, dep := range edges {
		if r.forbids(dep) {
			out = append(out, fmt.Sprintf("%s %s %s: %s", rel, verb, dep, r.why))
		}
	}
	return out
}

// placed reports whether a rule that is not a span binds rel.
func placed(rules []rule, rel string) bool {
	for _, r := range rules {
		if !r.span && r.binds(rel) {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	failures, pending := check(moduleGraph(t), rules)
	for _, p := range pending {
		t.Log(p)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// withEdge is g with one edge planted, from -> to, both direct and linked.
func withEdge(g graph, from, to string) graph {
	out := maps.Clone(g)
	p := out[from]
	out[from] = pkg{Imports: union(p.Imports, []string{to}), Deps: union(p.Deps, []string{to})}
	return out
}

// The checker must fail on what it exists to catch. Each case plants one
// defect in the real graph (or empties it) and wants a failure that the
// real graph does not have, containing want.
func TestCheckCatches(t *testing.T) {
	real := moduleGraph(t)
	base, _ := check(real, rules)
	type plant struct {
		name  string
		g     graph
		rules []rule
		want  string
	}
	cases := []plant{
		{name: "empty graph", g: graph{}, want: "graph is empty"},
		{name: "graph without edges", g: graph{"daemon": {}, "ns": {}}, want: "graph is empty"},
		{name: "daemon package no layer names", g: withPackage(real, "daemon/unplaced"), want: "package daemon/unplaced has no rule"},
		{name: "package outside every tree", g: withPackage(real, "unplaced"), want: "package unplaced has no rule"},
		{name: "pending rule enforced", g: real, want: "daemon/tools imports daemon/runner: ", rules: enforced([]rule{
			{from: []string{"daemon/tools"}, forbid: []string{"daemon/runner"}, pending: "planted", why: "planted"},
		})},
		{name: "rule naming a gone package", g: real, want: "names daemon/gone, which matches no package", rules: append(slices.Clone(rules),
			rule{from: []string{"daemon/tools"}, forbid: []string{"daemon/gone"}, why: "planted"})},
		{name: "pending rule that holds", g: real, want: "holds: delete its pending", rules: []rule{
			{from: []string{"daemon/config"}, forbid: []string{"daemon/tools"}, pending: "a closed issue"},
		}},
	}
	for _, e := range plantedEdges {
		for _, p := range []string{e.from, e.to} {
			if _, ok := real[p]; !ok {
				t.Errorf("planted edge %s -> %s: the module has no package %s", e.from, e.to, p)
			}
		}
		if slices.Contains(real[e.from].Deps, e.to) {
			t.Errorf("planted edge %s -> %s is in the real graph: it proves nothing", e.from, e.to)
		}
		want := fmt.Sprintf("%s imports %s: ", e.from, e.to)
		if e.deep {
			want = fmt.Sprintf("%s links %s: ", e.from, e.to)
		}
		cases = append(cases, plant{name: e.from + " -> " + e.to, g: withEdge(real, e.from, e.to), want: want})
	}
	for _, c := range cases {
		rs := c.rules
		if rs == nil {
			rs = rules
		}
		got, _ := check(c.g, rs)
		if !slices.ContainsFunc(got, func(f string) bool { return strings.Contains(f, c.want) && !slices.Contains(base, f) }) {
			t.Errorf("%s: no failure containing %q among %d", c.name, c.want, len(got))
		}
	}
}

// plantedEdges are imports the table must refuse, one or more per layer;
// deep says the rule that refuses it checks what the package links.
var plantedEdges = []struct {
	from, to string
	deep     bool
}{
	{"proxy/client", "daemon/peer", true},
	{"cmd/contextd-proxy", "proxy/mcpserve", true},
	{"mcp/intercept", "daemon/respond", true},
	{"wire/lite", "proxy/client", true},
	{"inspect", "daemon/audit", true},
	{"budget", "mcp/jsonrpc", true},
	{"salience", "daemon/respond", true},
	{"outline", "daemon/tools/toolproto", true},
	{"ns", "daemon/config", true},
	{"daemon", "daemon/listen", true},
	{"daemon/peer", "daemon/config", true},
	{"daemon/config", "daemon/tools", true},
	{"daemon/store/sqlite", "daemon/runner", true},
	{"daemon/embedding", "daemon/sandbox", true},
	{"daemon/state", "daemon/store/sqlite", true},
	{"daemon/tools", "daemon/sandbox", true},
	{"daemon/tools", "daemon/state", true},
	{"daemon/tools/toolproto", "salience", true},
	{"daemon/homeview", "daemon/tools", true},
	{"daemon/egress", "daemon/config", true},
	{"daemon/registries", "daemon/netview", true},
	{"daemon/mcpwrap", "daemon/tools", true},
	{"daemon/sandbox", "daemon/config", true},
	{"daemon/runner", "outline", true},
	{"daemon/tools/inside", "daemon/runner", true},
	{"daemon/respond", "outline", true},
	{"daemon/audit", "daemon/store", true},
	{"proxy/hook", "proxy/install", true},
	{"daemon/tools", "daemon/tools/inside", false},
	{"daemon/sandbox", "daemon", false},
	{"daemon", "daemon/runner/runnertest", false},
	{"cmd/contextd/app", "internal/daemontest", false},
	{"daemon/runner/runnertest", "cmd/contextd", true},
	{"bench/rpclat", "daemon/tools", true},
	{"e2e/egressprobe", "scrub", true},
	{"internal/layering", "catalog", false},
}

// withPackage is g with one package more, importing catalog.
func withPackage(g graph, rel string) graph {
	out := maps.Clone(g)
	out[rel] = pkg{Imports: []string{"catalog"}, Deps: []string{"catalog"}}
	return out
}

// enforced is rules with every pending mark deleted.
func enforced(rules []rule) []rule {
	out := slices.Clone(rules)
	for i := range out {
		out[i].pending = ""
	}
	return out
}

func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, rel string
		want         bool
	}{
		{"daemon", "daemon", true},
		{"daemon", "daemon/tools", false},
		{"daemon/...", "daemon", true},
		{"daemon/...", "daemon/tools/inside", true},
		{"daemon/...", "daemonx", false},
		{"...", "e2e/salcorpus", true},
		{"*test", "daemon/runner/runnertest", true},
		{"*test", "internal/daemontest", true},
		{"*test", "internal/victim", false},
	} {
		if got := matches(c.pattern, c.rel); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.rel, got, c.want)
		}
	}
}
