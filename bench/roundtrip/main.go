// Command roundtrip measures the latency of a tool call through contextd against
// its baselines, side by side in one run: it cycles through `bash -c true`, the
// nearest hand-assembled sandbox (`systemd-run --user --scope bwrap ... bash -c
// true`) and `safe_bash true` through the installed symlink, rotating the order so
// all see the same machine state, and reports medians, p90s and ratios. With
// -read FILE it measures `safe_read FILE` against `cat FILE` and `true` instead.
// With -sockets A=PATH,B=PATH it measures the command its arguments name
// through each of those daemons (two configurations side by side), the first
// against the others. With -burst N it starts N calls at once (an agent's
// parallel tool calls) against as many hand-made sandboxes, for wall time and
// failures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

type stats struct {
	Name     string  `json:"name"`
	MedianNS int64   `json:"median_ns"`
	P90NS    int64   `json:"p90_ns"`
	MinNS    int64   `json:"min_ns"`
	Ratio    float64 `json:"safe_bash_over_this"` // median of safe_bash / median of this
}

type report struct {
	N        int     `json:"n"`
	Contextd stats   `json:"safe_bash_true"`
	Baseline []stats `json:"baselines"`
}

func main() {
	n := flag.Int("n", 200, "runs of each command")
	warm := flag.Int("warmup", 10, "untimed runs of each first (the first call starts the daemon)")
	tool := flag.String("safe-bash", ".claude/tools/safe_bash/safe_bash", "path of the safe_bash symlink")
	withBwrap := flag.Bool("bwrap", true, "also measure systemd-run --user --scope bwrap (needs bubblewrap and a user manager)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	read := flag.String("read", "", "instead: measure `safe_read FILE` (its first, budgeted response) against `cat FILE` and `true`")
	reader := flag.String("safe-read", ".claude/tools/safe_read/safe_read", "path of the safe_read symlink")
	burstN := flag.Int("burst", 0, "instead: start this many `safe_bash \"echo out-N\"` at once, and as many scope+bwrap sandboxes, and compare wall times and failures")
	rounds := flag.Int("rounds", 3, "with -burst: bursts of each, alternating which goes first")
	plugin := flag.String("plugin", "", "instead: measure the plugin tool whose symlink this is, called with the arguments, against `safe_bash true`")
	sockets := flag.String("sockets", "", "instead: run the command the arguments name through each daemon of NAME=SOCKET,... (CONTEXTD_SOCKET), the first against the others")
	flag.Parse()
	if *burstN > 0 {
		r := runBurst(*burstN, *rounds, *tool)
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(r)
		} else {
			printBurst(r)
		}
		return
	}

	type command struct {
		name string
		argv []string
		env  []string
	}
	cmds := []command{
		{"safe_bash true", []string{*tool, "true"}, nil},
		{"bash -c true", []string{"bash", "-c", "true"}, nil},
	}
	if *read != "" {
		cmds = cmds[:0]
		cmds = append(cmds, command{"safe_read " + *read, []string{*reader, *read}, nil},
			command{"cat " + *read, []string{"cat", *read}, nil}, command{"true", []string{"true"}, nil})
		*withBwrap = false
	}
	if *plugin != "" {
		cmds = []command{
			{"plugin " + strings.Join(append([]string{*plugin}, flag.Args()...), " "), append([]string{*plugin}, flag.Args()...), nil},
			{"safe_bash true", []string{*tool, "true"}, nil},
		}
		*withBwrap = false
	}
	if *sockets != "" {
		if flag.NArg() == 0 {
			fail(fmt.Errorf("-sockets needs the command to run as arguments"))
		}
		cmds = cmds[:0]
		for _, kv := range strings.Split(*sockets, ",") {
			name, path, ok := strings.Cut(kv, "=")
			if !ok || name == "" || path == "" {
				fail(fmt.Errorf("-sockets: %q is not NAME=SOCKET", kv))
			}
			cmds = append(cmds, command{name, flag.Args(), []string{"CONTEXTD_SOCKET=" + path}})
		}
		if len(cmds) < 2 {
			fail(fmt.Errorf("-sockets: name at least two daemons"))
		}
		*withBwrap = false
	}
	if *withBwrap {
		cmds = append(cmds, command{"systemd-run --user --scope bwrap --unshare-all ... bash -c true", []string{
			"systemd-run", "--user", "--scope", "--quiet", "--collect",
			"bwrap", "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "bash", "-c", "true"}, nil})
	}
	for i := 0; i < *warm; i++ {
		for _, c := range cmds {
			if _, err := timed(c.argv, c.env); err != nil {
				fail(err)
			}
		}
	}
	times := make([][]time.Duration, len(cmds))
	for i := 0; i < *n; i++ {
		for j := range cmds {
			k := (i + j) % len(cmds) // rotate who goes first
			d, err := timed(cmds[k].argv, cmds[k].env)
			if err != nil {
				fail(err)
			}
			times[k] = append(times[k], d)
		}
	}
	r := report{N: *n, Contextd: summarize(cmds[0].name, times[0])}
	for k := 1; k < len(cmds); k++ {
		s := summarize(cmds[k].name, times[k])
		s.Ratio = float64(r.Contextd.MedianNS) / float64(s.MedianNS)
		r.Baseline = append(r.Baseline, s)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	ms := func(ns int64) string { return fmt.Sprintf("%.2f ms", float64(ns)/1e6) }
	fmt.Printf("runs each: %d (rotated)\n", r.N)
	for _, s := range append([]stats{r.Contextd}, r.Baseline...) {
		fmt.Printf("%-70s median %s  p90 %s  min %s", s.Name, ms(s.MedianNS), ms(s.P90NS), ms(s.MinNS))
		if s.Ratio != 0 {
			fmt.Printf("  safe_bash/this %.2fx", s.Ratio)
		}
		fmt.Println()
	}
}

func timed(argv, env []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%v: %v\n%s", argv, err, out)
	}
	return d, nil
}

func summarize(name string, ds []time.Duration) stats {
	s := slices.Clone(ds)
	slices.Sort(s)
	return stats{Name: name, MedianNS: int64(s[len(s)/2]), P90NS: int64(s[len(s)*9/10]), MinNS: int64(s[0])}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "roundtrip:", err)
	os.Exit(1)
}
