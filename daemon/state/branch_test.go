package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/scrub"
)

// branchID returns the id branch printed ("branch ID open (...)").
func branchID(t *testing.T, out string) string {
	t.Helper()
	if !strings.HasPrefix(out, "branch ") || !strings.Contains(out, " open (depth ") {
		t.Fatalf("branch printed %q", out)
	}
	return word(t, out, 1)
}

func TestBranchNesting(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "sess-1")
	ctx := context.Background()

	if _, err := call(t, env, "return", obj{"summary": "nothing"}); !errors.Is(err, catalog.ErrNoBranch) {
		t.Errorf("return with no branch: %v", err)
	}
	out := mustCall(t, env, "branch", obj{"description": "explore the parser"})
	b1 := branchID(t, out)
	if want := "branch " + b1 + " open (depth 1), budget 8192 tokens; end it with: return SUMMARY\n"; out != want {
		t.Errorf("branch printed %q, want %q", out, want)
	}
	out = mustCall(t, env, "branch", obj{"description": "read the lexer", "budget": 2000})
	b2 := branchID(t, out)
	if !strings.Contains(out, "(depth 2, inside "+b1+"), budget 2000 tokens") {
		t.Errorf("nested branch printed %q", out)
	}
	b3 := branchID(t, mustCall(t, env, "branch", obj{"description": "one token rule"}))
	if _, err := call(t, env, "branch", obj{"description": "too deep"}); !errors.Is(err, catalog.ErrBranchDepth) {
		t.Errorf("a fourth level: %v", err)
	}
	got, err := st.GetBranch(ctx, b3, "sess-1")
	if err != nil || got.Parent != b2 || got.Depth != 3 || !got.Open || got.Budget != DefaultBranchBudget || got.Project != "/p" {
		t.Errorf("branch 3: %+v, %v", got, err)
	}

	// Another session has its own branches.
	other := newEnv(st, "/p", "sess-2")
	if out := mustCall(t, other, "branch", obj{"description": "elsewhere"}); !strings.Contains(out, "(depth 1)") {
		t.Errorf("another session's branch: %q", out)
	}
	if _, err := call(t, other, "return", obj{"summary": "x", "id": b1}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("return from another session's branch: %v", err)
	}

	// The daemon counts calls and tokens; return reports them.
	b3rec, _ := st.GetBranch(ctx, b3, "sess-1")
	b3rec.Calls, b3rec.Used = 4, 1234
	if err := st.PutBranch(ctx, b3rec); err != nil {
		t.Fatal(err)
	}
	out = mustCall(t, env, "return", obj{"summary": "one rule per token kind"})
	if want := "returned from " + b3 + " (depth 3): 4 calls, 1234 of 8192 tokens\nsummary:\none rule per token kind\n"; out != want {
		t.Errorf("return printed %q, want %q", out, want)
	}
	got, _ = st.GetBranch(ctx, b3, "sess-1")
	if got.Open || got.Summary != "one rule per token kind" || got.Closed.IsZero() || got.Calls != 4 || got.Used != 1234 {
		t.Errorf("returned branch: %+v", got)
	}
	// Depth 3 is free again.
	b3b := branchID(t, mustCall(t, env, "branch", obj{"description": "another leaf"}))
	if _, err := call(t, env, "return", obj{"summary": "x", "id": b3}); !errors.Is(err, catalog.ErrNoBranch) {
		t.Errorf("return from a closed branch: %v", err)
	}

	// Returning from the outermost closes everything inside it first.
	out = mustCall(t, env, "return", obj{"summary": "parser explored", "id": b1})
	for _, want := range []string{
		"returned from " + b1 + " (depth 1): 0 calls, 0 of 8192 tokens\n",
		"closed with it: " + b3b + " (depth 3)",
		"closed with it: " + b2 + " (depth 2): 0 calls, 0 of 2000 tokens\n",
		"summary:\nparser explored\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("return --id printed %q, want %q in it", out, want)
		}
	}
	if strings.Index(out, b3b) > strings.Index(out, b2) {
		t.Errorf("children not closed deepest first:\n%s", out)
	}
	for _, id := range []string{b2, b3b} {
		b, _ := st.GetBranch(ctx, id, "sess-1")
		if b.Open || b.Summary != closedWithParent {
			t.Errorf("child %s: %+v", id, b)
		}
	}
	if open, _ := st.OpenBranches(ctx, "sess-1"); len(open) != 0 {
		t.Errorf("still open: %+v", open)
	}
	if open, _ := st.OpenBranches(ctx, "sess-2"); len(open) != 1 {
		t.Errorf("the other session's branch was touched: %+v", open)
	}
}

func TestReturnSummaryBudget(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	branchID(t, mustCall(t, env, "branch", obj{"description": "d"}))
	_, err := call(t, env, "return", obj{"summary": tokens(t, 501)})
	if !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), "501 tokens, the limit is 500") {
		t.Errorf("501-token summary: %v", err)
	}
	mustCall(t, env, "return", obj{"summary": tokens(t, 500)})

	// The daemon's settings.
	cfg := &Config{BranchBudget: 1000, ReturnTokens: 10}
	var br, ret = cfg.Tools()[7], cfg.Tools()[8]
	if br.Name() != "branch" || ret.Name() != "return" {
		t.Fatalf("tool order: %s %s", br.Name(), ret.Name())
	}
	c, _ := br.Decode([]byte(`{"description":"d"}`))
	var out strings.Builder
	env.Out = &out
	if o := c.Run(context.Background(), env); o.Err != nil || !strings.Contains(out.String(), "budget 1000 tokens") {
		t.Errorf("configured budget: %q, %v", out.String(), o.Err)
	}
	c, _ = ret.Decode([]byte(`{"summary":"` + tokens(t, 11) + `"}`))
	if o := c.Run(context.Background(), env); !errors.Is(o.Err, catalog.ErrBadInput) {
		t.Errorf("configured summary limit: %v", o.Err)
	}
}

func TestBranchNeedsSession(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "")
	if _, err := call(t, env, "branch", obj{"description": "d"}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("branch without a session: %v", err)
	}
	if _, err := call(t, env, "return", obj{"summary": "d"}); !errors.Is(err, catalog.ErrNoBranch) {
		t.Errorf("return without a session: %v", err)
	}
}

var testScrubber = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

// Text from the agent is scrubbed before it is stored.
func TestStoredTextIsScrubbed(t *testing.T) {
	sc, err := testScrubber()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "ghp_R8x2Lq7Vn4Tz9Wb3Kc6Md1Pf5Hs0Jy2Ga8Ue"
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	env.Scrub = (&respond.Layer{Scrubber: sc, Vault: scrub.NewVault()}).Scrub
	branchID(t, mustCall(t, env, "branch", obj{"description": "d"}))
	out := mustCall(t, env, "return", obj{"summary": "the token is " + secret})
	if strings.Contains(out, secret) || !strings.Contains(out, "[REDACTED:") {
		t.Errorf("return printed %q", out)
	}
	id := storedID(t, mustCall(t, env, "memory_store", lesson("Token setup", "Use for CI.", "export GITHUB_TOKEN="+secret)))
	m, err := st.GetMemory(context.Background(), id, []string{"/p"})
	if err != nil || strings.Contains(m.Content, secret) {
		t.Errorf("stored memory %+v, %v", m, err)
	}
	cp := savedID(t, mustCall(t, env, "checkpoint_save", obj{"summary": "s", "context": "token " + secret}))
	c, err := st.GetCheckpoint(context.Background(), cp, "/p")
	if err != nil || strings.Contains(c.Context, secret) {
		t.Errorf("stored checkpoint %+v, %v", c, err)
	}
}

// A branch written concurrently (the daemon counting a call) is still
// closed: return re-reads and retries.
func TestReturnRetriesOnConflict(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	id := branchID(t, mustCall(t, env, "branch", obj{"description": "d"}))
	env.Store = &racingStore{Store: st, id: id, session: "s"}
	out := mustCall(t, env, "return", obj{"summary": "done"})
	if !strings.Contains(out, "1 calls, 50 of 8192 tokens") {
		t.Errorf("return printed %q", out)
	}
	b, _ := st.GetBranch(context.Background(), id, "s")
	if b.Open || b.Calls != 1 {
		t.Errorf("branch %+v", b)
	}
}

// racingStore is the real store with one concurrent write slipped in before
// the first PutBranch of branch id.
type racingStore struct {
	store.Store
	id, session string
	once        sync.Once
}

func (r *racingStore) PutBranch(ctx context.Context, b *store.Branch) error {
	var err error
	r.once.Do(func() {
		cur, e := r.Store.GetBranch(ctx, r.id, r.session)
		if e != nil {
			err = e
			return
		}
		cur.Calls, cur.Used = cur.Calls+1, cur.Used+50
		err = r.Store.PutBranch(ctx, cur)
	})
	if err != nil {
		return fmt.Errorf("racing write: %w", err)
	}
	return r.Store.PutBranch(ctx, b)
}
