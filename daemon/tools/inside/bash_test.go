package inside

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/internal/victim"
)

// Everything the shell wrote before it exited goes out, even when sending
// the first piece to the daemon takes longer than the pump's drain grace.
// (Before, the pump's reads after that stall failed on a deadline set when
// the shell exited, the rest of the output was dropped, and the exit status
// was sent as if nothing were missing.)
func TestBashSlowDaemonLosesNoOutput(t *testing.T) {
	const lines = 4000 // 4000 × 17 bytes: two pump reads and more, less than a pipe
	op := toolproto.Op{Tool: "safe_bash", Shell: "/bin/bash", Dir: t.TempDir(),
		Env:     []string{"PATH=/usr/bin:/bin"},
		Command: `for i in $(seq 1 ` + "4000" + `); do printf 'line %010d\n' $i; done`}
	in, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	out := &victim.SlowCaller{Stall: 5 * drainGrace}
	var stderr bytes.Buffer
	code := MainUnsandboxed(context.Background(), []string{"safe_bash"}, bytes.NewReader(in), out, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var text strings.Builder
	r := &toolproto.Reader{OnText: func(p []byte, _ bool) error { text.Write(p); return nil }}
	if _, err := r.Write(out.Bytes()); err != nil {
		t.Fatal(err)
	}
	meta, ok := r.Meta()
	if !ok || meta.ExitCode == nil || *meta.ExitCode != 0 {
		t.Fatalf("meta %+v (sent: %v)", meta, ok)
	}
	got := strings.Count(text.String(), "\n")
	if got != lines || !strings.HasSuffix(text.String(), "line 0000004000\n") {
		t.Fatalf("the daemon got %d of %d lines", got, lines)
	}
}
