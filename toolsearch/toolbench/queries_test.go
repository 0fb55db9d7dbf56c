package toolbench

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/toolsearch"
)

// fixtureDocs are the frozen catalogue's tools.
func fixtureDocs(t testing.TB) []toolsearch.Doc {
	t.Helper()
	return setDocs(t, Sets()[0])
}

// setDocs are the tools of the catalogue set is judged over.
func setDocs(t testing.TB, set Set) []toolsearch.Doc {
	t.Helper()
	servers, err := set.Servers()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(servers)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func docsByID(t *testing.T, set Set) map[string]toolsearch.Doc {
	m := map[string]toolsearch.Doc{}
	for _, d := range setDocs(t, set) {
		m[d.ID()] = d
	}
	return m
}

// setQueries are the tasks of set.
func setQueries(t *testing.T, set Set) []Query {
	t.Helper()
	qs, err := set.Queries()
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// TestQueriesExpectRealTools keeps each query set honest about its
// catalogue: every expected tool exists, ids are unique, both splits are
// used, and the set is large enough to measure.
func TestQueriesExpectRealTools(t *testing.T) {
	least := []int{120, 100, 70, 85}
	for i, set := range Sets() {
		t.Run(set.Name, func(t *testing.T) {
			qs := setQueries(t, set)
			docs := docsByID(t, set)
			ids := map[string]bool{}
			for _, q := range qs {
				if ids[q.ID] {
					t.Errorf("%s: id twice", q.ID)
				}
				ids[q.ID] = true
				for _, e := range q.Expect {
					if _, ok := docs[e]; !ok {
						t.Errorf("%s: expects %s, which no fixture has", q.ID, e)
					}
				}
				if q.Split != set.Dev && q.Split != set.Test {
					t.Errorf("%s: split %q", q.ID, q.Split)
				}
			}
			if len(qs) < least[i] {
				t.Errorf("%d queries, want at least %d", len(qs), least[i])
			}
			if set.Dev == "" {
				if test := len(Split(qs, set.Test)); test != len(qs) {
					t.Errorf("%s %d of %d: a set held out whole has one split", set.Test, test, len(qs))
				}
				return
			}
			if dev, test := len(Split(qs, set.Dev)), len(Split(qs, set.Test)); test == 0 || dev < test {
				t.Errorf("%s %d, %s %d: want at least as many to tune on as to report", set.Dev, dev, set.Test, test)
			}
		})
	}
}

// TestQueriesDoNotEcho guards against queries copied from descriptions,
// which make any lexical retrieval look good: no query holds a run of four
// words of its expected tool's description, and at least 80% share under
// half of their content words with it.
func TestQueriesDoNotEcho(t *testing.T) {
	for _, set := range Sets() {
		t.Run(set.Name, func(t *testing.T) { checkNoEcho(t, setQueries(t, set), docsByID(t, set)) })
	}
}

func checkNoEcho(t *testing.T, qs []Query, docs map[string]toolsearch.Doc) {
	low, n := 0, 0
	for _, q := range qs {
		if q.Kind == "name" {
			continue
		}
		n++
		qw := strings.Join(toolsearch.Words(q.Q), " ")
		worst := 0.0
		for _, e := range q.Expect {
			desc := toolsearch.Words(docs[e].Description)
			for i := 0; i+4 <= len(desc); i++ {
				if run := strings.Join(desc[i:i+4], " "); strings.Contains(" "+qw+" ", " "+run+" ") {
					t.Errorf("%s: %q holds %q of %s's description", q.ID, q.Q, run, e)
				}
			}
			worst = max(worst, jaccard(toolsearch.Tokens(q.Q), toolsearch.Tokens(docs[e].Description)))
		}
		if worst < 0.5 {
			low++
		}
	}
	if float64(low) < 0.8*float64(n) {
		t.Errorf("%d of %d queries share under half their words with the description; want 80%%", low, n)
	}
}

func jaccard(a, b []string) float64 {
	as, bs := map[string]bool{}, map[string]bool{}
	for _, w := range a {
		as[w] = true
	}
	for _, w := range b {
		bs[w] = true
	}
	inter := 0
	for w := range as {
		if bs[w] {
			inter++
		}
	}
	union := len(as) + len(bs) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// TestConceptsHoldNoToolNames keeps the concept table generic: a word that
// is a tool's whole name would be an entry for that tool.
func TestConceptsHoldNoToolNames(t *testing.T) {
	docs := docsByID(t, Sets()[1])
	names := map[string]string{}
	for id, d := range docs {
		names[strings.Join(toolsearch.Words(d.Name), " ")] = id
	}
	for _, w := range toolsearch.Vocabulary() {
		if id, ok := names[strings.Join(toolsearch.Words(w), " ")]; ok {
			t.Errorf("concept word %q is the name of %s", w, id)
		}
	}
}
