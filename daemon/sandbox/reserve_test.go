package sandbox

import (
	"context"
	"testing"
	"time"
)

// A reserved sandbox (Reserve, then Run with the Spec) runs the call as a
// fresh one would: same output, same layers, its scope the one started at
// Reserve. A Spec that differs from what was reserved (another time limit:
// the scope has the old one) runs fresh, and the reservation is ended with
// its scope. One that no Run takes is ended by Cancel, scope and all. A
// runner without a pool reserves nothing.
func TestReserve(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		early := probeSpec(t, ws, "safe_bash")
		ctx := context.Background()
		if v.r.Pool == nil {
			if res := v.r.Reserve(ctx, early); res != nil {
				t.Fatal("reserved without a pool")
			}
			return
		}
		reserve := func() *reservation {
			t.Helper()
			// The pool refills in the background once no call runs.
			deadline := time.Now().Add(watchdog)
			for {
				if res, _ := v.r.Reserve(ctx, early).(*reservation); res != nil {
					return res
				}
				if time.Now().After(deadline) {
					t.Fatalf("nothing reserved: the pool did not refill within %v", watchdog)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		// unit is the scope the reservation started ("" without a user
		// manager), left in place for whoever reads it next.
		unit := func(res *reservation) string {
			got := <-res.scope
			res.scope <- got
			if got.err != nil {
				t.Fatalf("the reservation's scope: %v", got.err)
			}
			if got.sc == nil {
				return ""
			}
			return got.sc.Name()
		}

		res := reserve()
		name := unit(res)
		s := probeSpec(t, ws, "safe_bash", "args", "x", "a b")
		s.Stdin = []byte("op")
		s.Reserved = res
		out := run(t, v.r, s, true)
		if out.ex.Code != 0 || out.out != "x|a b\n" || !res.taken {
			t.Fatalf("reserved run: exit %d, output %q, taken %v", out.ex.Code, out.out, res.taken)
		}
		wantLayers(t, v, out.ex.Layers, "safe_bash", false)
		if out.ex.Layers.Scope != name {
			t.Errorf("ran in scope %q, want the reserved %q", out.ex.Layers.Scope, name)
		}
		s = probeSpec(t, ws, "safe_bash", "stdin")
		s.Stdin = []byte("the operation")
		s.Reserved = reserve()
		if out := run(t, v.r, s, true); out.out != "the operation" {
			t.Errorf("reserved run's stdin: %q", out.out)
		}

		res = reserve()
		name = unit(res)
		s = probeSpec(t, ws, "safe_bash", "args", "fresh")
		s.Timeout = watchdog + time.Second
		s.Reserved = res
		out = run(t, v.r, s, true)
		if out.ex.Code != 0 || out.out != "fresh\n" || res.taken {
			t.Fatalf("mismatched run: exit %d, output %q, taken %v", out.ex.Code, out.out, res.taken)
		}
		if name != "" {
			if out.ex.Layers.Scope == name {
				t.Errorf("a Spec with another time limit ran in the reserved scope %s", name)
			}
			waitUnitGone(t, name)
		}
		if code, _, _ := res.child.Wait(); code != 128+9 {
			t.Errorf("the unused reservation's init ended with %d, want killed (137)", code)
		}

		res = reserve()
		name = unit(res)
		res.Cancel()
		res.Cancel() // twice: no-op
		if code, _, _ := res.child.Wait(); code != 128+9 {
			t.Errorf("a cancelled reservation's init ended with %d, want killed (137)", code)
		}
		if name != "" {
			waitUnitGone(t, name)
		}
	})
}
