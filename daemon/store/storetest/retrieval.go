package storetest

import (
	"slices"
	"testing"

	"github.com/contextd/contextd/daemon/store"
)

// RecallFloor is the recall@3 below which Retrieval fails. The SQLite
// backend's lexical search (bm25, porter stemming) measured 0.955 (42 of 44)
// on this set when it was written; the floor leaves room for two more misses
// so that a real ranking regression fails, not a reshuffle of near ties.
const RecallFloor = 0.90

// Retrieval puts a fixed set of 41 lessons into s (a third of them Global,
// the rest in one project), asks 44 questions phrased unlike the lessons'
// own words (the last 12 sharing hardly any), and returns recall@3: the fraction of questions
// whose expected lesson is among the first three hits. It logs the misses
// and fails the test below RecallFloor. s should be empty; other records of
// the same project or Global can only lower the score.
func Retrieval(t *testing.T, s store.Store) (recall float64) {
	t.Helper()
	const project = "/home/dev/src/retrieval"
	byKey := map[string]*store.Memory{}
	for i, rm := range retrievalMemories {
		m := &store.Memory{
			Project: project, Title: rm.title, Description: rm.description, Content: rm.content,
			Outcome: rm.outcome, Tags: slices.Sorted(slices.Values(rm.tags)), Confidence: 0.6,
		}
		if i%3 == 0 {
			m.Project = store.Global
		}
		if err := s.PutMemory(t.Context(), m); err != nil {
			t.Fatalf("Retrieval: PutMemory(%q): %v", rm.title, err)
		}
		byKey[rm.key] = m
	}
	found := 0
	for _, q := range retrievalQueries {
		want := byKey[q.want]
		if want == nil {
			t.Fatalf("Retrieval: query %q expects unknown memory %q", q.text, q.want)
		}
		hits, err := s.SearchMemories(t.Context(), store.MemoryQuery{Text: q.text, Projects: []string{project, store.Global}, Limit: 3})
		if err != nil {
			t.Fatalf("Retrieval: SearchMemories(%q): %v", q.text, err)
		}
		if slices.ContainsFunc(hits, func(h store.Hit) bool { return h.Memory.ID == want.ID }) {
			found++
			continue
		}
		t.Logf("Retrieval: miss: %q wanted %q, got %q", q.text, want.Title, titles(hits))
	}
	recall = float64(found) / float64(len(retrievalQueries))
	t.Logf("Retrieval: recall@3 = %.3f (%d of %d queries; %d memories) on %s",
		recall, found, len(retrievalQueries), len(retrievalMemories), s.Backend())
	if recall < RecallFloor {
		t.Errorf("Retrieval: recall@3 %.3f is below the floor %.2f", recall, RecallFloor)
	}
	return recall
}
