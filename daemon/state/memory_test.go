package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/store"
)

// storedID returns the id memory_store printed ("stored ID (...)").
func storedID(t *testing.T, out string) string {
	t.Helper()
	if !strings.HasPrefix(out, "stored ") && !strings.HasPrefix(out, "updated ") {
		t.Fatalf("memory_store printed %q", out)
	}
	return word(t, out, 1)
}

// searchIDs returns the ids of memory_search's lines.
func searchIDs(out string) []string {
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if m := regexp.MustCompile(`^(\S+)  \d+\.\d\d  `).FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	return ids
}

func TestStoreAndSearchProjectIsolation(t *testing.T) {
	st := openStore(t)
	a, b := newEnv(st, "/work/projA", "s1"), newEnv(st, "/work/projB", "s2")

	inA := storedID(t, mustCall(t, a, "memory_store", lesson("Vendor the protobuf generator",
		"Use when protoc versions differ between machines, not for plain Go code.",
		"Pin protoc-gen-go in tools.go and run it through go run so every machine generates the same code.")))
	out := mustCall(t, a, "memory_store", obj{"title": "Retry flaky network tests with backoff",
		"description": "Use when integration tests fail on timeouts, not for logic failures.",
		"content":     "Wrap the dial in a retry loop with exponential backoff; three tries are enough.",
		"outcome":     "failure", "tags": []string{"Network", "tests", "network"}, "scope": "global"})
	global := storedID(t, out)
	if !strings.Contains(out, "(global, confidence 0.50)") {
		t.Errorf("memory_store printed %q", out)
	}

	got := searchIDs(mustCall(t, a, "memory_search", obj{"query": "protobuf generator protoc versions"}))
	if len(got) == 0 || got[0] != inA {
		t.Errorf("project A does not find its memory: %v", got)
	}
	if ids := searchIDs(mustCall(t, b, "memory_search", obj{"query": "protobuf generator protoc versions"})); len(ids) != 0 {
		t.Errorf("project B finds project A's memory: %v", ids)
	}
	for _, env := range []*Env{a, b} {
		ids := searchIDs(mustCall(t, env, "memory_search", obj{"query": "flaky network tests timeouts"}))
		if len(ids) == 0 || ids[0] != global {
			t.Errorf("%s does not find the global memory: %v", env.Place.Root, ids)
		}
	}
	if _, err := call(t, b, "memory_get", obj{"id": inA}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("memory_get of another project's memory: %v", err)
	}
	if _, err := call(t, b, "memory_feedback", obj{"id": inA, "helpful": true}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("memory_feedback of another project's memory: %v", err)
	}
	got1 := mustCall(t, b, "memory_get", obj{"id": global})
	for _, want := range []string{"Retry flaky network tests with backoff\n", "outcome failure, confidence 0.50, uses 1, global, tags network,tests\n\nWrap the dial"} {
		if !strings.Contains(got1, want) {
			t.Errorf("memory_get printed %q, want %q in it", got1, want)
		}
	}
	if got2 := mustCall(t, a, "memory_get", obj{"id": global}); !strings.Contains(got2, "uses 2,") {
		t.Errorf("uses not counted: %q", got2)
	}
	if out := mustCall(t, a, "memory_search", obj{"query": "kubernetes helm chart upgrade"}); !strings.Contains(out, "memory_store") || strings.Count(out, "\n") != 1 {
		t.Errorf("no-hit answer %q", out)
	}
}

func TestStoreLimits(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	c := budget.Default()
	content := strings.Repeat("word ", 1990)
	for c.Count([]byte(content)) < MaxContentTokens {
		content += "word "
	}
	if n := c.Count([]byte(content)); n != MaxContentTokens {
		t.Fatalf("content of %d tokens", n)
	}
	mustCall(t, env, "memory_store", lesson("At the limit", "Fits.", content))
	over := content + "word."
	if n := c.Count([]byte(over)); n != MaxContentTokens+1 {
		t.Fatalf("content of %d tokens", n)
	}
	_, err := call(t, env, "memory_store", lesson("Over the limit", "Does not fit.", over))
	if !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), "2001 tokens, the limit is 2000") {
		t.Errorf("2001 tokens of content: %v", err)
	}
	env.Store = nil
	if _, err := call(t, env, "memory_search", obj{"query": "x"}); !errors.Is(err, catalog.ErrStoreUnavailable) || !strings.Contains(err.Error(), "[store]") {
		t.Errorf("without a store: %v", err)
	}
}

func TestNearDuplicateMerge(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	first := obj{"title": "Run sqlite tests with a temp dir database",
		"description": "Use when a test needs a real database file, not for pure logic tests.",
		"content":     "Open the store on filepath.Join(t.TempDir(), state.db) so every test gets a fresh file and cleanup is automatic.",
		"outcome":     "success", "tags": []string{"sqlite"}}
	id := storedID(t, mustCall(t, env, "memory_store", first))
	mustCall(t, env, "memory_feedback", obj{"id": id, "helpful": true})
	mustCall(t, env, "memory_get", obj{"id": id})

	// A rewording: most words shared.
	again := obj{"title": "Run sqlite tests on a temp dir database",
		"description": "Use when a test needs a real database file, not for pure logic tests.",
		"content":     "Open the store on filepath.Join(t.TempDir(), state.db) so each test gets a fresh file and cleanup is automatic and fast.",
		"outcome":     "success", "tags": []string{"testing", "SQLite"}}
	out := mustCall(t, env, "memory_store", again)
	if !strings.HasPrefix(out, "updated "+id+" (near-duplicate of \"Run sqlite tests with a temp dir database\", similarity 0.") {
		t.Fatalf("rewording: %q", out)
	}
	m, err := st.GetMemory(context.Background(), id, []string{"/p"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != again["title"] || !strings.HasSuffix(m.Content, "and fast.") || strings.Join(m.Tags, ",") != "sqlite,testing" ||
		m.Helpful != 1 || m.Uses != 1 || math.Abs(m.Confidence-0.6) > 1e-9 || !m.Updated.After(m.Created) && !m.Updated.Equal(m.Created) {
		t.Errorf("merged memory %+v", m)
	}
	if n, _ := st.CountMemories(context.Background(), []string{"/p"}); n != 1 {
		t.Errorf("%d memories after a near-duplicate", n)
	}

	// Same title, other words: still the same lesson.
	out = mustCall(t, env, "memory_store", lesson("RUN sqlite tests  on a temp dir database", "Another sentence entirely.", "Different body text here."))
	if !strings.HasPrefix(out, "updated "+id+" (near-duplicate of") || !strings.Contains(out, "same title") {
		t.Errorf("same title: %q", out)
	}

	// Same subject, another lesson: a new memory.
	out = mustCall(t, env, "memory_store", lesson("Sqlite busy errors under parallel tests",
		"Use when tests fail with SQLITE_BUSY, not for schema errors.",
		"Set busy_timeout and use one writer connection; WAL mode lets readers proceed."))
	if !strings.HasPrefix(out, "stored ") {
		t.Errorf("a distinct lesson was merged: %q", out)
	}
	// The same lesson stored globally is another scope: not merged.
	g := lesson("Run sqlite tests on a temp dir database", "Use when a test needs a real database file.", "Same text.")
	g["scope"] = "global"
	if out := mustCall(t, env, "memory_store", g); !strings.HasPrefix(out, "stored ") {
		t.Errorf("merged across scopes: %q", out)
	}
	if n, _ := st.CountMemories(context.Background(), []string{"/p", store.Global}); n != 3 {
		t.Errorf("%d memories, want 3", n)
	}
}

func TestSimilarity(t *testing.T) {
	a := &store.Memory{Title: "Pin the protoc version", Description: "Use when generated code differs.", Content: "Pin protoc in tools.go."}
	b := &store.Memory{Title: "Pin protoc version", Description: "Use when the generated code differs.", Content: "Pin the protoc in tools.go!"}
	c := &store.Memory{Title: "Cache go modules in CI", Description: "Use when CI downloads modules each run.", Content: "Cache GOMODCACHE keyed by go.sum."}
	if s := similarity(a, b); s < DuplicateThreshold {
		t.Errorf("rewording: %.2f", s)
	}
	if s := similarity(a, c); s >= 0.2 {
		t.Errorf("unrelated: %.2f", s)
	}
	if s := similarity(&store.Memory{Title: "The"}, &store.Memory{Title: "a"}); s != 0 {
		t.Errorf("stop words only: %.2f", s)
	}
	if s := similarity(&store.Memory{Title: " Same  Title"}, &store.Memory{Title: "same title", Content: "x y z"}); s != 1 {
		t.Errorf("same title: %.2f", s)
	}
}

func TestFeedbackRule(t *testing.T) {
	tests := []struct {
		votes      string // h: helpful, u: unhelpful
		confidence float64
		archived   bool
	}{
		{"", 0.5, false},
		{"h", 0.6, false},
		{"u", 0.4, false},
		{"hh", 0.68, false},
		{"uu", 0.32, false},
		{"uuu", 0.256, true},             // 3 unhelpful > 2·0 helpful
		{"huuu", 0.3072, true},           // 3 > 2·1
		{"hhuuu", 0.34816, false},        // 3 > 2·2 does not hold
		{"hhuuuu", 0.278528, false},      // nor 4 > 2·2
		{"uuuh", 0.4048, true},           // 3 > 2·1
		{"uuuhh", 0.52384, false},        // helpful votes bring it back
		{"uuuuuuuuuuh", 0.2429497, true}, // the counts keep it archived
	}
	for _, tt := range tests {
		m := &store.Memory{Confidence: StartConfidence}
		for _, v := range tt.votes {
			applyFeedback(m, v == 'h')
		}
		if math.Abs(m.Confidence-tt.confidence) > 1e-6 || m.Archived != tt.archived {
			t.Errorf("%q: confidence %.6f archived %v, want %.6f %v", tt.votes, m.Confidence, m.Archived, tt.confidence, tt.archived)
		}
	}
	// Confidence under 0.1 archives whatever the counts.
	m := &store.Memory{Confidence: 0.12, Helpful: 10}
	applyFeedback(m, false)
	if !m.Archived || m.Confidence >= ArchiveBelow {
		t.Errorf("low confidence not archived: %+v", m)
	}
	// Bounded.
	m = &store.Memory{Confidence: 0.99}
	for range 100 {
		applyFeedback(m, true)
	}
	if m.Confidence > 1 || m.Confidence < 0.99 {
		t.Errorf("confidence %v", m.Confidence)
	}
}

func TestFeedbackArchives(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	id := storedID(t, mustCall(t, env, "memory_store", lesson("Use the race detector on CI", "Use when tests touch goroutines.", "go test -race ./...")))
	query := obj{"query": "race detector goroutines"}
	if ids := searchIDs(mustCall(t, env, "memory_search", query)); len(ids) != 1 {
		t.Fatalf("search before feedback: %v", ids)
	}
	want := []string{
		"confidence 0.40 (was 0.50), 0 helpful, 1 unhelpful, active\n",
		"confidence 0.32 (was 0.40), 0 helpful, 2 unhelpful, active\n",
		"confidence 0.26 (was 0.32), 0 helpful, 3 unhelpful, archived (kept, left out of searches)\n",
	}
	for i, w := range want {
		if out := mustCall(t, env, "memory_feedback", obj{"id": id, "helpful": false}); out != w {
			t.Errorf("vote %d: %q, want %q", i+1, out, w)
		}
	}
	if ids := searchIDs(mustCall(t, env, "memory_search", query)); len(ids) != 0 {
		t.Errorf("archived memory found: %v", ids)
	}
	// Kept, readable by id.
	if out := mustCall(t, env, "memory_get", obj{"id": id}); !strings.Contains(out, ", archived\n") {
		t.Errorf("memory_get of an archived memory: %q", out)
	}
	// Below the confidence floor, not archived: left out too.
	low := storedID(t, mustCall(t, env, "memory_store", lesson("Bisect regressions with git", "Use when a test broke between releases.", "git bisect run go test ./pkg")))
	m, _ := st.GetMemory(context.Background(), low, []string{"/p"})
	m.Confidence = 0.15
	if err := st.PutMemory(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(mustCall(t, env, "memory_search", obj{"query": "bisect regressions git"})); len(ids) != 0 {
		t.Errorf("memory under the floor found: %v", ids)
	}
}

// Ten long hits stay within 500 tokens, each line keeping its id and score.
func TestSearchWithinBudget(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	var ids []string
	for i := range 10 {
		title := fmt.Sprintf("Lesson %d about the deployment pipeline and its many slow and flaky stages, retries, caches and timeouts %c", i, 'a'+i)
		title = title[:min(len(title), MaxTitle)]
		desc := fmt.Sprintf("Use variant %d when the deployment pipeline stalls on the artifact upload stage with intermittent timeouts under heavy load and cache misses, and do not use it when the failure is a compile error in the service code itself %d", i, i)
		desc = desc[:min(len(desc), MaxDescription)]
		content := fmt.Sprintf("Body %d: deployment pipeline artifact upload timeouts; raise the timeout, enable the cache, retry twice.", i)
		m := store.Memory{Project: "/p", Title: title, Description: desc, Content: content, Outcome: store.Success, Confidence: 0.5}
		if err := st.PutMemory(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	out := mustCall(t, env, "memory_search", obj{"query": "deployment pipeline artifact upload timeouts", "limit": 10})
	n := budget.Default().Count([]byte(out))
	if n > SearchTokens {
		t.Errorf("answer of %d tokens:\n%s", n, out)
	}
	got := searchIDs(out)
	if len(got) < 5 {
		t.Errorf("only %d hits shown:\n%s", len(got), out)
	}
	for _, id := range got {
		if !strings.Contains(strings.Join(ids, " "), id) {
			t.Errorf("unknown id %s", id)
		}
	}
	if !strings.Contains(out, "…") {
		t.Errorf("nothing was cut:\n%s", out)
	}
	t.Logf("%d tokens, %d lines:\n%s", n, len(got), out)

	// Three ordinary hits are not cut.
	out = mustCall(t, env, "memory_search", obj{"query": "deployment pipeline artifact upload timeouts"})
	if strings.Contains(out, "…") || len(searchIDs(out)) != 3 {
		t.Errorf("default search:\n%s", out)
	}
	t.Logf("default: %d tokens", budget.Default().Count([]byte(out)))
}

func TestFitRows(t *testing.T) {
	c := budget.Default()
	rows := []row{{"a  ", strings.Repeat("long text ", 50)}, {"b  ", "short"}, {"c  ", strings.Repeat("more words ", 80)}}
	more := func(n int) string { return fmt.Sprintf("(%d more)\n", n) }
	for _, limit := range []int{400, 120, 60, 30, 12} {
		out := fitRows(c, rows, limit, more)
		if n := c.Count([]byte(out)); n > limit {
			t.Errorf("limit %d: %d tokens: %q", limit, n, out)
		}
		if !strings.HasPrefix(out, "a  ") {
			t.Errorf("limit %d: %q", limit, out)
		}
		if limit >= 60 && !strings.Contains(out, "b  short\n") {
			t.Errorf("limit %d: the short row was cut: %q", limit, out)
		}
	}
	if out := fitRows(c, rows[1:2], 100, more); out != "b  short\n" {
		t.Errorf("fits whole: %q", out)
	}
}
