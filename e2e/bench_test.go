//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRoundTrip measures `safe_bash true` through the installed symlink (proxy,
// socket, daemon, scope, namespaces, seccomp, bash, back) against `bash -c true` run
// directly and against `systemd-run --user --scope bwrap --unshare-all ... bash -c
// true`, rotated in one run by bench/roundtrip as the test user, and reports the
// ratios of medians. Run it with `make bench`; it is not part of `make test`.
//
// The project is one as a developer has it, with everything on: a git
// repository with history and a hooks path, a Node package and a Go module
// (their presets, caches and registries), the user's ~/.npmrc with a token and
// ~/.gitconfig (scrubbed copies and placeholders), the default egress proxy.
func BenchmarkRoundTrip(b *testing.B) {
	dir := benchProject(b)
	for i := 0; i < b.N; i++ {
		r := runAs(b, dir, nil, "", env.bin+"/roundtrip", "-n", "200", "-json")
		if r.code != 0 {
			b.Fatalf("roundtrip: %s", r)
		}
		rep := readRoundtrip(b, r.stdout, 2)
		bash, bwrap := rep.Baselines[0], rep.Baselines[1]
		b.ReportMetric(float64(rep.Contextd.MedianNS)/1e6, "safe_bash-ms")
		b.ReportMetric(float64(bash.MedianNS)/1e6, "bash-ms")
		b.ReportMetric(float64(bwrap.MedianNS)/1e6, "scope+bwrap-ms")
		b.ReportMetric(bash.Ratio, "ratio-vs-bash")
		b.ReportMetric(bwrap.Ratio, "ratio-vs-scope+bwrap")
		b.Logf("n=%d  safe_bash true: median %.2f ms p90 %.2f ms", rep.N, float64(rep.Contextd.MedianNS)/1e6, float64(rep.Contextd.P90NS)/1e6)
		for _, s := range rep.Baselines {
			b.Logf("  %s: median %.2f ms p90 %.2f ms  (safe_bash/this %.2fx)", s.Name, float64(s.MedianNS)/1e6, float64(s.P90NS)/1e6, s.Ratio)
		}
	}
}

// BenchmarkBurst starts 200 `safe_bash "echo out-N"` at once, as an agent
// that runs its tool calls in parallel does, and as many hand-made
// scope+bwrap sandboxes, three bursts of each alternating, in the project of
// BenchmarkRoundTrip; it reports the median wall times, their ratio and the
// failures of each side (a failure is a non-zero exit or any output but the
// call's own line).
func BenchmarkBurst(b *testing.B) {
	dir := benchProject(b)
	for i := 0; i < b.N; i++ {
		r := runAs(b, dir, nil, "", env.bin+"/roundtrip", "-burst", strconv.Itoa(burstCalls), "-rounds", "3", "-json")
		if r.code != 0 {
			b.Fatalf("roundtrip -burst: %s", r)
		}
		var rep struct {
			Calls    int       `json:"calls"`
			Contextd burstSide `json:"safe_bash"`
			Baseline burstSide `json:"scope_bwrap"`
			Ratio    float64   `json:"wall_ratio"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			b.Fatalf("roundtrip -burst output: %v\n%s", err, r.stdout)
		}
		b.ReportMetric(float64(rep.Contextd.MedianNS)/1e9, "safe_bash-wall-s")
		b.ReportMetric(float64(rep.Baseline.MedianNS)/1e9, "scope+bwrap-wall-s")
		b.ReportMetric(rep.Ratio, "wall-ratio")
		b.ReportMetric(float64(rep.Contextd.Failures), "safe_bash-failed")
		b.ReportMetric(float64(rep.Baseline.Failures), "scope+bwrap-failed")
		b.Logf("burst of %d, 3 rounds each: safe_bash wall median %.2f s %v, %d failed %s",
			rep.Calls, float64(rep.Contextd.MedianNS)/1e9, rep.Contextd.WallNS, rep.Contextd.Failures, rep.Contextd.Example)
		b.Logf("  scope+bwrap wall median %.2f s %v, %d failed %s (safe_bash/this %.2fx)",
			float64(rep.Baseline.MedianNS)/1e9, rep.Baseline.WallNS, rep.Baseline.Failures, rep.Baseline.Example, rep.Ratio)
		if rep.Contextd.Failures > 0 {
			b.Errorf("%d calls of the burst failed: %s", rep.Contextd.Failures, rep.Contextd.Example)
		}
	}
}

// burstSide is one side of bench/roundtrip's -burst report.
type burstSide struct {
	Failures int     `json:"failures"`
	MedianNS int64   `json:"median_wall_ns"`
	WallNS   []int64 `json:"wall_ns"`
	Example  string  `json:"example"`
}

// benchProject makes, once per run, the project the latency benchmarks call
// in (BenchmarkRoundTrip), with the tools installed, and the user's files a
// developer has: it returns its directory.
func benchProject(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(env.home, "proj-bench")
	script := `set -e
rm -rf ` + dir + ` && mkdir -p ` + dir + ` && cd ` + dir + `
git init -q && git config user.email bench@test && git config user.name bench
git config core.hooksPath .githooks
printf '{"name":"bench","version":"1.0.0","scripts":{"test":"true"}}\n' > package.json
printf 'module example.com/bench\n\ngo 1.22\n' > go.mod
mkdir -p src && for i in $(seq 1 50); do echo "line $i" > src/f$i.txt; done
git add -A && git commit -qm one && echo two >> src/f1.txt && git commit -qam two
[ -e ~/.npmrc ] || printf '//registry.npmjs.org/:_authToken=npm_%s\n' 0123456789abcdefghijABCDEFGHIJ012345 > ~/.npmrc.bench
[ -e ~/.npmrc ] || mv ~/.npmrc.bench ~/.npmrc
` + env.bin + `/contextd-proxy install --agent none >/dev/null`
	if r := userSh(b, script); r.code != 0 {
		b.Fatalf("bench project: %s", r)
	}
	// The token is the bench's own (an earlier ~/.npmrc is left as it was).
	b.Cleanup(func() {
		userSh(b, "grep -q 0123456789abcdefghijABCDEFGHIJ012345 ~/.npmrc 2>/dev/null && rm -f ~/.npmrc; rm -rf "+dir)
	})
	return dir
}

// BenchmarkSafeRead10MB measures `safe_read` of a 10 MB file end to end through
// the installed symlink (the first response: head, marker, tail, within the
// budget), side by side with `cat` of the same file and with `true` (what
// starting any command costs here), rotated in one run by bench/roundtrip as
// the test user. The target: under 100 ms.
func BenchmarkSafeRead10MB(b *testing.B) {
	var big strings.Builder
	for i := 0; big.Len() < 10<<20; i++ {
		fmt.Fprintf(&big, "%08d the quick brown fox jumps over the lazy dog; status=ok latency_ms=%d\n", i, i%997)
	}
	p := filepath.Join(env.project, "big.txt")
	if err := os.WriteFile(p, []byte(big.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chown(p, env.uid, env.uid)
	// The response is cut to the budget (a marker line names --continue).
	first := tool(b, "safe_read", "", "big.txt")
	if first.code != 0 || !strings.Contains(first.stdout, "--continue") || len(first.stdout) > 200<<10 {
		b.Fatalf("safe_read of 10 MB was not cut to the budget: exit %d, %d bytes", first.code, len(first.stdout))
	}
	for i := 0; i < b.N; i++ {
		r := runAs(b, "", nil, "", env.bin+"/roundtrip", "-n", "40", "-warmup", "3", "-read", "big.txt", "-json")
		if r.code != 0 {
			b.Fatalf("roundtrip -read: %s", r)
		}
		rep := readRoundtrip(b, r.stdout, 2) // Contextd: safe_read here
		sr, ct, tr := float64(rep.Contextd.MedianNS)/1e6, float64(rep.Baselines[0].MedianNS)/1e6, float64(rep.Baselines[1].MedianNS)/1e6
		b.ReportMetric(sr, "safe_read-ms")
		b.ReportMetric(ct, "cat-ms")
		b.ReportMetric(tr, "true-ms")
		b.ReportMetric(rep.Baselines[0].Ratio, "ratio-vs-cat")
		b.Logf("10 MB file, median of 40 rotated: safe_read %.1f ms (p90 %.1f), cat %.1f ms (%.2fx), true %.1f ms",
			sr, float64(rep.Contextd.P90NS)/1e6, ct, rep.Baselines[0].Ratio, tr)
	}
}

// roundtripReport is bench/roundtrip's -json report: the measured command
// (named safe_bash_true whatever it is) and its baselines.
type roundtripReport struct {
	N        int `json:"n"`
	Contextd struct {
		MedianNS int64 `json:"median_ns"`
		P90NS    int64 `json:"p90_ns"`
	} `json:"safe_bash_true"`
	Baselines []struct {
		Name     string  `json:"name"`
		MedianNS int64   `json:"median_ns"`
		P90NS    int64   `json:"p90_ns"`
		Ratio    float64 `json:"safe_bash_over_this"`
	} `json:"baselines"`
}

// readRoundtrip decodes a report that must have baselines baselines.
func readRoundtrip(b *testing.B, out string, baselines int) roundtripReport {
	b.Helper()
	var rep roundtripReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Baselines) != baselines {
		b.Fatalf("roundtrip output: %v\n%s", err, out)
	}
	return rep
}
