package layering

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/contextd/contextd/"

// rule forbids the packages matching from (and, with deep, everything they
// link) to import any package under one of forbid.
type rule struct {
	from   []string // package patterns relative to the module: "proxy/..." or "cmd/contextd-proxy"
	deep   bool     // check every package linked in, not only direct imports
	forbid []string // module-relative prefixes ("daemon/" forbids daemon/x but not daemonx)
	allow  []string // prefixes under forbid that stay allowed
	why    string
}

// forbids reports whether r forbids an edge to the module-relative dep.
func (r rule) forbids(dep string) bool {
	under := func(prefix string) bool {
		return strings.HasPrefix(dep+"/", prefix) || strings.HasPrefix(dep, prefix)
	}
	for _, a := range r.allow {
		if under(a) {
			return false
		}
	}
	for _, f := range r.forbid {
		if under(f) {
			return true
		}
	}
	return false
}

// rules is the layering, one reviewable table. The daemon is the top: it may
// use every other layer. Below it sit the MCP firewall (mcp/), the wire
// protocols (wire/) and the proxy (proxy/); at the bottom the leaves that
// every side shares (catalog, scrub, budget, workspace, peercred, ids,
// sqlitefile, envallow, toolspec, sandboxinfo).
var rules = []rule{
	{
		from:   []string{"cmd/contextd-proxy", "cmd/contextd-proxy-mcp"},
		deep:   true,
		forbid: []string{"daemon/", "mcp/", "ns/", "seccomp/", "inspect/", "cmd/contextd/"},
		why:    "the proxy starts on every tool call and runs in the agent's process tree: it links nothing of the daemon (nor its sandbox, seccomp or MCP firewall)",
	},
	{
		from:   []string{"proxy/..."},
		forbid: []string{"daemon/", "mcp/", "ns/", "seccomp/"},
		why:    "the proxy speaks to the daemon over the socket only; what both need lives in a shared leaf",
	},
	{
		from:   []string{"mcp/..."},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "cmd/"},
		why:    "the MCP firewall is a library the daemon uses; it must not reach back into the daemon (daemon -> mcp, never both ways)",
	},
	{
		from:   []string{"wire/..."},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "mcp/", "cmd/"},
		why:    "the protocols are the edge; clients of the public API link them without the daemon or the proxy",
	},
	{
		from: []string{"catalog/...", "scrub/...", "budget/...", "workspace/...", "peercred/...", "internal/ids/...", "internal/sqlitefile/...", "internal/drain/...", "internal/nanotime/...", "internal/syncbuf/...", "envallow/...", "toolspec/...", "sandboxinfo/...",
			"salience/...", "outline/...", "systemd/..."},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "mcp/", "wire/", "cmd/", "ns/", "inspect/"},
		why:    "the shared leaves sit below every layer that uses them",
	},
	{
		from:   []string{"ns/...", "seccomp/...", "profiles/..."},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "mcp/", "wire/", "cmd/", "inspect/"},
		why:    "the sandbox's init and its seccomp programs run before and under the profile: they link nothing of the daemon, the proxy or the protocols",
	},
	{
		from:   []string{"inspect/..."},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "mcp/", "cmd/", "ns/"},
		why:    "the inspector reads the daemon's light protocol from outside: it links the protocol and the leaves, never the daemon",
	},
	{
		from:   []string{"daemon/tools/inside"},
		deep:   true,
		forbid: []string{"daemon/", "mcp/", "wire/", "proxy/", "cmd/", "ns/", "inspect/"},
		allow:  []string{"daemon/tools/toolproto/"},
		why:    "the code that runs in a tool's sandbox links only the protocol and the leaves: nothing of the daemon's (its store, config, runner) can be reached from under the seccomp profile",
	},
	{
		from:   []string{"proxy/hook"},
		deep:   true,
		forbid: []string{"proxy/install"},
		why:    "the hook runs before every tool call of the agent and must start fast: it reads what install left through proxy/agentfiles, never linking the installer (its parsers, its regular expressions)",
	},
	{
		from:   []string{"daemon/tools/toolproto"},
		deep:   true,
		forbid: []string{"daemon/", "mcp/", "wire/", "proxy/", "cmd/", "ns/", "inspect/", "salience/"},
		why:    "the protocol between a tool's two halves belongs to neither side: its types are its own (a salience rule or block is converted at each end)",
	},
	{
		from:   []string{"daemon/egress"},
		deep:   true,
		forbid: []string{"daemon/", "mcp/", "wire/", "proxy/", "cmd/", "ns/", "inspect/", "scrub/"},
		why:    "the egress proxy faces the sandbox's traffic: it works on the plain rules and credentials it is handed, and can reach nothing of the daemon's state (its vaults, config, store)",
	},
	{
		from:   []string{"daemon/registries"},
		deep:   true,
		forbid: []string{"daemon/", "mcp/", "wire/", "proxy/", "cmd/", "ns/", "inspect/"},
		allow:  []string{"daemon/homeview/"},
		why:    "reading the user's toolchain configuration needs the home view's host and its redaction, nothing else of the daemon",
	},
	{
		from:   []string{"daemon/..."},
		deep:   true,
		forbid: []string{"daemon/tools/inside/"},
		why:    "the daemon talks to the sandbox-side code through the protocol only; the binary's ns hooks (cmd/contextd) are its one entry",
	},
	{
		// Test support, ruled rather than left out: the tests of ns and of
		// the daemon's sandbox layers share it, so it sits below both.
		from:   []string{"internal/victim"},
		deep:   true,
		forbid: []string{"daemon/", "proxy/", "mcp/", "wire/", "cmd/", "ns/", "inspect/"},
		why:    "the test binary's victim behaviours (probes, re-runs as a test user) are shared by the tests of ns and of the daemon's sandbox layers: a leaf below both",
	},
	{
		from:   []string{"cmd/..."},
		deep:   true,
		forbid: []string{"daemon/runner/runnertest/", "internal/daemontest/", "internal/victim/", "daemon/store/storetest/", "daemon/embedding/embedtest/", "seccomp/seccomptest/"},
		why:    "the binaries link no test support: a runner without a sandbox cannot be chosen in production if it is not there",
	},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// graph lists every package of the module with its direct imports and
// everything it links.
func graph(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return g
}

func matches(pattern, rel string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == dir || strings.HasPrefix(rel, dir+"/")
	}
	return rel == pattern
}

// unruled are the packages no rule needs to name: drivers of benchmarks and
// tests, generators, and this test. Every other package must be matched by a
// rule's from (TestEveryPackageRuled).
var unruled = []string{"bench/...", "e2e/...", "packaging/...", "catalog/gendoc", "internal/layering",
	"internal/daemontest"}

func TestImportRules(t *testing.T) {
	g := graph(t)
	// A graph that lost its packages (go list failing quietly, a wrong
	// directory) would pass every rule below.
	for _, must := range []string{"daemon", "proxy", "cmd/contextd", "cmd/contextd-proxy", "ns", "scrub", "wire/lite"} {
		if _, ok := g[must]; !ok {
			t.Fatalf("the package graph has no %s (%d packages): the rules would check nothing", must, len(g))
		}
	}
	for _, r := range rules {
		found := false
		for rel, p := range g {
			in := false
			for _, f := range r.from {
				in = in || matches(f, rel)
			}
			if !in {
				continue
			}
			found = true
			edges := p.Imports
			if r.deep {
				edges = p.Deps
			}
			for _, imp := range edges {
				dep, ok := strings.CutPrefix(imp, module)
				if ok && r.forbids(dep) {
					t.Errorf("%s imports %s: %s", rel, dep, r.why)
				}
			}
		}
		if !found {
			t.Errorf("rule %v matches no package: the table is out of date", r.from)
		}
	}
}

// Every package is named by a rule (or is a driver of tests or benchmarks):
// a package added without its place in the layering fails here.
func TestEveryPackageRuled(t *testing.T) {
	g := graph(t)
	for rel := range g {
		named := false
		for _, u := range unruled {
			named = named || matches(u, rel)
		}
		for _, r := range rules {
			for _, f := range r.from {
				named = named || matches(f, rel)
			}
		}
		if !named {
			t.Errorf("package %s has no rule in the layering table: add it to a rule's from (or to unruled, for a test or benchmark driver)", rel)
		}
	}
}

// The rule table must catch a forbidden edge: check it against a graph
// with one planted.
func TestRulesCatchAPlantedEdge(t *testing.T) {
	g := graph(t)
	for _, c := range []struct{ from, to string }{
		{"proxy/client", "daemon/peer"},
		{"mcp/intercept", "daemon/respond"},
		{"budget", "mcp/jsonrpc"},
		{"daemon/tools/inside", "daemon/tools"},
		{"daemon/egress", "daemon/config"},
		{"daemon/registries", "daemon/tools"},
		{"daemon/tools/inside", "daemon/runner"},
		{"daemon/tools/toolproto", "daemon/tools/inside"},
		{"daemon/tools/toolproto", "salience"},
		{"proxy/hook", "proxy/install"},
		{"daemon/tools", "daemon/tools/inside"},
		{"daemon", "daemon/tools/inside"},
		{"cmd/contextd", "daemon/runner/runnertest"},
		{"ns", "daemon/config"},
		{"salience", "daemon/respond"},
		{"inspect", "daemon/audit"},
		{"internal/victim", "ns"},
		{"cmd/contextd", "internal/victim"},
	} {
		// A planted edge between packages that no longer exist proves
		// nothing about the table.
		for _, p := range []string{c.from, c.to} {
			if _, ok := g[p]; !ok {
				t.Errorf("planted edge %s -> %s: no package %s", c.from, c.to, p)
			}
		}
		caught := false
		for _, r := range rules {
			in := false
			for _, f := range r.from {
				in = in || matches(f, c.from)
			}
			if in && r.forbids(c.to) {
				caught = true
			}
		}
		if !caught {
			t.Errorf("an import %s -> %s would pass the rules", c.from, c.to)
		}
	}
}
