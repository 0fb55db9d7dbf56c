package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/automation/deliveries"
)

// runAutomations runs `contextd automations list ARGS...` through the real
// command tree.
func runAutomations(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	root := Command()
	root.SetArgs(append([]string{"automations", "list"}, args...))
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err != nil {
		t.Fatalf("automations list %s: %v", args, err)
	}
	return out.String()
}

// The list shows the configured automations and each delivery's outcome:
// a call that ran, one refused before it started a call, one still running.
func TestAutomationsList(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	dir := t.TempDir()
	secret := filepath.Join(dir, "ci.secret")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf("[[automations]]\nname = \"ci\"\nworkspace = %q\nscheme = \"github\"\nsecret_file = %q\nrate = \"3/m\"\n"+
		"tool = \"safe_bash\"\ninput = { command = \"make test\" }\n", dir, secret)
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := runAutomations(t, "--config", cfg); !strings.Contains(out, "no delivery received yet") {
		t.Errorf("before any delivery: %q", out)
	}

	s, err := deliveries.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Minute)
	steps := []error{
		s.Claim("ci", "d-ok", t0), s.Started("ci", "d-ok", "call-1"),
		s.Finish("ci", "d-ok", t0.Add(time.Second), deliveries.Outcome{Exit: 2}),
		s.Refused("ci", "d-bad", t0.Add(2*time.Second), "CTXD-E104"),
		s.Claim("ci", "d-run", t0.Add(3*time.Second)), s.Started("ci", "d-run", "call-2"),
		s.Close(),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}

	var r AutomationsReport
	if err := json.Unmarshal([]byte(runAutomations(t, "--config", cfg, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Automations) != 1 || r.Automations[0].Name != "ci" || r.Automations[0].Rate != "3/m" {
		t.Errorf("automations: %+v", r.Automations)
	}
	got := map[string]string{}
	for _, d := range r.Deliveries {
		got[d.ID] = d.outcome()
	}
	want := map[string]string{"d-ok": "done, exit 2", "d-bad": "refused CTXD-E104", "d-run": "running"}
	if fmt.Sprint(got) != fmt.Sprint(want) || r.Deliveries[0].ID != "d-run" {
		t.Errorf("deliveries: %v (newest %+v), want %v, d-run first", got, r.Deliveries[0], want)
	}
	if out := runAutomations(t, "--config", cfg); !strings.Contains(out, "refused CTXD-E104") || !strings.Contains(out, "call call-1") {
		t.Errorf("text: %q", out)
	}
}
