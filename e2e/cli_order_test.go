//go:build e2e

package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// Issue 14, defect 4: safe_bash's options written after a command line given
// as one argument are safe_bash's (docs/cli.md), through the real symlink and
// the daemon; after a one-word program they stay its arguments.
func TestCLIOrder(t *testing.T) {
	const content = "line one\nline two\n"
	writeProjectFile(t, "cli-order.log", content)

	t.Run("format json after the command", func(t *testing.T) {
		for _, args := range [][]string{
			{"cat cli-order.log", "--format", "json"},
			{"--format", "json", "cat cli-order.log"},
		} {
			r := tool(t, "safe_bash", "", args...)
			mustCode(t, r, 0)
			var e envelope
			if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
				t.Fatalf("safe_bash %q: not an envelope: %v\n%s", args, err, r)
			}
			if e.Data != content || e.ExitCode == nil || *e.ExitCode != 0 {
				t.Fatalf("safe_bash %q: envelope %+v\n%s", args, e, r)
			}
		}
	})
	t.Run("timeout after the command", func(t *testing.T) {
		r := tool(t, "safe_bash", "", "cat cli-order.log", "--timeout", "300")
		mustCode(t, r, 0)
		if r.stdout != content {
			t.Fatalf("stdout %q, want %q\n%s", r.stdout, content, r)
		}
		// The limit is in force: a short one after the command kills it.
		r = tool(t, "safe_bash", "", "echo begun; sleep 60", "--timeout", "1")
		mustCode(t, r, 124)
		mustContain(t, "stderr", r.stderr, "CTXD-E030")
		if r.elapsed > 15*time.Second {
			t.Fatalf("the 1 s limit took %s", r.elapsed)
		}
	})
	t.Run("a program's own arguments stay its own", func(t *testing.T) {
		r := tool(t, "safe_bash", "", "echo", "a  b", "--format", "json")
		mustCode(t, r, 0)
		if r.stdout != "a  b --format json\n" {
			t.Fatalf("stdout %q\n%s", r.stdout, r)
		}
	})
	t.Run("a bad value after the command is a usage error", func(t *testing.T) {
		r := tool(t, "safe_bash", "", "cat cli-order.log", "--timeout", "soon")
		mustCode(t, r, 64)
		mustContain(t, "stderr", r.stderr, "CTXD-E001", "usage:")
	})
}
