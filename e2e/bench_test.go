//go:build e2e

package e2e

import (
	"encoding/json"
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
		var rep struct {
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
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Baselines) != 2 {
			b.Fatalf("roundtrip output: %v\n%s", err, r.stdout)
		}
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
