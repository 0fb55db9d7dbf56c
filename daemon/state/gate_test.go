package state

import (
	"errors"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/store"
)

// The branch policy: a call gets the smaller of its budget and what the
// tightest open branch has left (never below the pipeline's minimum), a spent
// branch refuses every call but return.
func TestGate(t *testing.T) {
	br := func(budget, used int) store.Branch {
		return store.Branch{ID: "b", Description: "d", Budget: budget, Used: used}
	}
	for _, c := range []struct {
		name   string
		open   []store.Branch
		tool   string
		tokens int
		want   int
		err    error
	}{
		{"no branch", nil, "safe_bash", 2000, 2000, nil},
		{"plenty left", []store.Branch{br(8192, 100)}, "safe_bash", 2000, 2000, nil},
		{"less left than asked", []store.Branch{br(1500, 1000)}, "safe_bash", 2000, 500, nil},
		{"the tightest of nested branches", []store.Branch{br(8192, 0), br(1500, 1450), br(4000, 0)}, "safe_read", 2000, budget.MinBudget, nil},
		{"spent", []store.Branch{br(1500, 1500)}, "memory_search", 500, 0, catalog.ErrBranchBudget},
		{"overspent", []store.Branch{br(1500, 1602)}, "safe_bash", 2000, 0, catalog.ErrBranchBudget},
		{"return closes a spent branch", []store.Branch{br(1500, 1700)}, "return", 2000, 2000, nil},
	} {
		got, err := Gate(c.open, c.tool, c.tokens)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || got != c.want {
			t.Errorf("%s: Gate = %d, %v; want %d, %v", c.name, got, err, c.want, c.err)
		}
	}
}
