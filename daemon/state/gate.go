package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/store"
)

// Context folding is enforced on every call of a session with an open
// branch, whatever the tool: a branch's budget bounds what the responses
// inside it cost the agent, so it must hold for safe_bash's output as much as
// for the state tools'. The branch records (store.Branch) carry the figures;
// the tools branch and return only open and close them. The daemon calls Gate
// before a call runs and Charge after it responded.

// WarnShare is the share of a branch's budget from which responses warn.
const WarnShare = 80

// Gate decides whether a call of tool may run in a session whose open
// branches are open, and with which budget: tokens, or less when a branch has
// less left. It refuses the call (catalog.ErrBranchBudget) when a branch has
// spent its budget, except return, which closes it.
func Gate(open []store.Branch, tool string, tokens int) (int, error) {
	if tool == "return" {
		return tokens, nil
	}
	for _, b := range open {
		left := b.Budget - b.Used
		if left <= 0 {
			return 0, fmt.Errorf("branch %s (%q) has used %d of its %d tokens in %d calls: %w",
				b.ID, b.Description, b.Used, b.Budget, b.Calls, catalog.ErrBranchBudget)
		}
		// The pipeline's smallest budget is budget.MinBudget: a branch with
		// less left may end up to that much over.
		tokens = min(tokens, max(left, budget.MinBudget))
	}
	return tokens, nil
}

// Charge adds a call's cost (tokens returned) to every open branch of its
// session (an inner branch's responses count for the outer ones too) and
// returns the warnings of those past WarnShare of their budget. A return is
// not charged: it closes the branch it would be charged to.
func Charge(ctx context.Context, st store.Store, open []store.Branch, tool string, tokens int, log *slog.Logger) []string {
	if len(open) == 0 || tool == "return" {
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
					log.Error("branch figures not updated", "branch", b.ID, "err", err)
				}
				break
			}
			// Another call of the session charged it meanwhile: re-read.
			cur, gerr := st.GetBranch(ctx, b.ID, b.Session)
			if gerr != nil {
				log.Error("branch figures not updated", "branch", b.ID, "err", gerr)
				break
			}
			b = *cur
		}
		if b.Used*100 >= b.Budget*WarnShare {
			warns = append(warns, fmt.Sprintf("branch %s has used %d of its %d tokens (%d%%); finish and call return with a summary",
				b.ID, b.Used, b.Budget, b.Used*100/max(b.Budget, 1)))
		}
	}
	return warns
}
