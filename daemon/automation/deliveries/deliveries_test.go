package deliveries_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/automation/deliveries"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *deliveries.Store {
	t.Helper()
	s, err := deliveries.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A second Claim of an accepted id is a replay naming the first call, in
// the same store and after the file is opened again; the same id for
// another automation is another delivery.
func TestReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "hooks.db")
	s := open(t, path)
	must(t, s.Claim("ci", "d-1", t0))
	must(t, s.Started("ci", "d-1", "call-1"))
	err := s.Claim("ci", "d-1", t0.Add(time.Hour))
	var re *deliveries.ReplayError
	if !errors.Is(err, catalog.ErrHookReplay) || !errors.As(err, &re) || re.CallID != "call-1" || !re.Received.Equal(t0) {
		t.Fatalf("replay: %v", err)
	}
	must(t, s.Claim("docs", "d-1", t0))
	must(t, s.Finish("ci", "d-1", t0.Add(time.Minute), deliveries.Outcome{Exit: 2}))
	must(t, s.Close())

	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, %v", fi, err)
	}
	s = open(t, path)
	err = s.Claim("ci", "d-1", t0.Add(48*time.Hour))
	if !errors.As(err, &re) || re.CallID != "call-1" {
		t.Fatalf("replay after reopening: %v", err)
	}
	got, err := s.Recent(10)
	must(t, err)
	// Received at the same time: the later claim first.
	want := []deliveries.Delivery{
		{Automation: "docs", ID: "d-1", Received: t0},
		{Automation: "ci", ID: "d-1", Received: t0, CallID: "call-1", Finished: t0.Add(time.Minute), Outcome: deliveries.Outcome{Exit: 2}},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Recent:\n got %+v\nwant %+v", got, want)
	}
}

// A claim that started no call holds its id while it is fresh; refused
// after the claim (rate limited) it gives the id back for the sender's
// retry, and abandoned (the daemon stopped) it is taken over once stale.
func TestClaimGivenBack(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "hooks.db"))
	must(t, s.Claim("ci", "d-2", t0))
	if err := s.Claim("ci", "d-2", t0.Add(time.Second)); !errors.Is(err, catalog.ErrHookReplay) {
		t.Fatalf("a claim being received: %v", err)
	}
	must(t, s.Finish("ci", "d-2", t0.Add(time.Second), deliveries.Outcome{Code: catalog.ErrRateLimited.Code}))
	must(t, s.Claim("ci", "d-2", t0.Add(2*time.Second)))

	if err := s.Claim("ci", "d-2", t0.Add(2*time.Second+deliveries.StaleClaim-1)); !errors.Is(err, catalog.ErrHookReplay) {
		t.Fatalf("a fresh claim: %v", err)
	}
	must(t, s.Claim("ci", "d-2", t0.Add(2*time.Second+deliveries.StaleClaim)))
	must(t, s.Started("ci", "d-2", "call-2"))
	// A call that ran and failed keeps its id.
	must(t, s.Finish("ci", "d-2", t0.Add(time.Hour), deliveries.Outcome{Code: catalog.ErrTimeout.Code}))
	if err := s.Claim("ci", "d-2", t0.Add(2*time.Hour)); !errors.Is(err, catalog.ErrHookReplay) {
		t.Fatalf("a finished call's id: %v", err)
	}
	got, err := s.Recent(2)
	must(t, err)
	if len(got) != 2 || got[0].CallID != "call-2" || got[0].Code != catalog.ErrTimeout.Code || got[1].Code != catalog.ErrInternal.Code {
		t.Errorf("Recent(2) = %+v", got)
	}
	if err := s.Started("ci", "unknown", "call-3"); err == nil {
		t.Error("Started of an unclaimed delivery")
	}
}

// Refusals before the claim are history only; Prune drops what is older
// than the retention, after which an id may be claimed again.
func TestRefusedAndPrune(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "hooks.db"))
	must(t, s.Refused("ci", "forged", t0, catalog.ErrHookSignature.Code))
	must(t, s.Claim("ci", "forged", t0.Add(time.Second)))
	must(t, s.Started("ci", "forged", "call-1"))
	must(t, s.Claim("ci", "later", t0.Add(48*time.Hour)))
	n, err := s.Prune(t0.Add(24 * time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	got, err := s.Recent(10)
	if err != nil || len(got) != 1 || got[0].ID != "later" {
		t.Fatalf("after Prune: %+v, %v", got, err)
	}
	must(t, s.Claim("ci", "forged", t0.Add(49*time.Hour)))
}

// One daemon at a time: a second Open of the same file is refused.
func TestOneOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.db")
	open(t, path)
	if s, err := deliveries.Open(path); err == nil {
		s.Close()
		t.Fatal("a second Open of the record succeeded")
	}
}
