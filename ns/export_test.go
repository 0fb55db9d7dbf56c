//go:build linux

package ns

import "time"

// Test-only access to the pool's internals.

// Pooled says whether c came from a Pool's idle inits.
func Pooled(c *Child) bool { return c.pooled }

// WaitIdle waits until p holds at least n idle inits that are up (parked),
// and says whether that happened within timeout.
func (p *Pool) WaitIdle(n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if p.parked() >= n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (p *Pool) parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.idle {
		select {
		case <-e.c.parkedc:
			n++
		default:
		}
	}
	return n
}

// IdlePids lists the pids of p's idle inits.
func (p *Pool) IdlePids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, e := range p.idle {
		out = append(out, e.c.Pid())
	}
	return out
}

// SetPrecompile turns the daemon-side seccomp compile on or off and returns
// the previous setting.
func SetPrecompile(on bool) bool { return precompileOn.Swap(on) }

// ForgetMountChanges consumes a pending mount-table change without marking
// the idle inits stale, so that a test can exercise the workspace check on
// its own.
func (p *Pool) ForgetMountChanges() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mountsChangedLocked()
}
