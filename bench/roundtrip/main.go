// Command roundtrip measures the latency of a tool call through contextd against
// its baseline, side by side in one run: it alternates `bash -c true` and
// `safe_bash true` (through the installed symlink) so both see the same machine
// state, and reports medians, p90s and their ratio.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

type stats struct {
	MedianNS int64 `json:"median_ns"`
	P90NS    int64 `json:"p90_ns"`
	MinNS    int64 `json:"min_ns"`
}

type report struct {
	N        int     `json:"n"`
	Baseline stats   `json:"bash_c_true"`
	Contextd stats   `json:"safe_bash_true"`
	Ratio    float64 `json:"ratio_median"`
}

func main() {
	n := flag.Int("n", 200, "runs of each command")
	warm := flag.Int("warmup", 10, "untimed runs of each first (the first call starts the daemon)")
	tool := flag.String("safe-bash", ".claude/tools/safe_bash/safe_bash", "path of the safe_bash symlink")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()

	base := []string{"bash", "-c", "true"}
	ours := []string{*tool, "true"}
	for i := 0; i < *warm; i++ {
		if _, err := timed(base); err != nil {
			fail(err)
		}
		if _, err := timed(ours); err != nil {
			fail(err)
		}
	}
	var b, c []time.Duration
	for i := 0; i < *n; i++ {
		// Alternate the order so neither side always runs right after the other.
		first, second := base, ours
		if i%2 == 1 {
			first, second = ours, base
		}
		d1, err := timed(first)
		if err != nil {
			fail(err)
		}
		d2, err := timed(second)
		if err != nil {
			fail(err)
		}
		if i%2 == 1 {
			d1, d2 = d2, d1
		}
		b, c = append(b, d1), append(c, d2)
	}
	r := report{N: *n, Baseline: summarize(b), Contextd: summarize(c)}
	r.Ratio = float64(r.Contextd.MedianNS) / float64(r.Baseline.MedianNS)
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	ms := func(ns int64) string { return fmt.Sprintf("%.2f ms", float64(ns)/1e6) }
	fmt.Printf("runs each:        %d (interleaved)\n", r.N)
	fmt.Printf("bash -c true:     median %s  p90 %s  min %s\n", ms(r.Baseline.MedianNS), ms(r.Baseline.P90NS), ms(r.Baseline.MinNS))
	fmt.Printf("safe_bash true:   median %s  p90 %s  min %s\n", ms(r.Contextd.MedianNS), ms(r.Contextd.P90NS), ms(r.Contextd.MinNS))
	fmt.Printf("ratio (median):   %.2fx\n", r.Ratio)
}

func timed(argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%v: %v\n%s", argv, err, out)
	}
	return d, nil
}

func summarize(ds []time.Duration) stats {
	s := slices.Clone(ds)
	slices.Sort(s)
	return stats{MedianNS: int64(s[len(s)/2]), P90NS: int64(s[len(s)*9/10]), MinNS: int64(s[0])}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "roundtrip:", err)
	os.Exit(1)
}
