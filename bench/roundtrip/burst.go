package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// burstStats is one side of a burst: all its commands started at once.
type burstStats struct {
	Name     string `json:"name"`
	Calls    int    `json:"calls"`
	Failures int    `json:"failures"`
	// Wall times of each round, the median of them, in ns.
	WallNS   []int64 `json:"wall_ns"`
	MedianNS int64   `json:"median_wall_ns"`
	// A failure's first lines, to tell which kind it was.
	Example string `json:"example,omitempty"`
}

type burstReport struct {
	Calls    int        `json:"calls"`
	Rounds   int        `json:"rounds"`
	Contextd burstStats `json:"safe_bash"`
	Baseline burstStats `json:"scope_bwrap"`
	Ratio    float64    `json:"wall_ratio"` // median wall of safe_bash / of the baseline
}

// burst starts n commands at once, each printing its own line, and waits for
// them all; a command fails when it exits non-zero or its stdout is anything
// but its line. It returns the wall time from the first start to the last end.
func burst(n int, argv func(i int) []string, st *burstStats) time.Duration {
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a := argv(i)
			cmd := exec.Command(a[0], a[1:]...)
			var errOut strings.Builder
			cmd.Stderr = &errOut
			// Warnings on stderr (a cache layer held by another call of
			// the burst) are not failures; a wrong exit or output is.
			out, err := cmd.Output()
			if want := "out-" + strconv.Itoa(i) + "\n"; err != nil || string(out) != want {
				mu.Lock()
				st.Failures++
				if st.Example == "" {
					st.Example = fmt.Sprintf("call %d: %v: stdout %.200q stderr %.300q", i, err, out, errOut.String())
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return time.Since(start)
}

// runBurst measures rounds bursts of n `safe_bash "echo out-N"` through the
// symlink and as many of hand-made scope+bwrap sandboxes running the same
// line, alternating which goes first, and compares the median wall times.
func runBurst(n, rounds int, tool string) burstReport {
	rep := burstReport{Calls: n, Rounds: rounds,
		Contextd: burstStats{Name: "safe_bash \"echo out-N\""},
		Baseline: burstStats{Name: "systemd-run --user --scope bwrap --unshare-all ... bash -c \"echo out-N\""}}
	sides := []struct {
		st   *burstStats
		argv func(i int) []string
	}{
		{&rep.Contextd, func(i int) []string { return []string{tool, "echo out-" + strconv.Itoa(i)} }},
		{&rep.Baseline, func(i int) []string {
			return []string{"systemd-run", "--user", "--scope", "--quiet", "--collect",
				"bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
				"bash", "-c", "echo out-" + strconv.Itoa(i)}
		}},
	}
	for r := 0; r < rounds; r++ {
		for j := range sides {
			s := sides[(r+j)%len(sides)] // rotate who goes first
			s.st.Calls += n
			s.st.WallNS = append(s.st.WallNS, int64(burst(n, s.argv, s.st)))
		}
	}
	for _, s := range sides {
		d := make([]time.Duration, len(s.st.WallNS))
		for i, w := range s.st.WallNS {
			d[i] = time.Duration(w)
		}
		s.st.MedianNS = summarize("", d).MedianNS
	}
	rep.Ratio = float64(rep.Contextd.MedianNS) / float64(rep.Baseline.MedianNS)
	return rep
}

func printBurst(r burstReport) {
	for _, s := range []burstStats{r.Contextd, r.Baseline} {
		walls := make([]string, len(s.WallNS))
		for i, w := range s.WallNS {
			walls[i] = fmt.Sprintf("%.1fs", float64(w)/1e9)
		}
		fmt.Printf("%-80s %d calls, %d failed, wall median %.2f s (%s)\n", s.Name, s.Calls, s.Failures,
			float64(s.MedianNS)/1e9, strings.Join(walls, " "))
		if s.Example != "" {
			fmt.Printf("  e.g. %s\n", s.Example)
		}
	}
	fmt.Printf("safe_bash / scope+bwrap, median wall: %.2fx\n", r.Ratio)
}
