package salcorpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ---- mocha ----------------------------------------------------------------

// mochaInject is the expected value the mocha case changes: 90 min is 1.5 h.
const (
	mochaKnown    = "[90, 'min', 'h', 1.5],"
	mochaInjected = "[90, 'min', 'h', 1.25],"
)

// mochaProject writes the mocha fixture (testdata/mocha) to dst and installs
// mocha from the npm registry as its committed lockfile pins it.
func (r *run) mochaProject(ctx context.Context, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := writeFixture("mocha", dst); err != nil {
		return err
	}
	_, err := r.must(ctx, dst, "npm ci --no-audit --no-fund")
	return err
}

func mochaCase(ctx context.Context, r *run) (Case, error) {
	c := Case{Command: "npx mocha --reporter spec --no-color", Dir: filepath.Join(r.dir, "mocha", "units")}
	if err := r.mochaProject(ctx, c.Dir); err != nil {
		return c, err
	}
	if err := editFile(filepath.Join(c.Dir, "test", "units.test.js"), mochaKnown, mochaInjected); err != nil {
		return c, err
	}
	if err := r.record(ctx, &c); err != nil {
		return c, err
	}
	var err error
	// The spec reporter marks the failing test in place with "N) title"
	// (the summary at the end names the suite on that line instead).
	c.Failure, err = pick(c.Log, `^\s+\d+\) knows that `)
	return c, err
}

// ---- unittest ---------------------------------------------------------------

// pyProject writes a small Python package with its unittest suite to dst:
// about 130 small tests generated here, and, if inject, one failing
// assertEqual (a long multi-line mismatch, as a golden-file test gives) and
// one test that raises, in the middle of the run.
func pyProject(dst string, inject bool) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	files := map[string]string{
		"inventory/__init__.py": pyInventory,
		"tests/__init__.py":     "",
	}
	var a strings.Builder
	a.WriteString("import unittest\n\nfrom inventory import Item, Shelf\n\n\nclass StockTest(unittest.TestCase):\n")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&a, "\n    def test_stock_%03d(self):\n        shelf = Shelf('S%d')\n        shelf.add(Item('sku-%03d', %d, %d.%02d))\n        self.assertEqual(shelf.count('sku-%03d'), %d)\n",
			i, i%7, i, i%9+1, i%40+1, i%100, i, i%9+1)
	}
	a.WriteString("\n\nif __name__ == '__main__':\n    unittest.main()\n")
	files["tests/test_a_stock.py"] = a.String()

	// The report tests, in the middle (test_b_*) of the run.
	var b strings.Builder
	b.WriteString(pyReportTests)
	if inject {
		b.WriteString(pyReportInjected)
	}
	b.WriteString("\n\nif __name__ == '__main__':\n    unittest.main()\n")
	files["tests/test_b_report.py"] = b.String()

	var cc strings.Builder
	cc.WriteString("import unittest\n\nfrom inventory import Item, Shelf\n\n\nclass PriceTest(unittest.TestCase):\n")
	for i := 0; i < 70; i++ {
		fmt.Fprintf(&cc, "\n    def test_value_%03d(self):\n        shelf = Shelf('P')\n        shelf.add(Item('sku-%03d', %d, %d.25))\n        self.assertAlmostEqual(shelf.value(), %d * %d.25)\n",
			i, i, i%5+1, i%30, i%5+1, i%30)
	}
	cc.WriteString("\n\nif __name__ == '__main__':\n    unittest.main()\n")
	files["tests/test_c_price.py"] = cc.String()
	return writeFiles(dst, files)
}

const pyInventory = `"""A tiny inventory: items on shelves, and a text report of them."""


class Item:
    def __init__(self, sku, qty, price):
        self.sku, self.qty, self.price = sku, qty, price


class Shelf:
    def __init__(self, name):
        self.name = name
        self.items = {}

    def add(self, item):
        old = self.items.get(item.sku)
        if old is not None:
            item = Item(item.sku, old.qty + item.qty, item.price)
        self.items[item.sku] = item

    def count(self, sku):
        item = self.items.get(sku)
        return item.qty if item else 0

    def value(self):
        return sum(i.qty * i.price for i in self.items.values())


def report(shelves):
    """One line per item, shelf by shelf, and a total line per shelf."""
    lines = []
    for shelf in shelves:
        for sku in sorted(shelf.items):
            item = shelf.items[sku]
            lines.append("%-4s %-10s %5d x %8.2f = %10.2f" % (shelf.name, sku, item.qty, item.price, item.qty * item.price))
        lines.append("%-4s %-10s %30.2f" % (shelf.name, "TOTAL", shelf.value()))
    return "\n".join(lines) + "\n"


def totals(shelves):
    return {s.name: s.value() for s in shelves}
`

const pyReportTests = `import unittest

from inventory import Item, Shelf, report, totals


def stocked():
    shelves = []
    for s in "ABCDEF":
        shelf = Shelf(s)
        for i in range(24):
            shelf.add(Item("%s-%03d" % (s.lower(), i), i % 7 + 1, 1.5 + i))
        shelves.append(shelf)
    return shelves


class ReportTest(unittest.TestCase):
    maxDiff = None

    def test_report_has_a_line_per_item(self):
        self.assertEqual(len(report(stocked()).splitlines()), 6 * 25)

    def test_totals_per_shelf(self):
        self.assertEqual(sorted(totals(stocked())), list("ABCDEF"))
`

// pyReportInjected are the two injected tests: a golden report with one
// changed quantity (assertEqual shows the whole multi-line diff, maxDiff being
// None), and a lookup of a shelf that does not exist (KeyError).
const pyReportInjected = `
    def test_report_matches_golden(self):
        shelves = stocked()
        golden = report(shelves).replace("c-011          5 x", "c-011          6 x")
        self.assertEqual(report(shelves), golden)

    def test_total_of_missing_shelf(self):
        self.assertGreater(totals(stocked())["Z"], 0)
`

func unittestCase(ctx context.Context, r *run) (Case, error) {
	c := Case{Command: "python3 -m unittest -v", Dir: filepath.Join(r.dir, "unittest", "inventory")}
	if err := pyProject(c.Dir, true); err != nil {
		return c, err
	}
	if err := r.record(ctx, &c); err != nil {
		return c, err
	}
	var err error
	c.Failure, err = pick(c.Log,
		`^test_report_matches_golden \(.*\) \.\.\. FAIL$`,
		`^test_total_of_missing_shelf \(.*\) \.\.\. ERROR$`,
		`^ERROR: test_\w+`,
		`^KeyError: `,
		`^FAIL: test_\w+`,
		`^AssertionError: `)
	return c, err
}

// ---- cargo ------------------------------------------------------------------

// cargoCrate writes a crate without dependencies to dst: a ledger with 120
// unit tests and three integration test targets that cargo test
// --no-fail-fast runs in turn after them: 150 tests, then 30 of which one
// fails an assert_eq, then 150 more. The test threads finish in no fixed
// order, so the failure sits in a target of its own, between the others.
func cargoCrate(dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	var lib strings.Builder
	lib.WriteString(`//! A ledger of integer amounts.

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Ledger {
    entries: Vec<i64>,
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }
    pub fn deposit(&mut self, amount: i64) {
        self.entries.push(amount);
    }
    pub fn withdraw(&mut self, amount: i64) {
        self.entries.push(-amount);
    }
    /// A refund takes back the last entry.
    pub fn refund(&mut self) -> Option<i64> {
        self.entries.pop()
    }
    pub fn balance(&self) -> i64 {
        self.entries.iter().sum()
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
`)
	for i := 0; i < 120; i++ {
		fmt.Fprintf(&lib, "\n    #[test]\n    fn balance_%03d() {\n        let mut l = Ledger::new();\n        l.deposit(%d);\n        l.withdraw(%d);\n        assert_eq!(l.balance(), %d);\n    }\n", i, 100+i, i%50, 100+i-i%50)
	}
	lib.WriteString("}\n")

	var a, b, c strings.Builder
	a.WriteString("use ledger::Ledger;\n")
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&a, "\n#[test]\nfn entries_%03d() {\n    let mut l = Ledger::new();\n    for n in 0..%d {\n        l.deposit(n);\n    }\n    assert_eq!(l.len(), %d);\n}\n", i, i%20+1, i%20+1)
	}
	b.WriteString("use ledger::Ledger;\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, "\n#[test]\nfn refund_%03d() {\n    let mut l = Ledger::new();\n    l.deposit(%d);\n    l.withdraw(%d);\n    assert_eq!(l.refund(), Some(-%d));\n    assert_eq!(l.balance(), %d);\n}\n", i, 50+i, i, i, 50+i)
		if i == 15 {
			// contextd-injected: the refund undoes the withdrawal, but the
			// expected balance is that of before the refund.
			b.WriteString(`
#[test]
fn refund_restores_balance() {
    let mut l = Ledger::new();
    l.deposit(100);
    l.withdraw(10);
    l.refund();
    assert_eq!(l.balance(), 90, "a refund must restore the balance");
}
`)
		}
	}
	c.WriteString("use ledger::Ledger;\n")
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&c, "\n#[test]\nfn empty_after_%03d_refunds() {\n    let mut l = Ledger::new();\n    for n in 0..%d {\n        l.deposit(n);\n    }\n    for _ in 0..%d {\n        l.refund();\n    }\n    assert!(l.is_empty());\n}\n", i, i%10, i%10)
	}
	return writeFiles(dst, map[string]string{
		"Cargo.toml":          "[package]\nname = \"ledger\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
		"src/lib.rs":          lib.String(),
		"tests/a_entries.rs":  a.String(),
		"tests/b_refunds.rs":  b.String(),
		"tests/c_emptying.rs": c.String(),
		".cargo/config.toml":  "[net]\noffline = true\n",
	})
}

func cargoCase(ctx context.Context, r *run) (Case, error) {
	c := Case{Command: "cargo test --no-fail-fast", Dir: filepath.Join(r.dir, "cargo", "ledger")}
	if err := cargoCrate(c.Dir); err != nil {
		return c, err
	}
	if err := r.record(ctx, &c, "CARGO_NET_OFFLINE=true"); err != nil {
		return c, err
	}
	var err error
	c.Failure, err = pick(c.Log,
		`^test \w+ \.\.\. FAILED$`,
		`^thread '[^']*'.* panicked at `,
		`^assertion .left == right. failed`)
	return c, err
}

// ---- ci-script --------------------------------------------------------------

// ciJob is the CI job: every step's output in turn, a failing step reported
// and the job going on (set +e), failing at the end as a runner does.
const ciJob = `#!/usr/bin/env bash
# A CI job as a runner logs it: each step's output in turn; a failing step is
# reported and the next steps still run; the job fails at the end.
set +e
failed=()
step() {
  local name=$1; shift
  echo "##[group]Run $name"
  echo "+ $*"
  "$@"
  local rc=$?
  echo "##[endgroup]"
  if [ "$rc" -ne 0 ]; then
    echo "##[error]Step '$name' failed: process completed with exit code $rc."
    failed+=("$name")
  fi
}
step "toolchain" go version
step "go env" go env
step "dependencies" bash -c 'cd go && go list -deps -test ./...'
step "go vet" bash -c 'cd go && go vet ./cmd/... ./internal/... ./unstable/...'
step "npm ci" bash -c 'cd node && npm ci --no-audit --no-fund --loglevel=http'
step "npm ls" bash -c 'cd node && npm ls --all'
step "format" make fmt-check
step "unit tests (node)" bash -c 'cd node && npx mocha --reporter spec --no-color'
step "unit tests (python)" bash -c 'cd py && python3 -m unittest -v'
step "unit tests (go internal)" bash -c 'cd go && go test -count=1 -v ./internal/...'
if [ "${#failed[@]}" -gt 0 ]; then
  echo "Job failed: ${#failed[@]} step(s) failed: ${failed[*]}"
  exit 1
fi
echo "Job succeeded"
`

const ciMakefile = `# The repository's checks.
GOFILES := $(shell find go -name '*.go' -not -path '*/testdata/*')

.PHONY: fmt-check
fmt-check:
	@echo "checking the formatting of $(words $(GOFILES)) Go files"
	@unformatted=$$(gofmt -l $(GOFILES)); \
	if [ -n "$$unformatted" ]; then \
	  echo "these files are not gofmt-formatted:"; \
	  echo "$$unformatted" | sed 's/^/  /'; \
	  gofmt -d $$unformatted; \
	  exit 1; \
	fi
`

func ciScript(ctx context.Context, r *run) (Case, error) {
	root := filepath.Join(r.dir, "ci-script", "repo")
	c := Case{Command: "bash ci.sh", Dir: root}
	if err := os.RemoveAll(filepath.Dir(root)); err != nil {
		return c, err
	}
	src, err := r.goSource(ctx)
	if err != nil {
		return c, err
	}
	if err := copyTree(src, filepath.Join(root, "go"), nil); err != nil {
		return c, err
	}
	// The injected failure: a function that gofmt would lay out otherwise.
	f, err := os.OpenFile(filepath.Join(root, "go", "localtime.go"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return c, err
	}
	_, err = f.WriteString("\n// contextd-injected: not gofmt-formatted.\nfunc contextdInjected( ) int {return  1}\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return c, err
	}
	if err := r.mochaProject(ctx, filepath.Join(root, "node")); err != nil {
		return c, err
	}
	if err := pyProject(filepath.Join(root, "py"), false); err != nil {
		return c, err
	}
	if err := writeFiles(root, map[string]string{"ci.sh": ciJob, "Makefile": ciMakefile}); err != nil {
		return c, err
	}
	if err := r.record(ctx, &c); err != nil {
		return c, err
	}
	// Only the injected step may fail: another failing step means the
	// toolchain or a project changed under the job.
	if n := strings.Count(string(c.Log), "\n##[error]"); n != 1 {
		return c, fmt.Errorf("%d failing steps, want only the format step", n)
	}
	c.Failure, err = pick(c.Log,
		`^these files are not gofmt-formatted:`,
		`^make: \*\*\* \[`,
		`^##\[error\]Step 'format' failed`)
	return c, err
}

// ---- npm-install ------------------------------------------------------------

// npmPackages are the packages of a small monorepo that a bootstrap loop
// installs one after another; cli asks for a version of left-pad that the
// registry does not have.
var npmPackages = []struct{ name, deps string }{
	{"api", `"express": "4.21.2", "request": "2.88.2", "uuid": "3.4.0", "body-parser": "1.20.3"`},
	{"cli", `"commander": "12.1.0", "chalk": "4.1.2", "left-pad": "99.99.99"`},
	{"web", `"axios": "1.7.9", "react": "18.3.1", "react-dom": "18.3.1", "lodash": "4.17.21", "moment": "2.30.1", "date-fns": "2.30.0", "jquery": "3.7.1", "yargs": "17.7.2"`},
}

func npmInstall(ctx context.Context, r *run) (Case, error) {
	root := filepath.Join(r.dir, "npm-install", "monorepo")
	if err := os.RemoveAll(root); err != nil {
		return Case{}, err
	}
	files := map[string]string{}
	var names []string
	for _, p := range npmPackages {
		files["packages/"+p.name+"/package.json"] = fmt.Sprintf("{\n  \"name\": \"@monorepo/%s\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"dependencies\": { %s }\n}\n", p.name, p.deps)
		names = append(names, p.name)
	}
	if err := writeFiles(root, files); err != nil {
		return Case{}, err
	}
	c := Case{Dir: root, Command: `failed=""; for p in ` + strings.Join(names, " ") + `; do echo "==> packages/$p: npm install"; (cd "packages/$p" && npm install --no-audit --no-fund --loglevel=http) || failed="$failed $p"; done; if [ -n "$failed" ]; then echo "bootstrap failed in:$failed"; exit 1; fi`}
	if err := r.record(ctx, &c); err != nil {
		return c, err
	}
	var err error
	c.Failure, err = pick(c.Log,
		`^npm error code E[A-Z0-9]+$`,
		`^npm error notarget No matching version found for `)
	return c, err
}
