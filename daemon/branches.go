package daemon

import (
	"context"
	"fmt"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/store"
)

// branchGate looks up the session's open branches before a call and lets
// state.Gate decide (the policy lives with the branches, in daemon/state). A
// failure to read the branches refuses the call: the budget is not silently
// lifted. Most sessions never branch: those known to have no open branch
// need no store lookup (unbranched).
func (s *service) branchGate(ctx context.Context, session, tool string, tokens int) ([]store.Branch, int, error) {
	if tool == "branch" {
		// It may open one: the session's next calls look again.
		s.unbranched.forget(session)
	} else if s.unbranched.has(session) {
		return nil, tokens, nil
	}
	st, err := s.stateStore(ctx)
	if err != nil {
		// No store, so no branch can be open: nothing to enforce. The state
		// tools themselves report the store's failure.
		return nil, tokens, nil
	}
	open, err := st.OpenBranches(ctx, session)
	if err != nil {
		return nil, 0, fmt.Errorf("read the session's open branches: %v: %w", err, catalog.ErrStoreUnavailable)
	}
	if len(open) == 0 {
		if tool != "branch" {
			s.unbranched.add(session)
		}
		return nil, tokens, nil
	}
	if tokens, err = state.Gate(open, tool, tokens); err != nil {
		return nil, 0, err
	}
	return open, tokens, nil
}

// branchCharge charges a call's cost to the session's open branches
// (state.Charge) and returns their warnings.
func (s *service) branchCharge(ctx context.Context, open []store.Branch, tool string, tokens int) []string {
	if len(open) == 0 {
		return nil
	}
	st, err := s.stateStore(ctx)
	if err != nil {
		return nil
	}
	return state.Charge(ctx, st, open, tool, tokens, s.opts.Logger)
}

// sessionSet remembers the sessions known to have no open branch, so that
// their calls (most calls: few agents fold) need no store lookup. Only the
// branch tool opens a branch, and this daemon is the only one serving the
// user's sessions, so the set is exact; it is forgotten with the daemon.
type sessionSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// maxSessions bounds the set; past it, it starts over (a lookup per session
// again, nothing worse).
const maxSessions = 10000

func (ss *sessionSet) has(session string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.m[session]
	return ok
}

func (ss *sessionSet) add(session string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil || len(ss.m) >= maxSessions {
		ss.m = map[string]struct{}{}
	}
	ss.m[session] = struct{}{}
}

func (ss *sessionSet) forget(session string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, session)
}
