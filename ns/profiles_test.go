//go:build linux

package ns_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
)

// The sandbox runs under the real, embedded profiles: the init's last steps
// (seccomp load, then exec) must work with each of them.
func TestRealProfiles(t *testing.T) {
	ws := workspace(t)
	profile := func(tool string) []byte {
		b, err := profiles.EmbeddedJSON(tool)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("safe_bash", func(t *testing.T) {
		s := spec(t, ws, "sh", "-c", `set -e
echo hi | tr a-z A-Z
mkdir -p /tmp/d && echo data > /tmp/d/f && cat /tmp/d/f
ls / >/dev/null && ps -o comm= -p 1
grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status | tr -s '\t ' ' '
if unshare -U true 2>/dev/null; then echo unshare=allowed; else echo unshare=denied; fi`)
		s.Seccomp = profile("safe_bash")
		got := lines(mustRun(t, s))
		want := []string{"HI", "data", "sh", "CapEff: 0000000000000000", "NoNewPrivs: 1", "Seccomp: 2", "unshare=denied"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("under safe_bash:\n got %q\nwant %q", got, want)
		}
	})

	for _, tool := range profiles.Tools() {
		if tool == "safe_bash" || tool == "no_exec" {
			continue
		}
		t.Run(tool, func(t *testing.T) {
			s := toolSpec(t, ws, "argv", tool)
			s.Seccomp = profile(tool)
			if out := strings.TrimSpace(mustRun(t, s)); out != "contextd-tool argv "+tool {
				t.Errorf("tool mode under %s: %q", tool, out)
			}
		})
	}

	t.Run("no_exec", func(t *testing.T) {
		s := spec(t, ws, "true")
		s.Seccomp = profile("no_exec")
		r := run(t, s)
		var se *ns.SetupError
		if !errors.As(r.err, &se) || se.Step != ns.StepExec || !errors.Is(r.err, syscall.EPERM) {
			t.Errorf("exec under no_exec: %+v, want a setup error at exec with EPERM", r)
		}
	})
}
