package scrubbench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A fresh process of each tool scrubs one input from its standard input: contextd's is
// the scrubstdin command (built here, outside the timing), gitleaks' the CLI's `gitleaks
// stdin`. Both are timed from outside, start to exit, as a sandbox would see them.

// processRun is one fresh process: its wall and user CPU time, and what scrubstdin
// reports of itself (zero for the CLI).
type processRun struct {
	wall, user       time.Duration
	newDur, findDur  time.Duration
	findings, nbytes int
}

// buildScrubstdin builds the scrubstdin command into dir.
func buildScrubstdin(dir string) (string, error) {
	bin := filepath.Join(dir, "scrubstdin")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./scrubstdin")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./scrubstdin: %w: %s", err, out)
	}
	return bin, nil
}

// runProcess runs cmd with in as its standard input and stdout discarded into a file of
// dir, and times it.
func runProcess(cmd *exec.Cmd, in, dir string) (processRun, []byte, error) {
	f, err := os.Open(in)
	if err != nil {
		return processRun{}, nil, err
	}
	defer f.Close()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return processRun{}, nil, err
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, f, out, &stderr
	t := time.Now()
	err = cmd.Run()
	r := processRun{wall: time.Since(t)}
	if err != nil {
		return r, nil, fmt.Errorf("%s: %w: %s", cmd.Path, err, stderr.String())
	}
	r.user = cmd.ProcessState.UserTime()
	return r, stderr.Bytes(), nil
}

// freshContextd runs scrubstdin once on the file in.
func freshContextd(bin, in, dir string) (processRun, error) {
	r, stderr, err := runProcess(exec.Command(bin), in, dir)
	if err != nil {
		return r, err
	}
	i := bytes.Index(stderr, []byte("scrubstdin "))
	if i < 0 {
		return r, fmt.Errorf("scrubstdin: no measurement in %q", stderr)
	}
	line, _, _ := strings.Cut(string(stderr[i:]), "\n")
	vals := map[string]int64{}
	for _, f := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(f, "=")
		vals[k], _ = strconv.ParseInt(v, 10, 64)
	}
	r.newDur, r.findDur = time.Duration(vals["new_ns"]), time.Duration(vals["find_ns"])
	r.findings, r.nbytes = int(vals["findings"]), int(vals["bytes"])
	return r, nil
}

// freshCLI runs `gitleaks stdin` once on the file in, from dir (empty but for the input,
// so no .gitleaks.toml or .gitleaksignore applies), writing its JSON report to report.
func freshCLI(cli, in, dir, report string) (processRun, error) {
	cmd := exec.Command(cli, "stdin", "--no-banner", "--log-level", "error", "--report-format", "json", "--report-path", report, "--exit-code", "0")
	cmd.Env = append(os.Environ(), "GITLEAKS_CONFIG=", "GITLEAKS_CONFIG_TOML=")
	r, _, err := runProcess(cmd, in, dir)
	return r, err
}

// medianRun returns the run with the median wall time.
func medianRun(rs []processRun) processRun {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b processRun) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}
