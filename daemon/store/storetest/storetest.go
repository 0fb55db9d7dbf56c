// Package storetest is the contract suite every store.Store backend passes.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/store"
)

// Run runs the contract suite. open is called once per subtest and must
// return a new, empty store; Run closes it at the end of the subtest (open
// may register cleanups for what the store leaves behind, such as files).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, s store.Store)
	}{
		{"MemoryRoundTrip", testMemoryRoundTrip},
		{"MemoryReplace", testMemoryReplace},
		{"MemoryVersionConflict", testMemoryConflict},
		{"MemoryConcurrentUpdates", testMemoryConcurrentUpdates},
		{"MemoryNotFound", testMemoryNotFound},
		{"MemoryProjectIsolation", testMemoryIsolation},
		{"MemoryCount", testMemoryCount},
		{"SearchFilters", testSearchFilters},
		{"SearchLimit", testSearchLimit},
		{"SearchRanking", testSearchRanking},
		{"SearchStemming", testSearchStemming},
		{"SearchNoWords", testSearchNoWords},
		{"SearchHostileText", testSearchHostile},
		{"HostileRecordText", testHostileRecord},
		{"CheckpointRoundTrip", testCheckpointRoundTrip},
		{"CheckpointList", testCheckpointList},
		{"BranchRoundTrip", testBranchRoundTrip},
		{"BranchVersionConflict", testBranchConflict},
		{"OpenBranches", testOpenBranches},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Backend", testBackend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.f(t, s)
		})
	}
}

const (
	projA = "/home/dev/src/alpha"
	projB = "/home/dev/src/beta"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func ctx(t *testing.T) context.Context { return t.Context() }

// mem returns a memory of project p; tweak it before putting it.
func mem(p, title, desc, content string, tags ...string) *store.Memory {
	return &store.Memory{
		Project: p, Title: title, Description: desc, Content: content,
		Outcome: store.Success, Tags: tags, Confidence: 0.5,
	}
}

func put(t *testing.T, s store.Store, m *store.Memory) *store.Memory {
	t.Helper()
	if err := s.PutMemory(ctx(t), m); err != nil {
		t.Fatalf("PutMemory(%q): %v", m.Title, err)
	}
	return m
}

func search(t *testing.T, s store.Store, q store.MemoryQuery) []store.Hit {
	t.Helper()
	hits, err := s.SearchMemories(ctx(t), q)
	if err != nil {
		t.Fatalf("SearchMemories(%.60q): %v", q.Text, err)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("SearchMemories(%.60q): hit %d scores %v above hit %d (%v): not best first",
				q.Text, i, hits[i].Score, i-1, hits[i-1].Score)
		}
	}
	return hits
}

func ids(hits []store.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Memory.ID
	}
	return out
}

func titles(hits []store.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Memory.Title
	}
	return out
}

// sameMemory reports the first field where got differs from want; nil and
// empty Tags are the same.
func sameMemory(got, want *store.Memory) error {
	type field struct {
		name      string
		got, want any
	}
	for _, f := range []field{
		{"ID", got.ID, want.ID}, {"Project", got.Project, want.Project}, {"Title", got.Title, want.Title},
		{"Description", got.Description, want.Description}, {"Content", got.Content, want.Content},
		{"Outcome", got.Outcome, want.Outcome}, {"Confidence", got.Confidence, want.Confidence},
		{"Uses", got.Uses, want.Uses}, {"Helpful", got.Helpful, want.Helpful},
		{"Unhelpful", got.Unhelpful, want.Unhelpful}, {"Archived", got.Archived, want.Archived},
		{"Version", got.Version, want.Version},
	} {
		if f.got != f.want {
			return fmt.Errorf("%s = %#v, want %#v", f.name, f.got, f.want)
		}
	}
	if !slices.Equal(got.Tags, want.Tags) {
		return fmt.Errorf("memory: Tags = %q, want %q", got.Tags, want.Tags)
	}
	if !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) {
		return fmt.Errorf("memory: Created, Updated = %v, %v, want %v, %v", got.Created, got.Updated, want.Created, want.Updated)
	}
	return nil
}

func testMemoryRoundTrip(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Minute)
	m := mem(projA, "Run go test with -race before pushing",
		"When a change touches goroutines; not needed for pure functions.",
		"Data races only show under the race detector; CI runs with -race and failed twice.",
		"go", "race", "testing")
	m.Outcome, m.Confidence, m.Uses, m.Helpful, m.Unhelpful = store.Failure, 0.75, 4, 3, 1
	put(t, s, m)
	if !uuidRE.MatchString(m.ID) {
		t.Errorf("assigned ID %q is not a lower-case UUID", m.ID)
	}
	if m.Version != 1 {
		t.Errorf("Version after insert = %d, want 1", m.Version)
	}
	if m.Created.Before(before) || m.Updated.Before(m.Created) {
		t.Errorf("Created, Updated = %v, %v: not set to now", m.Created, m.Updated)
	}
	got, err := s.GetMemory(ctx(t), m.ID, []string{projA})
	if err != nil {
		t.Fatalf("GetMemory: %v", err)
	}
	if err := sameMemory(got, m); err != nil {
		t.Errorf("GetMemory after PutMemory: %v", err)
	}

	// A caller-chosen id is kept (imports, moves between backends).
	own := mem(store.Global, "Global lesson", "Everywhere.", "Body.")
	own.ID = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"
	put(t, s, own)
	if own.ID != "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b" || own.Version != 1 {
		t.Errorf("PutMemory with a new caller id: ID, Version = %q, %d", own.ID, own.Version)
	}
	got, err = s.GetMemory(ctx(t), own.ID, []string{projB, store.Global})
	if err != nil {
		t.Fatalf("GetMemory(global): %v", err)
	}
	if err := sameMemory(got, own); err != nil {
		t.Errorf("GetMemory(global): %v", err)
	}

	// Two inserts never share an id.
	other := put(t, s, mem(projA, "Another", "d", "c"))
	if other.ID == m.ID {
		t.Errorf("two inserts got the same id %q", m.ID)
	}
}

func testMemoryReplace(t *testing.T, s store.Store) {
	m := put(t, s, mem(projA, "Prefer git rebase for local branches", "d", "c", "git"))
	created := m.Created
	time.Sleep(2 * time.Millisecond) // so that Updated can move

	m.Content, m.Helpful, m.Confidence, m.Tags = "rebase, then force-push with lease", 2, 0.9, nil
	put(t, s, m)
	if m.Version != 2 {
		t.Errorf("Version after a replace = %d, want 2", m.Version)
	}
	if !m.Created.Equal(created) {
		t.Errorf("Created moved on replace: %v -> %v", created, m.Created)
	}
	if !m.Updated.After(created) {
		t.Errorf("Updated %v not after Created %v on replace", m.Updated, created)
	}
	got, err := s.GetMemory(ctx(t), m.ID, []string{projA})
	if err != nil {
		t.Fatalf("GetMemory: %v", err)
	}
	if err := sameMemory(got, m); err != nil {
		t.Errorf("GetMemory after replace: %v", err)
	}

	// Version 0 skips the check: the last writer wins.
	blind := *got
	blind.Version, blind.Title = 0, "Prefer git rebase (blind write)"
	put(t, s, &blind)
	if blind.Version != 3 {
		t.Errorf("Version after a blind replace = %d, want 3", blind.Version)
	}
	if n, err := s.CountMemories(ctx(t), []string{projA}); err != nil || n != 1 {
		t.Errorf("CountMemories after replaces = %d, %v; want 1", n, err)
	}
	// The search index follows the replace.
	if hits := search(t, s, store.MemoryQuery{Text: "blind", Projects: []string{projA}}); len(hits) != 1 || hits[0].Memory.ID != m.ID {
		t.Errorf("search for the new title: %q", titles(hits))
	}
	if hits := search(t, s, store.MemoryQuery{Text: "force-push lease", Projects: []string{projA}}); len(hits) != 1 {
		t.Errorf("search for the new content: %q", titles(hits))
	}
}

func testMemoryConflict(t *testing.T, s store.Store) {
	m := put(t, s, mem(projA, "Pin the Docker base image digest", "d", "c"))
	a, b := *m, *m // two readers of version 1
	a.Uses = 1
	put(t, s, &a)
	b.Uses = 7
	err := s.PutMemory(ctx(t), &b)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("PutMemory with a stale Version: %v, want ErrConflict", err)
	}
	got, err := s.GetMemory(ctx(t), m.ID, []string{projA})
	if err != nil {
		t.Fatal(err)
	}
	if got.Uses != 1 || got.Version != 2 {
		t.Errorf("after a conflict the stored memory has Uses, Version = %d, %d; want 1, 2", got.Uses, got.Version)
	}
	// A Version for an id that does not exist is stale too.
	ghost := mem(projA, "ghost", "d", "c")
	ghost.ID, ghost.Version = "0d6a3b1e-7c55-4b7e-9f3a-2b8c4d5e6f70", 4
	if err := s.PutMemory(ctx(t), ghost); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutMemory of a missing id with Version 4: %v, want ErrConflict", err)
	}
}

// testMemoryConcurrentUpdates: read-modify-write loops that retry on
// ErrConflict lose no increment.
func testMemoryConcurrentUpdates(t *testing.T, s store.Store) {
	m := put(t, s, mem(projA, "counter", "d", "c"))
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				cur, err := s.GetMemory(context.Background(), m.ID, []string{projA})
				if err != nil {
					errs <- err
					return
				}
				cur.Uses++
				err = s.PutMemory(context.Background(), cur)
				if errors.Is(err, store.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.GetMemory(ctx(t), m.ID, []string{projA})
	if err != nil {
		t.Fatal(err)
	}
	if got.Uses != workers*each || got.Version != workers*each+1 {
		t.Errorf("after %d increments: Uses, Version = %d, %d; want %d, %d",
			workers*each, got.Uses, got.Version, workers*each, workers*each+1)
	}
}

func testMemoryNotFound(t *testing.T, s store.Store) {
	a := put(t, s, mem(projA, "Secret of alpha", "d", "alpha-only content"))
	g := put(t, s, mem(store.Global, "Shared lesson", "d", "c"))
	missing := "9b2e4f61-0c3a-4d8e-a1b2-c3d4e5f60718"

	for _, tc := range []struct {
		name     string
		id       string
		projects []string
	}{
		{"unknown id", missing, []string{projA, store.Global}},
		{"other project", a.ID, []string{projB}},
		{"other project with global", a.ID, []string{projB, store.Global}},
		{"global only", a.ID, []string{store.Global}},
		{"no scope", a.ID, nil},
		{"global memory, no global scope", g.ID, []string{projA}},
		{"empty id", "", []string{projA, store.Global}},
		{"hostile id", `' OR 1=1 --`, []string{projA, store.Global}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.GetMemory(ctx(t), tc.id, tc.projects)
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetMemory = %v, %v; want ErrNotFound", got, err)
			}
			// The error must not tell that the id exists elsewhere.
			if strings.Contains(err.Error(), projA) || strings.Contains(err.Error(), "alpha") {
				t.Errorf("error %q reveals the owning project", err)
			}
		})
	}
	for _, scope := range [][]string{{projA, store.Global}, {projB, store.Global}} {
		if _, err := s.GetMemory(ctx(t), g.ID, scope); err != nil {
			t.Errorf("GetMemory(global memory, %q): %v", scope, err)
		}
	}
}

func testMemoryIsolation(t *testing.T, s store.Store) {
	a := put(t, s, mem(projA, "Docker layer caching in alpha", "When building images.", "Order COPY after go mod download."))
	b := put(t, s, mem(projB, "Docker layer caching in beta", "When building images.", "Order COPY after npm ci."))
	g := put(t, s, mem(store.Global, "Docker layer caching everywhere", "When building images.", "Copy lock files first."))

	for _, tc := range []struct {
		projects []string
		want     []string
	}{
		{[]string{projA, store.Global}, []string{a.ID, g.ID}},
		{[]string{projB, store.Global}, []string{b.ID, g.ID}},
		{[]string{projA}, []string{a.ID}},
		{[]string{store.Global}, []string{g.ID}},
		{[]string{"/elsewhere"}, nil},
		{nil, nil},
	} {
		hits := search(t, s, store.MemoryQuery{Text: "docker layer caching", Projects: tc.projects, Limit: 10})
		got := ids(hits)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("search in %q returned %q, want %q", tc.projects, titles(hits), want)
		}
	}
}

func testMemoryCount(t *testing.T, s store.Store) {
	for i := range 3 {
		put(t, s, mem(projA, fmt.Sprintf("a%d", i), "d", "c"))
	}
	arch := mem(projA, "archived", "d", "c")
	arch.Archived = true
	put(t, s, arch)
	put(t, s, mem(projB, "b", "d", "c"))
	put(t, s, mem(store.Global, "g", "d", "c"))
	for _, tc := range []struct {
		projects []string
		want     int
	}{
		{[]string{projA}, 4},
		{[]string{projA, store.Global}, 5},
		{[]string{projB, store.Global}, 2},
		{[]string{"/nowhere"}, 0},
		{nil, 0},
	} {
		if n, err := s.CountMemories(ctx(t), tc.projects); err != nil || n != tc.want {
			t.Errorf("CountMemories(%q) = %d, %v; want %d", tc.projects, n, err, tc.want)
		}
	}
}

func testSearchFilters(t *testing.T, s store.Store) {
	live := put(t, s, mem(projA, "Migrations must be reversible", "d", "Write the down migration too."))
	arch := mem(projA, "Migrations need a lock timeout", "d", "Set lock_timeout before ALTER TABLE.")
	arch.Archived = true
	put(t, s, arch)
	weak := mem(projA, "Migrations run twice in CI", "d", "Guard with IF NOT EXISTS.")
	weak.Confidence = 0.1
	put(t, s, weak)
	scope := []string{projA, store.Global}

	for _, tc := range []struct {
		name string
		q    store.MemoryQuery
		want []string
	}{
		{"defaults", store.MemoryQuery{Text: "migrations", Projects: scope, Limit: 10}, []string{live.ID, weak.ID}},
		{"min confidence", store.MemoryQuery{Text: "migrations", Projects: scope, Limit: 10, MinConfidence: 0.3}, []string{live.ID}},
		{"include archived", store.MemoryQuery{Text: "migrations", Projects: scope, Limit: 10, IncludeArchived: true}, []string{live.ID, arch.ID, weak.ID}},
		{"both", store.MemoryQuery{Text: "migrations", Projects: scope, Limit: 10, IncludeArchived: true, MinConfidence: 0.5}, []string{live.ID, arch.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(search(t, s, tc.q))
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func testSearchLimit(t *testing.T, s store.Store) {
	for i := range 7 {
		put(t, s, mem(projA, fmt.Sprintf("Flaky test number %d", i), "When CI is red.", "Retry once, then quarantine."))
	}
	for _, tc := range []struct{ limit, want int }{{0, 3}, {-2, 3}, {1, 1}, {5, 5}, {50, 7}} {
		hits := search(t, s, store.MemoryQuery{Text: "flaky test", Projects: []string{projA}, Limit: tc.limit})
		if len(hits) != tc.want {
			t.Errorf("Limit %d: %d hits, want %d", tc.limit, len(hits), tc.want)
		}
	}
}

func testSearchRanking(t *testing.T, s store.Store) {
	// Filler, so that document frequencies are not degenerate.
	for i, title := range []string{"Use context deadlines on HTTP clients", "Keep commits small", "Log the request id", "Close response bodies"} {
		put(t, s, mem(projA, title, "General Go advice.", fmt.Sprintf("Note %d about servers and clients.", i)))
	}
	inContent := put(t, s, mem(projA, "Check CI logs before re-running",
		"When a pipeline fails.",
		"Last week the goroutine leak detector failed: a goroutine leak in the worker pool was the cause, fixed by closing the channel."))
	inTitle := put(t, s, mem(projA, "Goroutine leak in worker pools",
		"When tests hang or memory grows.",
		"Close the jobs channel and wait on the group."))
	hits := search(t, s, store.MemoryQuery{Text: "goroutine leak", Projects: []string{projA}})
	if len(hits) < 2 {
		t.Fatalf("search for %q: %q, want both memories", "goroutine leak", titles(hits))
	}
	if hits[0].Memory.ID != inTitle.ID || hits[1].Memory.ID != inContent.ID {
		t.Errorf("search for %q ranked %q; want the title match first, then the content match", "goroutine leak", titles(hits))
	}
}

// testSearchStemming: words match across inflections ("failing tests" finds
// "test failed"), the minimum for queries phrased by another agent.
func testSearchStemming(t *testing.T, s store.Store) {
	m := put(t, s, mem(projA, "When a test failed only in CI", "The race detector was on in CI only.", "Run locally with -race."))
	put(t, s, mem(projA, "Keep the changelog", "d", "Write an entry per release."))
	for _, q := range []string{"failing tests", "Tests fail", "TEST FAILURES"} {
		hits := search(t, s, store.MemoryQuery{Text: q, Projects: []string{projA}})
		if len(hits) == 0 || hits[0].Memory.ID != m.ID {
			t.Errorf("search for %q: %q, want %q first", q, titles(hits), m.Title)
		}
	}
}

func testSearchNoWords(t *testing.T, s store.Store) {
	put(t, s, mem(projA, "Something", "d", "c"))
	for _, text := range []string{"", "   ", "\t\n", "!!! ... ???", `"" '' ** -- ()`, "—–·•"} {
		hits, err := s.SearchMemories(ctx(t), store.MemoryQuery{Text: text, Projects: []string{projA}})
		if err != nil || len(hits) != 0 {
			t.Errorf("SearchMemories(%q) = %d hits, %v; want none, nil", text, len(hits), err)
		}
	}
}

// hostileTexts are query strings that break a naive FTS or SQL query.
func hostileTexts() []string {
	r := rand.New(rand.NewSource(1))
	junk := make([]byte, 10<<10)
	r.Read(junk)
	var words strings.Builder
	for words.Len() < 10<<10 {
		words.WriteString("docker compose build cache ")
	}
	return []string{
		`"`, `""`, `"docker`, `docker"`, `"docker" "`, `*`, `docker*`, `*docker`, `^docker`, `+docker`, `-docker`,
		`docker -compose`, `NEAR`, `NEAR(docker compose)`, `NEAR(docker compose, 2)`, `docker NEAR/2 compose`,
		`AND`, `OR`, `NOT`, `docker AND`, `OR docker OR`, `NOT docker`, `docker NOT compose`, `AND OR NOT NEAR`,
		`title:docker`, `{title content}: docker`, `- title : docker`, `content:`, `:`, `::::`,
		`(`, `)`, `(docker`, `docker)`, `((((docker))))`, `docker) OR (1=1`, `'; DROP TABLE memories; --`,
		`%`, `_`, `%docker%`, `\`, `\"docker\"`, "`docker`", `$1`, `?`, `?1`, `:name`, `@x`,
		"\x00", "docker\x00compose", "\x00\x00\x00", "\xff\xfe\xfd", "docker \xc3\x28 compose",
		"日本語のテスト", "Docker の キャッシュ", "🐳 docker 🔥", "Ünïcödé façade naïve", "ǅ ǈ ǋ", "\u200b\u200d\ufeff",
		"e\u0301\u0301\u0301", "\u0301", "ﬁle ﬂag", "İstanbul ıi", "ß straße", "١٢٣ ٤٥٦", "א ב ג",
		"\t\r\n\v\f", strings.Repeat(" ", 10<<10), strings.Repeat("x", 10<<10), strings.Repeat(`"*(`, 3500),
		strings.Repeat("docker ", 1500), words.String(), strings.Repeat("NEAR(", 2000), string(junk),
		strings.Repeat("é", 5000), strings.Repeat("a b ", 2600),
	}
}

func testSearchHostile(t *testing.T, s store.Store) {
	a := put(t, s, mem(projA, "Docker compose build cache", "When images rebuild slowly.", "Use BuildKit cache mounts."))
	put(t, s, mem(projB, "Docker secret of beta", "d", "docker compose build cache"))
	for i, text := range hostileTexts() {
		hits, err := s.SearchMemories(ctx(t), store.MemoryQuery{Text: text, Projects: []string{projA, store.Global}})
		if err != nil {
			t.Errorf("query %d (%.40q, %d bytes): %v", i, text, len(text), err)
			continue
		}
		for _, h := range hits {
			if h.Memory.ID != a.ID {
				t.Errorf("query %d (%.40q) returned %q, outside the scope", i, text, h.Memory.Title)
			}
		}
	}
	// Nothing above changed the store.
	if hits := search(t, s, store.MemoryQuery{Text: "docker", Projects: []string{projA}}); len(hits) != 1 {
		t.Errorf("after hostile queries: %q", titles(hits))
	}
}

// testHostileRecord: records keep any text byte for byte, and it is
// searchable by its words.
func testHostileRecord(t *testing.T, s store.Store) {
	m := mem(projA, "quote \" star * NEAR(a b) col: x\x00y — 日本語 🐳",
		"'; DROP TABLE memories; --", strings.Repeat("long content ", 2000)+"\x00 end",
		"c++", "node.js", "日本語")
	put(t, s, m)
	got, err := s.GetMemory(ctx(t), m.ID, []string{projA})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameMemory(got, m); err != nil {
		t.Errorf("hostile text round trip: %v", err)
	}
	if hits := search(t, s, store.MemoryQuery{Text: "日本語", Projects: []string{projA}}); len(hits) != 1 {
		t.Errorf("search for a CJK word of the title: %d hits", len(hits))
	}
	c := &store.Checkpoint{Project: projA, Session: "s\x00", Name: `"*"`, Summary: "日本語", Context: "\x00", Full: strings.Repeat("\x00x", 5000)}
	if err := s.PutCheckpoint(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	gc, err := s.GetCheckpoint(ctx(t), c.ID, projA)
	if err != nil {
		t.Fatal(err)
	}
	if gc.Session != c.Session || gc.Name != c.Name || gc.Context != c.Context || gc.Full != c.Full {
		t.Errorf("hostile checkpoint text did not round-trip")
	}
}

func testCheckpointRoundTrip(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Minute)
	c := &store.Checkpoint{Project: projA, Session: "sess-1", Name: "before refactor",
		Summary: "Tests green; parser split in two.", Context: "Next: move lexer.go.", Full: strings.Repeat("transcript ", 1000)}
	if err := s.PutCheckpoint(ctx(t), c); err != nil {
		t.Fatalf("PutCheckpoint: %v", err)
	}
	if !uuidRE.MatchString(c.ID) || c.Created.Before(before) {
		t.Errorf("PutCheckpoint set ID, Created = %q, %v", c.ID, c.Created)
	}
	got, err := s.GetCheckpoint(ctx(t), c.ID, projA)
	if err != nil {
		t.Fatalf("GetCheckpoint: %v", err)
	}
	if got.ID != c.ID || got.Project != c.Project || got.Session != c.Session || got.Name != c.Name ||
		got.Summary != c.Summary || got.Context != c.Context || got.Full != c.Full || !got.Created.Equal(c.Created) {
		t.Errorf("GetCheckpoint = %+.80v, want %+.80v", *got, *c)
	}
	for _, tc := range []struct{ id, project string }{
		{c.ID, projB}, {c.ID, store.Global}, {"5e0c1d2a-8b9f-4a6e-b7c8-d9e0f1a2b3c4", projA}, {"", projA},
	} {
		if _, err := s.GetCheckpoint(ctx(t), tc.id, tc.project); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetCheckpoint(%q, %q): %v, want ErrNotFound", tc.id, tc.project, err)
		}
	}
	// Checkpoints are immutable.
	again := *c
	again.Summary = "rewritten"
	if err := s.PutCheckpoint(ctx(t), &again); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutCheckpoint over an existing id: %v, want ErrConflict", err)
	}
	if got, _ := s.GetCheckpoint(ctx(t), c.ID, projA); got == nil || got.Summary != c.Summary {
		t.Errorf("the checkpoint changed after a refused rewrite")
	}
}

func testCheckpointList(t *testing.T, s store.Store) {
	var want []string // newest first
	for i := range 25 {
		c := &store.Checkpoint{Project: projA, Session: "s", Name: fmt.Sprintf("cp%02d", i), Summary: "sum", Context: "ctx", Full: "full"}
		if err := s.PutCheckpoint(ctx(t), c); err != nil {
			t.Fatal(err)
		}
		want = append([]string{c.ID}, want...)
	}
	if err := s.PutCheckpoint(ctx(t), &store.Checkpoint{Project: projB, Session: "s", Name: "beta"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ limit, n int }{{0, 20}, {-1, 20}, {3, 3}, {100, 25}} {
		list, err := s.ListCheckpoints(ctx(t), projA, tc.limit)
		if err != nil {
			t.Fatalf("ListCheckpoints(limit %d): %v", tc.limit, err)
		}
		var got []string
		for _, c := range list {
			got = append(got, c.ID)
			if c.Full != "" {
				t.Errorf("ListCheckpoints: %s has Full set", c.Name)
			}
			if c.Summary != "sum" || c.Context != "ctx" || c.Project != projA || c.Created.IsZero() {
				t.Errorf("ListCheckpoints: %s lacks fields: %+v", c.Name, c)
			}
		}
		if !slices.Equal(got, want[:tc.n]) {
			t.Errorf("ListCheckpoints(limit %d): not the %d newest, newest first", tc.limit, tc.n)
		}
	}
	if list, err := s.ListCheckpoints(ctx(t), "/nowhere", 0); err != nil || len(list) != 0 {
		t.Errorf("ListCheckpoints(empty project) = %d, %v", len(list), err)
	}
}

func sameBranch(got, want *store.Branch) error {
	g, w := *got, *want
	if !g.Created.Equal(w.Created) || !g.Closed.Equal(w.Closed) {
		return fmt.Errorf("branch: Created, Closed = %v, %v, want %v, %v", g.Created, g.Closed, w.Created, w.Closed)
	}
	g.Created, g.Closed, w.Created, w.Closed = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g != w {
		return fmt.Errorf("got %+v, want %+v", g, w)
	}
	return nil
}

func testBranchRoundTrip(t *testing.T, s store.Store) {
	b := &store.Branch{Session: "sess-1", Project: projA, Depth: 1, Description: "explore the parser", Budget: 8000, Open: true}
	if err := s.PutBranch(ctx(t), b); err != nil {
		t.Fatalf("PutBranch: %v", err)
	}
	if !uuidRE.MatchString(b.ID) || b.Version != 1 || b.Created.IsZero() {
		t.Errorf("PutBranch set ID, Version, Created = %q, %d, %v", b.ID, b.Version, b.Created)
	}
	got, err := s.GetBranch(ctx(t), b.ID, "sess-1")
	if err != nil {
		t.Fatalf("GetBranch: %v", err)
	}
	if err := sameBranch(got, b); err != nil {
		t.Errorf("GetBranch after insert: %v", err)
	}

	// Close it, as branch_return does.
	created := b.Created
	b.Used, b.Calls, b.Open, b.Summary, b.Closed = 5120, 14, false, "parser uses Pratt; no change needed", time.Now().UTC()
	if err := s.PutBranch(ctx(t), b); err != nil {
		t.Fatalf("PutBranch (close): %v", err)
	}
	if b.Version != 2 || !b.Created.Equal(created) {
		t.Errorf("after replace: Version %d, Created %v (was %v)", b.Version, b.Created, created)
	}
	got, err = s.GetBranch(ctx(t), b.ID, "sess-1")
	if err != nil {
		t.Fatalf("GetBranch: %v", err)
	}
	if err := sameBranch(got, b); err != nil {
		t.Errorf("GetBranch after close: %v", err)
	}
	for _, tc := range []struct{ id, session string }{
		{b.ID, "sess-2"}, {b.ID, ""}, {"1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d", "sess-1"},
	} {
		if _, err := s.GetBranch(ctx(t), tc.id, tc.session); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetBranch(%q, %q): %v, want ErrNotFound", tc.id, tc.session, err)
		}
	}
}

func testBranchConflict(t *testing.T, s store.Store) {
	b := &store.Branch{Session: "s", Project: projA, Depth: 1, Budget: 100, Open: true}
	if err := s.PutBranch(ctx(t), b); err != nil {
		t.Fatal(err)
	}
	stale := *b
	b.Used = 10
	if err := s.PutBranch(ctx(t), b); err != nil {
		t.Fatal(err)
	}
	stale.Used = 99
	if err := s.PutBranch(ctx(t), &stale); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutBranch with a stale Version: %v, want ErrConflict", err)
	}
	ghost := &store.Branch{ID: "7d8e9f0a-1b2c-4d3e-8f4a-5b6c7d8e9f0a", Session: "s", Version: 3}
	if err := s.PutBranch(ctx(t), ghost); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutBranch of a missing id with Version 3: %v, want ErrConflict", err)
	}
	got, err := s.GetBranch(ctx(t), b.ID, "s")
	if err != nil || got.Used != 10 {
		t.Errorf("after a conflict: %+v, %v; want Used 10", got, err)
	}
}

func testOpenBranches(t *testing.T, s store.Store) {
	putB := func(b *store.Branch) *store.Branch {
		t.Helper()
		if err := s.PutBranch(ctx(t), b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	top := putB(&store.Branch{Session: "s1", Project: projA, Depth: 1, Description: "top", Open: true})
	mid := putB(&store.Branch{Session: "s1", Project: projA, Parent: top.ID, Depth: 2, Description: "mid", Open: true})
	inner := putB(&store.Branch{Session: "s1", Project: projA, Parent: mid.ID, Depth: 3, Description: "inner", Open: true})
	putB(&store.Branch{Session: "s2", Project: projA, Depth: 1, Description: "other session", Open: true})
	done := putB(&store.Branch{Session: "s1", Project: projA, Depth: 1, Description: "done", Open: true})
	done.Open, done.Closed = false, time.Now()
	putB(done)

	list, err := s.OpenBranches(ctx(t), "s1")
	if err != nil {
		t.Fatalf("OpenBranches: %v", err)
	}
	var got []string
	for _, b := range list {
		got = append(got, b.Description)
	}
	if want := []string{"top", "mid", "inner"}; !slices.Equal(got, want) {
		t.Errorf("OpenBranches = %q, want %q", got, want)
	}
	if len(list) == 3 && (list[1].Parent != top.ID || list[2].Parent != mid.ID) {
		t.Errorf("OpenBranches lost the parents")
	}

	inner.Open = false
	putB(inner)
	list, err = s.OpenBranches(ctx(t), "s1")
	if err != nil || len(list) != 2 || list[1].ID != mid.ID {
		t.Errorf("OpenBranches after closing the innermost: %d branches, %v", len(list), err)
	}
	if list, err := s.OpenBranches(ctx(t), "none"); err != nil || len(list) != 0 {
		t.Errorf("OpenBranches(unknown session) = %d, %v", len(list), err)
	}
}

// testConcurrentWriters: 8 goroutines each put 50 memories (and search
// while they do); every write is there afterwards.
func testConcurrentWriters(t *testing.T, s store.Store) {
	const writers, each = 8, 50
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all = map[string]string{}
	)
	errs := make(chan error, writers*2)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { // a reader racing the writers
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.SearchMemories(context.Background(), store.MemoryQuery{Text: "writer lesson", Projects: []string{projA}, Limit: 5}); err != nil {
				errs <- err
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := mem(projA, fmt.Sprintf("writer %d lesson %d", w, i), "d", "concurrent write")
				if err := s.PutMemory(context.Background(), m); err != nil {
					errs <- fmt.Errorf("writer %d, put %d: %w", w, i, err)
					return
				}
				mu.Lock()
				all[m.ID] = m.Title
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d distinct ids for %d writes", len(all), writers*each)
	}
	if n, err := s.CountMemories(ctx(t), []string{projA}); err != nil || n != writers*each {
		t.Errorf("CountMemories = %d, %v; want %d", n, err, writers*each)
	}
	for id, title := range all {
		m, err := s.GetMemory(ctx(t), id, []string{projA})
		if err != nil || m.Title != title {
			t.Errorf("GetMemory(%s): %v, %v", id, m, err)
		}
	}
}

func testBackend(t *testing.T, s store.Store) {
	b := s.Backend()
	if i := strings.IndexByte(b, ':'); i <= 0 || i == len(b)-1 {
		t.Errorf("Backend() = %q, want kind:where", b)
	}
}
