//go:build e2e

package e2e

import (
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkPluginRoundTrip measures a warm plugin tool's call (smoke, the
// Go example, installed from git and built in its sandbox) through its
// symlink against `safe_bash true`, rotated in one run by bench/roundtrip
// as the test user, and reports the ratio of medians; the target is 0.5 or
// less, since a warm call needs no new sandbox. It also measures the cold
// start: the first call after the instance stopped (idle_stop 2s, each
// cold call made after 3 s without one).
func BenchmarkPluginRoundTrip(b *testing.B) {
	withConfig(b, "[plugins]\nidle_stop = \"2s\"\nfetch_max_bytes = \"64MiB\"")
	dir := benchProject(b)
	contextd := filepath.Join(env.bin, "contextd")
	src := gitSmoke(b)
	b.Cleanup(func() {
		runAs(b, env.home, nil, "", contextd, "tool", "remove", "smoke")
		userSh(b, "rm -rf ~/src-smoke ~/.local/share/contextd/tools")
	})
	if r := runAs(b, env.home, nil, "", contextd, "tool", "install", "git::file://"+src+"?ref=v1", "--yes"); r.code != 0 {
		b.Fatalf("install smoke: %s", r)
	}
	if r := runAs(b, dir, nil, "", env.bin+"/contextd-proxy", "install", "--agent", "none"); r.code != 0 {
		b.Fatalf("proxy install: %s", r)
	}
	link := filepath.Join(dir, ".claude", "tools", "smoke", "smoke")
	for i := 0; i < b.N; i++ {
		r := runAs(b, dir, nil, "", env.bin+"/roundtrip", "-n", "200", "-json", "-plugin", link, "--", "--text", "x")
		if r.code != 0 {
			b.Fatalf("roundtrip -plugin: %s", r)
		}
		rep := readRoundtrip(b, r.stdout, 1)
		sb := rep.Baselines[0]
		b.ReportMetric(float64(rep.Contextd.MedianNS)/1e6, "plugin-warm-ms")
		b.ReportMetric(float64(sb.MedianNS)/1e6, "safe_bash-ms")
		b.ReportMetric(sb.Ratio, "ratio-plugin-vs-safe_bash")
		b.Logf("n=%d warm plugin call: median %.2f ms p90 %.2f ms; safe_bash true: median %.2f ms (plugin/safe_bash %.2fx)",
			rep.N, float64(rep.Contextd.MedianNS)/1e6, float64(rep.Contextd.P90NS)/1e6, float64(sb.MedianNS)/1e6, sb.Ratio)
	}
	cold := coldStarts(b, dir, link, 8)
	b.ReportMetric(float64(cold)/1e6, "plugin-cold-ms")
	b.Logf("cold start (first call after idle_stop): median %.1f ms", float64(cold)/1e6)
}

// coldStarts times n calls each made after the instance stopped, and
// returns their median.
func coldStarts(b *testing.B, dir, link string, n int) time.Duration {
	b.Helper()
	var ds []time.Duration
	for i := 0; i < n; i++ {
		time.Sleep(3 * time.Second) // idle_stop is 2s: the instance is gone
		r := runAs(b, dir, nil, "", "bash", "-c", `s=$(date +%s%N); "$0" --text x >/dev/null || exit 1; e=$(date +%s%N); echo $((e-s))`, link)
		if r.code != 0 {
			b.Fatalf("cold call: %s", r)
		}
		var ns int64
		for _, c := range r.stdout {
			if c >= '0' && c <= '9' {
				ns = ns*10 + int64(c-'0')
			}
		}
		ds = append(ds, time.Duration(ns))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
