package storetest

import "slices"

// RetrievalMemory is one lesson of the retrieval set (see Retrieval).
type RetrievalMemory struct {
	Key                         string // what RetrievalQuery.Want names
	Title, Description, Content string
	Outcome                     string
	Tags                        []string
	// Global: Retrieval stores every third lesson in the Global scope.
	Global bool
}

// RetrievalQuery is one question of the retrieval set and the key of the
// lesson that answers it.
type RetrievalQuery struct {
	Text, Want string
}

// RetrievalSet returns a copy of the set Retrieval measures, for measuring
// the same recall@3 above the store (through the memory tools, with other
// rankings) in the same way: lessons in order, every third one Global.
func RetrievalSet() ([]RetrievalMemory, []RetrievalQuery) {
	ms := make([]RetrievalMemory, len(retrievalMemories))
	for i, m := range retrievalMemories {
		ms[i] = RetrievalMemory{Key: m.key, Title: m.title, Description: m.description, Content: m.content,
			Outcome: m.outcome, Tags: slices.Clone(m.tags), Global: i%3 == 0}
	}
	qs := make([]RetrievalQuery, len(retrievalQueries))
	for i, q := range retrievalQueries {
		qs[i] = RetrievalQuery{Text: q.text, Want: q.want}
	}
	return ms, qs
}
