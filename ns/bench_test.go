//go:build linux

package ns_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
)

// BenchmarkStartToTrue measures, side by side in one run, the time from
// Start to the end of `true` in the sandbox (namespaces, mounts, pivot_root,
// lo, hostname, limits, capabilities, no_new_privs, seccomp, exec), fresh
// and from a warm Pool, against `unshare -Urnpfm --mount-proc true`
// (namespaces and a /proc only). Reported metrics:
//   - sandbox-ms/op: Start to Wait returning, `true` in the sandbox;
//   - setup-ms/op: Start to Ready (the part that overlaps with the daemon's
//     scope creation);
//   - pooled-ms/op, pooled-setup-ms/op: the same through Pool.Start with an
//     idle init ready (the pool is refilled between iterations, untimed:
//     this is the steady state of calls that are not back to back);
//   - pooled-b2b-ms/op: the second of two pooled calls back to back: the
//     refill for the first one starts when it ends and competes with the
//     second for CPU (the worst case short of an empty pool);
//   - unshare-ms/op: `unshare -Urnpfm --mount-proc true`;
//   - ratio: sandbox / unshare; pooled-ratio: pooled / unshare;
//     speedup: sandbox / pooled;
//   - unshare-bin-ms/op: unshare running this binary, which exits at once:
//     what starting the re-executed binary costs by itself, for reference
//     (a fresh sandbox starts it once, as the init; a pooled one did so
//     ahead of time).
func BenchmarkStartToTrue(b *testing.B) {
	ws := workspace(b)
	s := spec(b, ws, "true")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		b.Fatal(err)
	}
	pool := ns.NewPool(ns.DefaultPoolSize)
	defer pool.Close()
	warm := func() {
		if !pool.WaitIdle(ns.DefaultPoolSize, 10*time.Second) {
			b.Fatal("the pool did not fill")
		}
	}
	// Warm up all (page cache, dynamic loader).
	for range 3 {
		runTrue(b, ns.Start, s)
		warm()
		runTrue(b, pool.Start, s)
		if err := exec.Command(unshare, "-Urnpfm", "--mount-proc", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := exec.Command(unshare, "-Urnpfm", "--mount-proc", self)
	bin.Env = append(os.Environ(), "CTXD_NS_NOOP=1")
	var tNS, tSetup, tPool, tPoolSetup, tB2B, tUnshare, tBin time.Duration
	for i := 0; i < b.N; i++ {
		// Every measurement starts with the pool full and no refill
		// running, so that none is slowed down by a refill.
		warm()
		total, setup := runTrue(b, ns.Start, s)
		tNS += total
		tSetup += setup
		warm()
		total, setup = runTrue(b, pool.Start, s)
		tPool += total
		tPoolSetup += setup
		warm()
		t0 := time.Now()
		if err := exec.Command(unshare, "-Urnpfm", "--mount-proc", "true").Run(); err != nil {
			b.Fatal(err)
		}
		tUnshare += time.Since(t0)
		t0 = time.Now()
		c := exec.Command(bin.Path, bin.Args[1:]...)
		c.Env = bin.Env
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		tBin += time.Since(t0)
		// Back to back: the first call's end starts a refill, which
		// competes with the second call for CPU.
		warm()
		runTrue(b, pool.Start, s)
		total, _ = runTrue(b, pool.Start, s)
		tB2B += total
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(tNS), "sandbox-ms/op")
	b.ReportMetric(ms(tSetup), "setup-ms/op")
	b.ReportMetric(ms(tPool), "pooled-ms/op")
	b.ReportMetric(ms(tPoolSetup), "pooled-setup-ms/op")
	b.ReportMetric(ms(tB2B), "pooled-b2b-ms/op")
	b.ReportMetric(ms(tUnshare), "unshare-ms/op")
	b.ReportMetric(float64(tNS)/float64(tUnshare), "ratio")
	b.ReportMetric(float64(tPool)/float64(tUnshare), "pooled-ratio")
	b.ReportMetric(float64(tNS)/float64(tPool), "speedup")
	b.ReportMetric(ms(tBin), "unshare-bin-ms/op")
	b.ReportMetric(0, "ns/op") // the wall time of the set is not the interesting number
}

// BenchmarkSeccompPrecompile measures what compiling the seccomp profile in
// the daemon (once, cached) instead of in every init saves, with the real
// safe_bash profile. Pooled inits, so that the re-exec is not in the
// numbers; the two variants alternate. Metrics: setup (Start to Ready) and
// total (Start to the end of `true`) with the daemon-side compile (bpf-) and
// with the init compiling the profile (json-), and saved-ms/op (the
// difference in setup).
func BenchmarkSeccompPrecompile(b *testing.B) {
	profile, err := profiles.EmbeddedJSON("safe_bash")
	if err != nil {
		b.Fatal(err)
	}
	s := spec(b, workspace(b), "true")
	s.Seccomp = profile
	pool := ns.NewPool(1)
	defer pool.Close()
	prev := ns.SetPrecompile(true)
	defer ns.SetPrecompile(prev)
	one := func(precompile bool) (total, setup time.Duration) {
		ns.SetPrecompile(precompile)
		if !pool.WaitIdle(1, 10*time.Second) {
			b.Fatal("the pool did not fill")
		}
		return runTrue(b, pool.Start, s)
	}
	for range 3 {
		one(true)
		one(false)
	}
	b.ResetTimer()
	var tBPF, sBPF, tJSON, sJSON time.Duration
	for i := 0; i < b.N; i++ {
		t, st := one(true)
		tBPF += t
		sBPF += st
		t, st = one(false)
		tJSON += t
		sJSON += st
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(sBPF), "bpf-setup-ms/op")
	b.ReportMetric(ms(sJSON), "json-setup-ms/op")
	b.ReportMetric(ms(tBPF), "bpf-total-ms/op")
	b.ReportMetric(ms(tJSON), "json-total-ms/op")
	b.ReportMetric(ms(sJSON-sBPF), "saved-ms/op")
	b.ReportMetric(0, "ns/op")
}

func runTrue(b *testing.B, start func(*ns.Spec, *os.File, *os.File, *os.File) (*ns.Child, error), s *ns.Spec) (total, setup time.Duration) {
	t0 := time.Now()
	c, err := start(s, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Ready(); err != nil {
		b.Fatal(err)
	}
	setup = time.Since(t0)
	if err := c.Release(); err != nil {
		b.Fatal(err)
	}
	if code, _, err := c.Wait(); err != nil || code != 0 {
		b.Fatalf("true: %d %v", code, err)
	}
	return time.Since(t0), setup
}
