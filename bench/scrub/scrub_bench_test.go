// Package scrubbench compares contextd's scrubber (package scrub) with gitleaks on one
// multi-megabyte corpus: Go source, logs and config files with fake secrets planted in
// real formats. Like is compared with like: each tool warm in this process (rules parsed,
// regexes compiled), on one core and on all of them, and each as a fresh process reading
// the corpus on stdin. Run it with
//
//	go test ./bench/scrub -run '^$' -bench Scrub -benchtime 1x -v
package scrubbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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

// Runs per measurement. gitleaks takes seconds per pass over the corpus, so its passes
// are fewer; contextd's medians are over more, shorter runs.
const (
	warmRuns       = 11 // contextd, in process, per core count
	gitleaksRuns   = 1  // gitleaks, in process, per core count
	freshRuns      = 3  // fresh processes of each, on the corpus
	smallFreshRuns = 7  // fresh processes of each, on a typical tool output
)

// sides holds one measurement of both tools.
type sides struct{ ours, theirs time.Duration }

type comparison struct {
	corpus  *Corpus
	workers int

	// Warm, in process.
	warm1, warmAll sides
	ours           []scrub.Finding // contextd's findings (all cores)
	lib            []glFinding     // the gitleaks library's (all cores)
	libOneCore     int             // findings of the library's one-core pass
	fragments      int

	// Fresh processes on the corpus, and on a typical tool output.
	fresh, freshUser sides
	freshOurs        processRun // contextd's median run
	cli              []glFinding
	small            sides
	smallOurs        processRun
	smallSize        int

	// Recall.
	plantOurs, plantLib    int
	coveredCLI, coveredLib int
	missesCLI, missesLib   []string
	cliMatchesLib          bool
	cliVsLib               string
}

var (
	cmpOnce sync.Once
	cmpRes  *comparison
	cmpErr  error
)

// medians runs each of fs n times, in turn, so that all see the same moments of a shared
// machine, and returns the median duration of each.
func medians(n int, fs ...func()) []time.Duration {
	ds := make([][]time.Duration, len(fs))
	for i := 0; i < n; i++ {
		for k, f := range fs {
			t := time.Now()
			f()
			ds[k] = append(ds[k], time.Since(t))
		}
	}
	out := make([]time.Duration, len(fs))
	for k := range ds {
		slices.Sort(ds[k])
		out[k] = ds[k][n/2]
	}
	return out
}

func compare(cli string) (*comparison, error) {
	c := &comparison{workers: runtime.GOMAXPROCS(0)}
	var err error
	if c.corpus, err = Generate(corpusSize, 1); err != nil {
		return nil, err
	}
	text := c.corpus.Text
	dir, err := os.MkdirTemp("", "scrubbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// Warm, in process: contextd. The first Find compiles the regexes it needs.
	one, err := scrub.New(&scrub.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	all, err := scrub.New(nil)
	if err != nil {
		return nil, err
	}
	one.Find(text)
	all.Find(text)
	m := medians(warmRuns, func() { one.Find(text) }, func() { c.ours = all.Find(text) })
	c.warm1.ours, c.warmAll.ours = m[0], m[1]

	// Warm, in process: gitleaks, on its own fragments, after a pass over a few of them.
	d, err := newGitleaks()
	if err != nil {
		return nil, err
	}
	frags, err := gitleaksFragments(text)
	if err != nil {
		return nil, err
	}
	c.fragments = len(frags)
	detectFragments(d, frags[:min(len(frags), 2*c.workers)], c.workers)
	c.warm1.theirs, c.warmAll.theirs = time.Duration(1<<62), time.Duration(1<<62)
	for i := 0; i < gitleaksRuns; i++ {
		t, fs := timeGitleaks(d, frags, 1)
		c.warm1.theirs = min(c.warm1.theirs, t)
		c.libOneCore = len(fs)
		t, fs = timeGitleaks(d, frags, c.workers)
		c.warmAll.theirs = min(c.warmAll.theirs, t)
		c.lib = fromReport(fs)
	}

	// Fresh processes on the corpus, alternated so both see the same machine.
	bin, err := buildScrubstdin(dir)
	if err != nil {
		return nil, err
	}
	in := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(in, text, 0o600); err != nil {
		return nil, err
	}
	report := filepath.Join(dir, "report.json")
	var ours, theirs []processRun
	for i := 0; i < freshRuns; i++ {
		r, err := freshContextd(bin, in, dir)
		if err != nil {
			return nil, err
		}
		ours = append(ours, r)
		if r, err = freshCLI(cli, in, dir, report); err != nil {
			return nil, err
		}
		theirs = append(theirs, r)
	}
	c.freshOurs = medianRun(ours)
	c.fresh = sides{c.freshOurs.wall, medianRun(theirs).wall}
	c.freshUser = sides{c.freshOurs.user, medianRun(theirs).user}
	raw, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &c.cli); err != nil {
		return nil, fmt.Errorf("gitleaks report: %w", err)
	}

	// Fresh processes on a typical tool output: what a sandboxed call pays.
	sc, err := Generate(8<<10, 7)
	if err != nil {
		return nil, err
	}
	c.smallSize = len(sc.Text)
	smallIn := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(smallIn, sc.Text, 0o600); err != nil {
		return nil, err
	}
	ours, theirs = nil, nil
	for i := 0; i < smallFreshRuns; i++ {
		r, err := freshContextd(bin, smallIn, dir)
		if err != nil {
			return nil, err
		}
		ours = append(ours, r)
		if r, err = freshCLI(cli, smallIn, dir, filepath.Join(dir, "small.json")); err != nil {
			return nil, err
		}
		theirs = append(theirs, r)
	}
	c.smallOurs = medianRun(ours)
	c.small = sides{c.smallOurs.wall, medianRun(theirs).wall}

	c.recall()
	return c, nil
}

// recall checks what each side found: the planted secrets, and every gitleaks finding
// (the CLI's and the library's) covered by one of contextd's.
func (c *comparison) recall() {
	text := c.corpus.Text
	lines := lineStarts(text)
	overlapsOurs := func(s, e int) bool {
		for _, f := range c.ours {
			if f.Start < e && s < f.End {
				return true
			}
		}
		return false
	}
	cover := func(fs []glFinding) (covered int, misses []string, spans [][2]int) {
		for _, f := range fs {
			s, e, ok := locate(text, lines, f)
			if !ok {
				misses = append(misses, fmt.Sprintf("%s line %d: cannot locate %q", f.RuleID, f.StartLine, f.Secret))
				continue
			}
			spans = append(spans, [2]int{s, e})
			if overlapsOurs(s, e) {
				covered++
			} else {
				misses = append(misses, fmt.Sprintf("%s line %d: %q in %q", f.RuleID, f.StartLine, f.Secret, f.Match))
			}
		}
		return covered, misses, spans
	}
	var libSpans [][2]int
	c.coveredCLI, c.missesCLI, _ = cover(c.cli)
	c.coveredLib, c.missesLib, libSpans = cover(c.lib)
	for _, p := range c.corpus.Planted {
		if overlapsOurs(p.Start, p.End) {
			c.plantOurs++
		}
		for _, sp := range libSpans {
			if sp[0] < p.End && p.Start < sp[1] {
				c.plantLib++
				break
			}
		}
	}
	c.cliMatchesLib, c.cliVsLib = sameFindings(c.cli, c.lib)
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

// locate finds a gitleaks finding's secret in the text. gitleaks gives 1-based lines and
// columns of the match; the secret is searched on those lines, nearest the column. A
// secret found after decoding (base64, hex...) is not in the text: its span is the
// encoded segment the columns point at.
func locate(text []byte, lines []int, f glFinding) (int, int, bool) {
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkScrub compares contextd with gitleaks on the same corpus, in one run, like with
// like:
//
//   - warm, in process: contextd's Find against gitleaks' library detector (its default
//     rules, decoding five deep as `gitleaks stdin` does, on the CLI's ~100 kB
//     fragments), each built beforehand, on one core and on all of them (gitleaks'
//     fragments spread over as many goroutines, as it scans a directory's files);
//   - fresh process: contextd's scrubstdin against `gitleaks stdin`, each reading the
//     corpus on stdin and writing its output (the scrubbed text; the JSON report), timed
//     start to exit; and both on a typical tool output of a few tens of kilobytes.
//
// It fails if contextd misses a planted secret or any finding of gitleaks (CLI or
// library), or if the fresh process finds other than the warm Find. The timed loop is
// contextd's Find on all cores.
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
	text := c.corpus.Text
	n := len(text)

	s, err := scrub.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	s.Find(text)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Find(text)
	}
	b.StopTimer()

	planted := len(c.corpus.Planted)
	b.Logf("corpus: %d bytes (%v), %d planted secrets; GOMAXPROCS=%d", n, c.corpus.Parts, planted, c.workers)
	b.Logf("warm, in process (rules and regexes ready)      1 core MB/s  %d cores MB/s  findings  planted found", c.workers)
	b.Logf("  contextd scrub.Find (median of %d)            %10.1f %14.1f %9d %8d/%d", warmRuns, mbps(n, c.warm1.ours), mbps(n, c.warmAll.ours), len(c.ours), c.plantOurs, planted)
	b.Logf("  gitleaks detect.Detector, %d fragments (%d run) %10.2f %14.2f %9d %8d/%d", c.fragments, gitleaksRuns, mbps(n, c.warm1.theirs), mbps(n, c.warmAll.theirs), len(c.lib), c.plantLib, planted)
	b.Logf("  ratio contextd/gitleaks                       %9.1fx %13.1fx", ratio(c.warm1), ratio(c.warmAll))
	b.Logf("fresh process, the corpus on stdin (median of %d)  wall        MB/s  user CPU", freshRuns)
	b.Logf("  contextd scrubstdin                        %9.1f ms %9.2f %9.1f ms (New %.2f ms, Find %.1f ms inside)", ms(c.fresh.ours), mbps(n, c.fresh.ours), ms(c.freshUser.ours), ms(c.freshOurs.newDur), ms(c.freshOurs.findDur))
	b.Logf("  gitleaks stdin (JSON report)               %9.1f ms %9.2f %9.1f ms", ms(c.fresh.theirs), mbps(n, c.fresh.theirs), ms(c.freshUser.theirs))
	b.Logf("  ratio contextd/gitleaks                    %9.1fx", ratio(c.fresh))
	b.Logf("fresh process, %d bytes of typical output (median of %d): contextd %.1f ms (New %.2f ms, first Find %.2f ms inside), gitleaks stdin %.1f ms: %.1fx",
		c.smallSize, smallFreshRuns, ms(c.small.ours), ms(c.smallOurs.newDur), ms(c.smallOurs.findDur), ms(c.small.theirs), ratio(c.small))
	b.Logf("recall: gitleaks CLI findings covered by contextd %d/%d, library's %d/%d; CLI and library findings the same: %v; library one core/all cores: %d/%d findings",
		c.coveredCLI, len(c.cli), c.coveredLib, len(c.lib), c.cliMatchesLib, c.libOneCore, len(c.lib))
	b.Logf("contextd findings by rule: %v", byRule(c.ours))
	b.Logf("gitleaks findings by rule: %v", byRuleGL(c.lib))

	b.ReportMetric(mbps(n, c.warmAll.ours), "ctxd-MB/s")
	b.ReportMetric(mbps(n, c.warm1.ours), "ctxd-1core-MB/s")
	b.ReportMetric(mbps(n, c.warmAll.theirs), "gl-MB/s")
	b.ReportMetric(mbps(n, c.warm1.theirs), "gl-1core-MB/s")
	b.ReportMetric(ratio(c.warmAll), "warm-ratio")
	b.ReportMetric(ratio(c.warm1), "warm-1core-ratio")
	b.ReportMetric(mbps(n, c.fresh.ours), "ctxd-fresh-MB/s")
	b.ReportMetric(mbps(n, c.fresh.theirs), "gl-cli-MB/s")
	b.ReportMetric(ratio(c.fresh), "fresh-ratio")
	b.ReportMetric(ms(c.small.ours), "ctxd-small-fresh-ms")
	b.ReportMetric(ms(c.small.theirs), "gl-small-fresh-ms")
	b.ReportMetric(float64(len(c.ours)), "ctxd-findings")
	b.ReportMetric(float64(len(c.lib)), "gl-findings")
	b.ReportMetric(float64(c.plantOurs), "planted-found")
	b.ReportMetric(float64(c.coveredCLI), "gl-cli-covered")

	var fails []string
	if c.plantOurs != planted {
		fails = append(fails, fmt.Sprintf("contextd found %d of the %d planted secrets", c.plantOurs, planted))
	}
	if len(c.missesCLI) > 0 {
		fails = append(fails, fmt.Sprintf("contextd misses %d of the CLI's %d findings:\n%s", len(c.missesCLI), len(c.cli), strings.Join(c.missesCLI, "\n")))
	}
	if len(c.missesLib) > 0 {
		fails = append(fails, fmt.Sprintf("contextd misses %d of the library's %d findings:\n%s", len(c.missesLib), len(c.lib), strings.Join(c.missesLib, "\n")))
	}
	if c.freshOurs.findings != len(c.ours) {
		fails = append(fails, fmt.Sprintf("the fresh process found %d secrets, the warm Find %d", c.freshOurs.findings, len(c.ours)))
	}
	if !c.cliMatchesLib {
		fails = append(fails, "the gitleaks library in process did not find what the CLI found, so the two are not alike: "+c.cliVsLib)
	}
	if len(fails) > 0 {
		b.Fatal(strings.Join(fails, "\n"))
	}
}

func ratio(s sides) float64 { return s.theirs.Seconds() / s.ours.Seconds() }

func byRule(fs []scrub.Finding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.Rule]++
	}
	return m
}

func byRuleGL(fs []glFinding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f.RuleID]++
	}
	return m
}
