//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkSalience10MB measures the whole pipeline on a 10 MB `go test -v`
// log with one failure in its middle, with and without the salience pass,
// side by side in one run: two daemons of the test user, alike but for
// `[salience] enabled`, each a transient unit of its user manager with its
// own socket, and bench/roundtrip rotating `safe_bash 'cat LOG'` and then
// `safe_read LOG` between them (CONTEXTD_SOCKET). A call goes through the
// proxy, the sandbox (whose own scrub streams the output), the daemon's
// pipeline and back; the first response is cut to the default 2,000 tokens.
// Issue 18's target: the pass costs at most 10% more.
func BenchmarkSalience10MB(b *testing.B) {
	var log strings.Builder
	for i := 0; log.Len() < 10<<20; i++ {
		fmt.Fprintf(&log, "=== RUN   TestDecode/case_%d\n    decode_test.go:%d: input %d decoded in %d steps\n--- PASS: TestDecode/case_%d (0.00s)\n", i, 40+i%60, i, i%17, i)
		if i == 40000 {
			log.WriteString("=== RUN   TestDecode/overflow\n    decode_test.go:88: Decode(\"9e999\") = 0, want an error\n--- FAIL: TestDecode/overflow (0.00s)\n")
		}
	}
	log.WriteString("--- FAIL: TestDecode (4.21s)\nFAIL\nFAIL\texample.com/decode\t4.377s\nFAIL\n")
	name := "salience-" + devTag(6) + ".log"
	p := filepath.Join(env.project, name)
	if err := os.WriteFile(p, []byte(log.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chown(p, env.uid, env.uid)
	b.Cleanup(func() { os.Remove(p) })

	socks := map[string]string{}
	for _, on := range []bool{true, false} {
		unit := fmt.Sprintf("contextd-bench-salience-%t", on)
		cfg := filepath.Join(env.home, ".config", "contextd", unit+".toml")
		sock := filepath.Join(env.runtime, unit+".sock")
		socks[fmt.Sprint(on)] = sock
		mustCode(b, userSh(b, fmt.Sprintf("printf 'idle_timeout = \"10m\"\\n[salience]\\nenabled = %t\\n' > %s && rm -f %s && "+
			"systemd-run --user --quiet --collect --unit=%s -p StandardOutput=append:$XDG_RUNTIME_DIR/%s.log %s/contextd serve --socket %s --config %s",
			on, cfg, sock, unit, unit, env.bin, sock, cfg)), 0)
		b.Cleanup(func() {
			systemctl(b, "stop", unit+".service")
			os.Remove(cfg)
		})
		waitFor(b, 30*time.Second, unit+"'s socket", func() bool { _, err := os.Stat(sock); return err == nil })
	}
	// The two differ as they should: the failure is on the first page with
	// the pass and not without it.
	for on, sock := range socks {
		r := runAs(b, "", []string{"CONTEXTD_SOCKET=" + sock}, "", ".claude/tools/safe_bash/safe_bash", "cat "+name)
		if r.code != 0 || !strings.Contains(r.stdout, "--continue") {
			b.Fatalf("salience %s: safe_bash cat was not cut to its budget: %s", on, r)
		}
		if shows := strings.Contains(r.stdout, "--- FAIL: TestDecode/overflow"); shows != (on == "true") {
			b.Fatalf("salience %s: the first page shows the failure: %t\n%s", on, shows, r.stdout)
		}
	}
	const runs = 60
	pair := "salience=" + socks["true"] + ",head-tail=" + socks["false"]
	for b.Loop() {
		for _, c := range []struct {
			what string
			argv []string
		}{
			{"safe_bash 'cat LOG'", []string{".claude/tools/safe_bash/safe_bash", "cat " + name}},
			{"safe_read LOG", []string{".claude/tools/safe_read/safe_read", name}},
		} {
			args := append([]string{env.bin + "/roundtrip", "-n", fmt.Sprint(runs), "-warmup", "3", "-json", "-sockets", pair}, c.argv...)
			r := runAs(b, "", nil, "", args...)
			if r.code != 0 {
				b.Fatalf("roundtrip %s: %s", c.what, r)
			}
			rep := readRoundtrip(b, r.stdout, 1) // Contextd: the daemon with the pass
			off := rep.Baselines[0]
			key := strings.Fields(c.what)[0]
			b.ReportMetric(float64(rep.Contextd.MedianNS)/1e6, key+"-salience-ms")
			b.ReportMetric(float64(off.MedianNS)/1e6, key+"-head-tail-ms")
			b.ReportMetric(off.Ratio, key+"-ratio")
			b.Logf("%s, 10 MB, median of %d rotated: with the salience pass %.1f ms (p90 %.1f), head and tail %.1f ms (p90 %.1f): %.3fx",
				c.what, runs, float64(rep.Contextd.MedianNS)/1e6, float64(rep.Contextd.P90NS)/1e6, float64(off.MedianNS)/1e6, float64(off.P90NS)/1e6, off.Ratio)
		}
	}
}
