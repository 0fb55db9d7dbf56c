package state

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/toolcall"
)

// Limits of branches.
const (
	// MaxDepth is how deep branches nest (catalog.ErrBranchDepth).
	MaxDepth = 3
	// MinBranchBudget and MaxBranchBudget bound a budget the caller gives.
	MinBranchBudget = 100
	MaxBranchBudget = 1 << 20
	// MaxBranchDescription is in characters.
	MaxBranchDescription = 1000
	// closedWithParent is the summary of a branch closed by its parent's return.
	closedWithParent = "(closed with its parent)"
)

// ---- branch

// Branch opens a fold of the session's context with a token budget
// (toolspec/branch).
type Branch struct{ Config *Config }

// Name implements toolcall.Tool.
func (Branch) Name() string { return "branch" }

// BranchInput is branch's input.
type BranchInput struct {
	Description string `json:"description"`
	Budget      *int   `json:"budget,omitempty"`
}

// Decode implements toolcall.Tool.
func (t Branch) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "branch"
	var in BranchInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	if err := shortText(tool, "description", in.Description, MaxBranchDescription, "say what the branch is for"); err != nil {
		return nil, err
	}
	if in.Budget != nil && (*in.Budget < MinBranchBudget || *in.Budget > MaxBranchBudget) {
		return nil, badInput(tool, "budget must be %d to %d tokens", MinBranchBudget, MaxBranchBudget)
	}
	return &branchCall{in: in, cfg: t.Config}, nil
}

type branchCall struct {
	in  BranchInput
	cfg *Config
}

func (c *branchCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "branch"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	if env.Session == "" {
		return toolcall.Outcome{Err: badInput(tool, "branches belong to a session and this call has none (set CONTEXTD_SESSION)")}
	}
	open, err := st.OpenBranches(ctx, env.Session)
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "read the open branches", err)}
	}
	b := store.Branch{
		Session:     env.Session,
		Project:     root,
		Depth:       1,
		Description: scrubbed(env, strings.TrimSpace(c.in.Description)),
		Budget:      c.cfg.branchBudget(),
		Open:        true,
		Created:     time.Now().UTC(),
	}
	if c.in.Budget != nil {
		b.Budget = *c.in.Budget
	}
	if p := innermost(open); p != nil {
		if p.Depth >= MaxDepth {
			return toolcall.Outcome{Err: fmt.Errorf("%s: %d branches are open, the innermost is %s (depth %d): %w",
				tool, len(open), p.ID, p.Depth, catalog.ErrBranchDepth)}
		}
		b.Parent, b.Depth = p.ID, p.Depth+1
	}
	if err := st.PutBranch(ctx, &b); err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "open the branch", err)}
	}
	inside := ""
	if b.Parent != "" {
		inside = ", inside " + b.Parent
	}
	_, err = fmt.Fprintf(env.Out, "branch %s open (depth %d%s), budget %d tokens; end it with: return SUMMARY\n",
		b.ID, b.Depth, inside, b.Budget)
	return toolcall.Outcome{Err: err}
}

// innermost is the deepest of the open branches, the latest opened among
// equals; nil when none is open.
func innermost(open []store.Branch) *store.Branch {
	var in *store.Branch
	for i := range open {
		b := &open[i]
		if in == nil || b.Depth > in.Depth || b.Depth == in.Depth && !b.Created.Before(in.Created) {
			in = b
		}
	}
	return in
}

// ---- return

// Return closes a branch with a summary of what it found (toolspec/return).
type Return struct{ Config *Config }

// Name implements toolcall.Tool.
func (Return) Name() string { return "return" }

// ReturnInput is return's input.
type ReturnInput struct {
	Summary string `json:"summary"`
	ID      string `json:"id,omitempty"`
}

// Decode implements toolcall.Tool.
func (t Return) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "return"
	var in ReturnInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	if blank(in.Summary) {
		return nil, missing(tool, "summary")
	}
	if in.ID != "" {
		var err error
		if in.ID, err = checkID(tool, in.ID); err != nil {
			return nil, err
		}
	}
	return &returnCall{in: in, cfg: t.Config}, nil
}

type returnCall struct {
	in  ReturnInput
	cfg *Config
}

func (c *returnCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "return"
	st, err := storeOf(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	limit := c.cfg.returnTokens()
	if n := counterOf(env).Count([]byte(c.in.Summary)); n > limit {
		return toolcall.Outcome{Err: tooManyTokens(tool, "the summary", n, limit,
			"keep what the caller needs: findings, decisions, file paths")}
	}
	if env.Session == "" {
		return toolcall.Outcome{Err: fmt.Errorf("%s: this call has no session (set CONTEXTD_SESSION): %w", tool, catalog.ErrNoBranch)}
	}
	open, err := st.OpenBranches(ctx, env.Session)
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "read the open branches", err)}
	}
	var target *store.Branch
	if c.in.ID == "" {
		if target = innermost(open); target == nil {
			return toolcall.Outcome{Err: fmt.Errorf("%s: nothing to return from: %w", tool, catalog.ErrNoBranch)}
		}
	} else {
		for i := range open {
			if open[i].ID == c.in.ID {
				target = &open[i]
			}
		}
		if target == nil {
			if _, err := st.GetBranch(ctx, c.in.ID, env.Session); err != nil {
				return toolcall.Outcome{Err: storeErr(tool, "no branch "+c.in.ID+" in this session", err)}
			}
			return toolcall.Outcome{Err: fmt.Errorf("%s: branch %s is already closed: %w", tool, c.in.ID, catalog.ErrNoBranch)}
		}
	}

	// Close the branches nested in target first, deepest first, then target.
	nested := descendants(open, target.ID)
	slices.SortStableFunc(nested, func(a, b store.Branch) int { return b.Depth - a.Depth })
	summary := scrubbed(env, c.in.Summary)
	var children []store.Branch
	for _, b := range nested {
		closed, err := closeBranch(ctx, st, b.ID, env.Session, closedWithParent)
		if err != nil {
			return toolcall.Outcome{Err: storeErr(tool, "close nested branch "+b.ID, err)}
		}
		children = append(children, *closed)
	}
	closed, err := closeBranch(ctx, st, target.ID, env.Session, summary)
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "close branch "+target.ID, err)}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "returned from %s (depth %d): %s\n", closed.ID, closed.Depth, figures(closed))
	for _, ch := range children {
		fmt.Fprintf(&out, "closed with it: %s (depth %d): %s\n", ch.ID, ch.Depth, figures(&ch))
	}
	out.WriteString("summary:\n")
	out.WriteString(summary)
	if !strings.HasSuffix(summary, "\n") {
		out.WriteByte('\n')
	}
	_, err = fmt.Fprint(env.Out, out.String())
	return toolcall.Outcome{Err: err}
}

// figures are a branch's calls and tokens against its budget.
func figures(b *store.Branch) string {
	over := ""
	if b.Used > b.Budget {
		over = ", over budget"
	}
	return fmt.Sprintf("%d calls, %d of %d tokens%s", b.Calls, b.Used, b.Budget, over)
}

// descendants are the branches of open nested, at any depth, in the one with
// id.
func descendants(open []store.Branch, id string) []store.Branch {
	inside := map[string]bool{id: true}
	var out []store.Branch
	for grew := true; grew; {
		grew = false
		for _, b := range open {
			if inside[b.Parent] && !inside[b.ID] {
				inside[b.ID] = true
				out = append(out, b)
				grew = true
			}
		}
	}
	return out
}

// closeBranch closes branch id of session with summary, re-reading it on a
// lost race (the daemon updates Calls and Used as calls finish). A branch
// already closed is left as it is.
func closeBranch(ctx context.Context, st store.Store, id, session, summary string) (*store.Branch, error) {
	var b *store.Branch
	err := update(ctx, func() error {
		var err error
		if b, err = st.GetBranch(ctx, id, session); err != nil {
			return err
		}
		if !b.Open {
			return nil
		}
		b.Open, b.Closed, b.Summary = false, time.Now().UTC(), summary
		return st.PutBranch(ctx, b)
	})
	return b, err
}
