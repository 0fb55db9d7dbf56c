//go:build linux

package ns_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/contextd/contextd/ns"
)

// BenchmarkStartToTrue measures, side by side in one run, the time from
// Start to the end of `true` in the sandbox (namespaces, mounts, pivot_root,
// lo, hostname, limits, capabilities, no_new_privs, seccomp, exec) against
// `unshare -Urnpfm --mount-proc true` (namespaces and a /proc only).
// Reported metrics:
//   - sandbox-ms/op: Start to Wait returning, `true` in the sandbox;
//   - setup-ms/op: Start to Ready (the part that overlaps with the daemon's
//     scope creation);
//   - unshare-ms/op: `unshare -Urnpfm --mount-proc true`;
//   - ratio: sandbox / unshare;
//   - unshare-bin-ms/op: unshare running this binary, which exits at once:
//     what starting the re-executed binary costs by itself, for reference
//     (the sandbox starts it once, as the init).
func BenchmarkStartToTrue(b *testing.B) {
	ws := workspace(b)
	s := spec(b, ws, "true")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		b.Fatal(err)
	}
	// Warm up both (page cache, dynamic loader).
	for range 3 {
		runTrue(b, s)
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
	var tNS, tSetup, tUnshare, tBin time.Duration
	for i := 0; i < b.N; i++ {
		total, setup := runTrue(b, s)
		tNS += total
		tSetup += setup
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
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(tNS), "sandbox-ms/op")
	b.ReportMetric(ms(tSetup), "setup-ms/op")
	b.ReportMetric(ms(tUnshare), "unshare-ms/op")
	b.ReportMetric(float64(tNS)/float64(tUnshare), "ratio")
	b.ReportMetric(ms(tBin), "unshare-bin-ms/op")
	b.ReportMetric(0, "ns/op") // the pair's wall time is not the interesting number
}

func runTrue(b *testing.B, s *ns.Spec) (total, setup time.Duration) {
	t0 := time.Now()
	c, err := ns.Start(s, nil, nil, nil)
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
