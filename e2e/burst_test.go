//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// burstCalls is how many tool calls an agent's parallel burst makes at once.
const burstCalls = 200

// A burst of parallel calls, as an agent that runs its tool calls in parallel
// makes them, loses none: each of 200 concurrent `safe_bash "echo out-N"`
// through the symlinked proxy exits 0 with exactly its own line. (Under such
// a burst 2-10 failed with "the sandboxed tool's output ended early" before
// package drain: a loaded reader of the output outlasted the drain deadline.)
func TestBurstLosesNoCall(t *testing.T) {
	dir := filepath.Join(env.project, ".burst")
	r := runAs(t, "", nil, "", "bash", "-c", `set -u
d=$1; link=$2; n=$3
rm -rf "$d" && mkdir "$d"
for i in $(seq 1 "$n"); do
  ( "$link" "echo out-$i" >"$d/$i.out" 2>"$d/$i.err"; echo $? >"$d/$i.code" ) &
done
wait`, "burst", dir, filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash"), strconv.Itoa(burstCalls))
	t.Cleanup(func() { os.RemoveAll(dir) })
	mustCode(t, r, 0)
	var failed []string
	for i := 1; i <= burstCalls; i++ {
		read := func(ext string) string {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.%s", i, ext)))
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			return string(b)
		}
		code, out, errOut := strings.TrimSpace(read("code")), read("out"), read("err")
		if code != "0" || out != fmt.Sprintf("out-%d\n", i) {
			failed = append(failed, fmt.Sprintf("call %d: exit %s, stdout %q, stderr %q", i, code, out, firstLines(errOut, 2)))
		}
	}
	if len(failed) > 0 {
		var notable []string
		for _, l := range strings.Split(daemonLog(t), "\n") {
			if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") ||
				strings.Contains(l, "panic") || strings.Contains(l, "fatal") || strings.HasPrefix(l, "goroutine ") {
				notable = append(notable, l)
			}
		}
		if len(notable) > 60 {
			notable = notable[:60]
		}
		t.Fatalf("%d of %d calls of the burst failed:\n%s\nthe daemon's warnings and errors:\n%s",
			len(failed), burstCalls, strings.Join(failed, "\n"), strings.Join(notable, "\n"))
	}
}

// firstLines is at most n lines of s, for a failure message.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
