package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/budget"
	"github.com/contextd/contextd/daemon/store"
)

// Context folding is enforced here, on every call of a session with an open
// branch, whatever the tool: a branch's budget bounds what the responses
// inside it cost the agent, so it must hold for safe_bash's output as much as
// for the state tools'. The branch records (store.Branch) carry the figures;
// the tools branch and return only open and close them.

// warnShare is the share of a branch's budget from which responses warn.
const warnShare = 80

// branchGate looks up the session's open branches before a call. It refuses
// the call when one of them has spent its budget (except return, which closes
// it), and otherwise returns the budget the call may use: tokens, or less
// when a branch has less left. A failure to read the branches refuses the
// call: the budget is not silently lifted.
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
	if tool == "return" {
		// It may close the last one: the session's next calls look again.
		return open, tokens, nil
	}
	for _, b := range open {
		left := b.Budget - b.Used
		if left <= 0 {
			return nil, 0, fmt.Errorf("branch %s (%q) has used %d of its %d tokens in %d calls: %w",
				b.ID, b.Description, b.Used, b.Budget, b.Calls, catalog.ErrBranchBudget)
		}
		// The pipeline's smallest budget is budget.MinBudget: a branch with
		// less left may end up to that much over.
		tokens = min(tokens, max(left, budget.MinBudget))
	}
	return open, tokens, nil
}

// branchCharge adds a call's cost to every open branch of its session (an
// inner branch's responses count for the outer ones too) and returns the
// warnings of those past warnShare of their budget.
func (s *service) branchCharge(ctx context.Context, open []store.Branch, tool string, tokens int) []string {
	if len(open) == 0 || tool == "return" {
		return nil
	}
	st, err := s.stateStore(ctx)
	if err != nil {
		return nil
	}
	var warns []string
	for _, b := range open {
		for attempt := 0; ; attempt++ {
			b.Used += tokens
			b.Calls++
			err := st.PutBranch(ctx, &b)
			if err == nil || !errors.Is(err, store.ErrConflict) || attempt == 4 {
				if err != nil {
					s.opts.Logger.Error("branch figures not updated", "branch", b.ID, "err", err)
				}
				break
			}
			// Another call of the session charged it meanwhile: re-read.
			cur, gerr := st.GetBranch(ctx, b.ID, b.Session)
			if gerr != nil {
				s.opts.Logger.Error("branch figures not updated", "branch", b.ID, "err", gerr)
				break
			}
			b = *cur
		}
		if b.Used*100 >= b.Budget*warnShare {
			warns = append(warns, fmt.Sprintf("branch %s has used %d of its %d tokens (%d%%); finish and call return with a summary",
				b.ID, b.Used, b.Budget, b.Used*100/max(b.Budget, 1)))
		}
	}
	return warns
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
