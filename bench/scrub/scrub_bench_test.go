package scrubbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/scrub"
)

// corpusSize is a little over DESIGN.md's measurement (4.6 MB, the CLI at 1.8 MB/s).
const corpusSize = 4600 << 10

// cliFinding is the part of a gitleaks JSON report entry the comparison needs.
type cliFinding struct {
	RuleID      string
	StartLine   int
	EndLine     int
	StartColumn int
	EndColumn   int
	Secret      string
	Match       string
	Tags        []string
}

type comparison struct {
	corpus    *Corpus
	newTime   time.Duration
	firstFind time.Duration
	oneCore   time.Duration
	allCores  time.Duration
	ours      []scrub.Finding
	cli       []cliFinding
	cliTime   time.Duration
	cliUser   time.Duration
	misses    []string
	freshNew  time.Duration
	freshFind time.Duration
	freshSize int
	covered   int
	plantOurs int
	plantCLI  int
}

var (
	cmpOnce sync.Once
	cmpRes  *comparison
	cmpErr  error
)

func gitleaksPath() (string, error) {
	if p, err := exec.LookPath("gitleaks"); err == nil {
		return p, nil
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "gitleaks")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("the gitleaks CLI is not installed (not in PATH nor in $(go env GOPATH)/bin): " +
		"install it with `go install github.com/zricethezav/gitleaks/v8@v8.30.1`")
}

// median runs f n times and returns the median duration.
func median(n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		t := time.Now()
		f()
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return ds[n/2]
}

func compare(cli string) (*comparison, error) {
	c := &comparison{}
	var err error
	if c.freshNew, c.freshFind, c.freshSize, err = freshCosts(7); err != nil {
		return nil, err
	}
	if c.corpus, err = Generate(corpusSize, 1); err != nil {
		return nil, err
	}
	text := c.corpus.Text

	// contextd: New, the first Find (compiles the regexes it needs), then warm runs on
	// one core and on all of them.
	t := time.Now()
	s, err := scrub.New(nil)
	if err != nil {
		return nil, err
	}
	c.newTime = time.Since(t)
	t = time.Now()
	s.Find(text)
	c.firstFind = time.Since(t)
	one, err := scrub.New(&scrub.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	one.Find(text)
	c.oneCore = median(5, func() { one.Find(text) })
	c.allCores = median(5, func() { c.ours = s.Find(text) })

	// The CLI on the same bytes, from an empty directory so no .gitleaks.toml or
	// .gitleaksignore applies.
	dir, err := os.MkdirTemp("", "scrubbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(in, text, 0o600); err != nil {
		return nil, err
	}
	report := filepath.Join(dir, "report.json")
	var runs []time.Duration
	for i := 0; i < 3; i++ {
		f, err := os.Open(in)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(cli, "stdin", "--no-banner", "--log-level", "error", "--report-format", "json", "--report-path", report, "--exit-code", "0")
		cmd.Dir, cmd.Stdin = dir, f
		cmd.Env = append(os.Environ(), "GITLEAKS_CONFIG=", "GITLEAKS_CONFIG_TOML=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t := time.Now()
		err = cmd.Run()
		runs = append(runs, time.Since(t))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("gitleaks stdin: %w: %s", err, stderr.String())
		}
		c.cliUser += cmd.ProcessState.UserTime()
	}
	c.cliUser /= 3
	slices.Sort(runs)
	c.cliTime = runs[1]
	raw, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &c.cli); err != nil {
		return nil, fmt.Errorf("gitleaks report: %w", err)
	}

	// Coverage: a CLI finding is covered when one of ours overlaps its secret.
	lines := lineStarts(text)
	overlapsOurs := func(s, e int) bool {
		for _, f := range c.ours {
			if f.Start < e && s < f.End {
				return true
			}
		}
		return false
	}
	var cliSpans [][2]int
	for _, f := range c.cli {
		s, e, ok := locate(text, lines, f)
		if !ok {
			c.misses = append(c.misses, fmt.Sprintf("%s line %d: cannot locate %q", f.RuleID, f.StartLine, f.Secret))
			continue
		}
		cliSpans = append(cliSpans, [2]int{s, e})
		if overlapsOurs(s, e) {
			c.covered++
		} else {
			c.misses = append(c.misses, fmt.Sprintf("%s line %d: %q in %q", f.RuleID, f.StartLine, f.Secret, f.Match))
		}
	}
	for _, p := range c.corpus.Planted {
		if overlapsOurs(p.Start, p.End) {
			c.plantOurs++
		}
		for _, sp := range cliSpans {
			if sp[0] < p.End && p.Start < sp[1] {
				c.plantCLI++
				break
			}
		}
	}
	return c, nil
}

func lineStarts(b []byte) []int {
	ls := []int{0}
	for i, c := range b {
		if c == '\n' {
			ls = append(ls, i+1)
		}
	}
	return ls
}

// locate finds a CLI finding's secret in the text. The report gives 1-based lines and
// columns of the match; the secret is searched on those lines, nearest the column. A
// secret found after decoding (base64, hex...) is not in the text: its span is the
// encoded segment the columns point at.
func locate(text []byte, lines []int, f cliFinding) (int, int, bool) {
	if f.StartLine < 1 || f.StartLine > len(lines) {
		return 0, 0, false
	}
	ls := lines[f.StartLine-1]
	le := len(text)
	if f.EndLine < len(lines) {
		le = lines[f.EndLine]
	}
	for _, t := range f.Tags {
		if strings.HasPrefix(t, "decoded:") {
			s := min(le, ls+max(0, f.StartColumn-2))
			e := len(text)
			if f.EndLine >= 1 && f.EndLine <= len(lines) {
				e = min(len(text), lines[f.EndLine-1]+f.EndColumn)
			}
			return s, max(s+1, e), true
		}
	}
	if f.Secret == "" {
		return 0, 0, false
	}
	want := ls + max(0, f.StartColumn-2)
	best, bestDist := -1, 0
	region := text[ls:le]
	for off := 0; ; {
		i := bytes.Index(region[off:], []byte(f.Secret))
		if i < 0 {
			break
		}
		p := ls + off + i
		if d := max(p-want, want-p); best < 0 || d < bestDist {
			best, bestDist = p, d
		}
		off += i + 1
	}
	if best < 0 {
		return 0, 0, false
	}
	return best, best + len(f.Secret), true
}

func mbps(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

// BenchmarkScrub compares contextd's Find with `gitleaks stdin` on the same corpus, in
// one run: throughput of each, their ratio, findings of each, and whether contextd
// covers every finding of the CLI (it fails if not). The timed loop is contextd's Find.
func BenchmarkScrub(b *testing.B) {
	cli, err := gitleaksPath()
	if err != nil {
		b.Fatal(err)
	}
	cmpOnce.Do(func() { cmpRes, cmpErr = compare(cli) })
	if cmpErr != nil {
		b.Fatal(cmpErr)
	}
	c := cmpRes
	n := len(c.corpus.Text)

	s, err := scrub.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	s.Find(c.corpus.Text)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Find(c.corpus.Text)
	}
	b.StopTimer()

	ours := mbps(n, c.allCores)
	theirs := mbps(n, c.cliTime)
	rules := map[string]int{}
	for _, f := range c.ours {
		rules[f.Rule]++
	}
	cliRules := map[string]int{}
	for _, f := range c.cli {
		cliRules[f.RuleID]++
	}
	b.Logf("corpus: %d bytes (%v), %d planted secrets, GOMAXPROCS=%d", n, c.corpus.Parts, len(c.corpus.Planted), runtime.GOMAXPROCS(0))
	b.Logf("%-34s %12s %10s %9s", "", "MB/s", "findings", "planted")
	b.Logf("%-34s %12.1f %10d %6d/%d", "contextd Find, all cores", ours, len(c.ours), c.plantOurs, len(c.corpus.Planted))
	b.Logf("%-34s %12.1f %10s", "contextd Find, one core", mbps(n, c.oneCore), "")
	b.Logf("%-34s %12.1f %10d %6d/%d", "gitleaks stdin (wall, median of 3)", theirs, len(c.cli), c.plantCLI, len(c.corpus.Planted))
	b.Logf("ratio contextd/CLI: %.1fx (one core: %.1fx); CLI user CPU %v per run", ours/theirs, mbps(n, c.oneCore)/theirs, c.cliUser.Round(time.Millisecond))
	b.Logf("contextd New(nil) in a fresh process: %v (median of 7); its first Find on %d bytes of typical output: %v",
		c.freshNew.Round(time.Microsecond), c.freshSize, c.freshFind.Round(time.Microsecond))
	b.Logf("contextd New(nil) here: %v; first Find on the corpus (compiles the regexes it needs): %v (%.1f MB/s)",
		c.newTime.Round(time.Microsecond), c.firstFind.Round(time.Millisecond), mbps(n, c.firstFind))
	b.Logf("CLI findings covered by contextd: %d/%d", c.covered, len(c.cli))
	b.Logf("contextd findings by rule: %v", rules)
	b.Logf("CLI findings by rule: %v", cliRules)
	b.ReportMetric(ours, "contextd-MB/s")
	b.ReportMetric(mbps(n, c.oneCore), "contextd-1core-MB/s")
	b.ReportMetric(theirs, "cli-MB/s")
	b.ReportMetric(ours/theirs, "ratio")
	b.ReportMetric(float64(len(c.ours)), "contextd-findings")
	b.ReportMetric(float64(len(c.cli)), "cli-findings")
	b.ReportMetric(float64(c.covered), "cli-covered")
	b.ReportMetric(float64(c.freshNew.Microseconds())/1000, "new-ms")
	b.ReportMetric(float64(c.freshFind.Microseconds())/1000, "fresh-first-find-ms")
	b.ReportMetric(float64(c.firstFind.Microseconds())/1000, "first-find-ms")
	if len(c.misses) > 0 {
		b.Fatalf("contextd misses %d of the CLI's %d findings:\n%s", len(c.misses), len(c.cli), strings.Join(c.misses, "\n"))
	}
}
