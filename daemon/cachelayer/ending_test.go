package cachelayer_test

import (
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/daemon/cachelayer"
)

// A call that comes while the previous call of its workspace is over but its
// sandbox is still being torn down (Ending, not yet unlocked) waits for the
// layers and gets them, kept, with no warning: back-to-back calls stay warm
// although the daemon answers before the kernel has unmounted the overlays.
func TestAcquireWaitsForEndingLease(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := "/home/u/project"
	first := acquire(t, m, ws, "npm")
	fill(t, filepath.Join(first.Layers[0].Upper, "kept"), 10)
	first.Ending()
	waited := false
	cachelayer.SetOnWait(m, func() {
		waited = true
		// The teardown ends while the second call waits.
		go func() {
			if err := first.Release(); err != nil {
				t.Errorf("Release: %v", err)
			}
		}()
	})
	second := acquire(t, m, ws, "npm")
	defer release(t, second)
	if !waited {
		t.Fatal("the second Acquire did not wait for the ending lease")
	}
	if second.Ephemeral || second.Warning != "" || !exists(t, filepath.Join(second.Layers[0].Upper, "kept")) {
		t.Fatalf("second lease %+v (warning %q): want the kept layers, no warning", second.Layers, second.Warning)
	}
}

// A lease whose call is still running is not waited for: the second call
// runs at once on throwaway layers, as before. And an ending lease that does
// not unlock within EndingWait is given up on the same way.
func TestAcquireDoesNotWaitForRunningLease(t *testing.T) {
	m := newManager(t, cachelayer.Options{})
	ws := "/home/u/project"
	first := acquire(t, m, ws, "npm")
	defer release(t, first)
	cachelayer.SetOnWait(m, func() { t.Error("waited for a lease whose call is running") })
	second := acquire(t, m, ws, "npm")
	release(t, second)
	if !second.Ephemeral || second.Warning != cachelayer.BusyWarning {
		t.Fatalf("second lease: ephemeral %v, warning %q; want throwaway layers and the warning", second.Ephemeral, second.Warning)
	}

	first.Ending()
	waited := false
	cachelayer.SetOnWait(m, func() { waited = true })
	third := acquire(t, m, ws, "npm")
	release(t, third)
	if !waited || !third.Ephemeral || third.Warning != cachelayer.BusyWarning {
		t.Fatalf("third lease: waited %v, ephemeral %v, warning %q; want a bounded wait, then throwaway layers", waited, third.Ephemeral, third.Warning)
	}
}
