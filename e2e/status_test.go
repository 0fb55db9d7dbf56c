//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// statusReport mirrors the parts of `contextd status --json` the test reads.
type statusReport struct {
	Daemon struct {
		State     string
		PID       int
		UptimeSec int64 `json:"uptime_sec"`
		Version   string
	}
	Today struct {
		Since           time.Time
		Sessions        int
		Calls           int
		SecretsRedacted int   `json:"secrets_redacted"`
		RawBytes        int64 `json:"raw_bytes"`
		TokensReturned  int64 `json:"tokens_returned"`
	}
	Store struct {
		Backend  string
		Location string
	}
	Sandbox []struct {
		Layer string
		OK    bool
	}
}

func contextdStatus(t *testing.T) statusReport {
	t.Helper()
	r := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "status", "--json")
	mustCode(t, r, 0)
	var s statusReport
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	return s
}

// `contextd status` reports the daemon as systemd sees it without waking
// it, today's calls and redactions from the audit log, the store and the
// sandbox layers.
func TestStatus(t *testing.T) {
	// Asleep: the socket listens, no daemon runs, and status leaves it so.
	systemctl(t, "stop", "contextd.service")
	waitFor(t, 20*time.Second, "daemon stopped", func() bool { return serviceState(t) != "active" })
	s := contextdStatus(t)
	if s.Daemon.State != "socket-waiting" || s.Daemon.PID != 0 {
		t.Fatalf("stopped daemon: %+v, want socket-waiting", s.Daemon)
	}
	if st := serviceState(t); st == "active" {
		t.Fatalf("status socket-activated the daemon")
	}

	// A call with a planted secret wakes it and is counted.
	file, secrets := plantedSecrets(t)
	writeProjectFile(t, "status-secrets.env", file)
	before := s.Today
	mustCode(t, tool(t, "safe_read", "", "status-secrets.env"), 0)
	s = contextdStatus(t)
	if !s.Today.Since.Equal(before.Since) {
		// Midnight passed between the two: "today" began again. Once more,
		// within one day.
		before = s.Today
		mustCode(t, tool(t, "safe_read", "", "status-secrets.env"), 0)
		s = contextdStatus(t)
		if !s.Today.Since.Equal(before.Since) {
			t.Fatalf("today began at %s, then at %s: two midnights in one test", before.Since, s.Today.Since)
		}
	}
	if s.Daemon.State != "active" || s.Daemon.PID != mainPID(t) || s.Daemon.Version == "" {
		t.Fatalf("running daemon: %+v, want active with MainPID %d", s.Daemon, mainPID(t))
	}
	if s.Today.Calls != before.Calls+1 || s.Today.SecretsRedacted < before.SecretsRedacted+len(secrets)/2 || s.Today.Sessions < 1 {
		t.Fatalf("today after one call with %d secrets: %+v (before %+v)", len(secrets), s.Today, before)
	}
	if s.Today.RawBytes <= before.RawBytes || s.Today.TokensReturned <= before.TokensReturned {
		t.Fatalf("raw bytes and tokens did not grow: %+v (before %+v)", s.Today, before)
	}
	if s.Store.Backend != "sqlite" || !strings.HasPrefix(s.Store.Location, env.home) {
		t.Fatalf("store: %+v", s.Store)
	}
	layers := map[string]bool{}
	for _, l := range s.Sandbox {
		layers[l.Layer] = l.OK
	}
	if len(layers) < 5 {
		t.Fatalf("sandbox layers: %+v", s.Sandbox)
	}
	for l, ok := range layers {
		if !ok && strings.Contains(l, "seccomp") {
			t.Errorf("layer %s not ok", l)
		}
	}

	// The text form says the same at a glance.
	r := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "status", "--no-sandbox-check")
	mustCode(t, r, 0)
	mustContain(t, "status", r.stdout, "daemon:   active, pid", "secret(s) redacted", "store:    sqlite at")
}
