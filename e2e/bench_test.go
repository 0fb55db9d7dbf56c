//go:build e2e

package e2e

import (
	"encoding/json"
	"testing"
)

// BenchmarkRoundTrip measures `safe_bash true` through the installed symlink (proxy,
// socket, daemon, bash, back) against `bash -c true` run directly, interleaved in
// one run by bench/roundtrip as the test user, and reports the ratio of medians.
// Run it with `make bench`; it is not part of `make test`.
func BenchmarkRoundTrip(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := runAs(b, "", nil, "", env.bin+"/roundtrip", "-n", "300", "-json")
		if r.code != 0 {
			b.Fatalf("roundtrip: %s", r)
		}
		var rep struct {
			N        int `json:"n"`
			Baseline struct {
				MedianNS int64 `json:"median_ns"`
				P90NS    int64 `json:"p90_ns"`
			} `json:"bash_c_true"`
			Contextd struct {
				MedianNS int64 `json:"median_ns"`
				P90NS    int64 `json:"p90_ns"`
			} `json:"safe_bash_true"`
			Ratio float64 `json:"ratio_median"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			b.Fatalf("roundtrip output: %v\n%s", err, r.stdout)
		}
		b.ReportMetric(float64(rep.Baseline.MedianNS)/1e6, "bash-ms")
		b.ReportMetric(float64(rep.Contextd.MedianNS)/1e6, "safe_bash-ms")
		b.ReportMetric(rep.Ratio, "ratio")
		b.Logf("n=%d  bash -c true: median %.2f ms p90 %.2f ms  |  safe_bash true: median %.2f ms p90 %.2f ms  |  ratio %.2fx",
			rep.N, float64(rep.Baseline.MedianNS)/1e6, float64(rep.Baseline.P90NS)/1e6,
			float64(rep.Contextd.MedianNS)/1e6, float64(rep.Contextd.P90NS)/1e6, rep.Ratio)
	}
}
