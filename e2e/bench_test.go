//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRoundTrip measures `safe_bash true` through the installed symlink (proxy,
// socket, daemon, scope, namespaces, seccomp, bash, back) against `bash -c true` run
// directly and against `systemd-run --user --scope bwrap --unshare-all ... bash -c
// true`, rotated in one run by bench/roundtrip as the test user, and reports the
// ratios of medians. Run it with `make bench`; it is not part of `make test`.
func BenchmarkRoundTrip(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := runAs(b, "", nil, "", env.bin+"/roundtrip", "-n", "200", "-json")
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
