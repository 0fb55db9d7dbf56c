//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"testing"
)

// wrapBench is one run of bench/mcpwrap.
type wrapBench struct {
	CallUS      []float64 `json:"call_us"`
	Pipelined   int       `json:"pipelined"`
	PipelinedMS float64   `json:"pipelined_ms"`
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkWrap measures what `contextd-proxy mcp wrap` adds to a real MCP
// server (server-everything, from npm): the latency of a small tools/call
// (echo) and the throughput of small pipelined requests (ping), against the
// same server spoken to directly, in rounds that alternate the two, in one
// run, as the test user with the socket-activated daemon. Scrubbing of the
// small messages is included (it is part of every message's path); the
// target is under 1 ms added per call.
func BenchmarkWrap(b *testing.B) {
	dir, err := installWrapServers()
	if err != nil {
		b.Fatal(err)
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	direct := []string{"node", entry, "stdio"}
	wrapped := append([]string{filepath.Join(env.bin, "contextd-proxy"), "mcp", "wrap", "--name", "bench-everything", "--"}, direct...)
	run := func(cmd []string) wrapBench {
		args := append([]string{filepath.Join(env.bin, "mcpwrap"), "-calls", "200", "-pipelined", "2000", "--"}, cmd...)
		r := runAs(b, "", nil, "", args...)
		if r.code != 0 {
			b.Fatalf("mcpwrap: %s", r)
		}
		var w wrapBench
		if err := json.Unmarshal([]byte(r.stdout), &w); err != nil {
			b.Fatalf("mcpwrap output: %v\n%s", err, r)
		}
		return w
	}
	var dCalls, wCalls []float64
	var dThru, wThru []float64
	for range 3 {
		d, w := run(direct), run(wrapped)
		dCalls, wCalls = append(dCalls, d.CallUS...), append(wCalls, w.CallUS...)
		dThru = append(dThru, float64(d.Pipelined)/(d.PipelinedMS/1000))
		wThru = append(wThru, float64(w.Pipelined)/(w.PipelinedMS/1000))
	}
	dm, wm := median(dCalls), median(wCalls)
	b.ReportMetric(dm, "direct-call-us")
	b.ReportMetric(wm, "wrap-call-us")
	b.ReportMetric(wm-dm, "added-us/call")
	b.ReportMetric(median(dThru), "direct-msgs/s")
	b.ReportMetric(median(wThru), "wrap-msgs/s")
	b.Logf("tools/call echo, median of %d: direct %.0f µs, through mcp wrap %.0f µs: %.0f µs added (target < 1000)", len(dCalls), dm, wm, wm-dm)
	b.Logf("ping, pipelined: direct %.0f msgs/s, through mcp wrap %.0f msgs/s (%.2fx)", median(dThru), median(wThru), median(wThru)/median(dThru))
}
