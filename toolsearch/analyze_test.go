package toolsearch

import (
	"strings"
	"testing"
)

// TestQueryShapes pins how the forms agents write are read: what a shape
// stands for becomes a word of the task, and values count as arguments.
func TestQueryShapes(t *testing.T) {
	type want struct {
		stem   string
		weight float64
		unit   bool
	}
	for _, c := range []struct {
		q    string
		want []want
	}{
		{"show me what's in config/app.yaml", []want{{"file", 1, true}, {"yaml", argWeight, false}}},
		{"go to https://example.com/login", []want{{"url", 1, true}, {"example", argWeight, false}}},
		{"open example.com", []want{{"url", 1, true}}},
		{"list src/components/", []want{{"directory", 1, true}}},
		{"ls src/lib", []want{{"path", 1, true}}},
		{"tell #deploys it shipped", []want{{"channel", 1, true}, {"deploy", argWeight, false}, {"ship", 1, true}}},
		{"ask @priya", []want{{"user", 1, true}, {"priya", argWeight, false}}},
		{"scale web to 5 replicas", []want{{"5", numberWeight, false}, {"replica", 1, true}}},
		{`post "deploy done" now`, []want{{"deploy", argWeight, false}, {"done", argWeight, false}, {"now", 1, true}}},
		{"note that Alice owns billing", []want{{"note", 1, true}, {"alice", argWeight, false}}},
		{"drop that link", []want{{"link", 1, true}}},
		{"file a bug about the login page", []want{{"bug", 1, true}, {"login", argWeight, false}}},
		{"e.g. this", nil},
		{"move cus_77 to premium", []want{{"cus", argWeight, false}, {"premium", 1, true}}},
		{"who is U024BE7LH", []want{{"u", 1, false}, {"lh", numberWeight, false}}},
		{"refund pi_3NxQ2", []want{{"pi", argWeight, false}, {"nx", numberWeight, false}}},
		{"describe node worker-3", []want{{"worker", argWeight, false}, {"node", 1, true}}},
		{"is crawl 7f3a9c done", []want{{"f", 1, false}, {"crawl", 1, true}}},
		{"list k8s pods", []want{{"pod", 1, true}}},
		{"load localhost:5173 now", []want{{"url", 1, true}}},
		{"open 127.0.0.1:8080", []want{{"url", 1, true}}},
		{"did CI pass on #812", []want{{"issu", cueWeight, false}, {"812", numberWeight, false}}},
		{"comment on acme/api#77", []want{{"issu", cueWeight, false}}},
		{"put a :tada: on it", []want{{"emoji", cueWeight, false}, {"tada", argWeight, false}}},
		{"invite billing@globex.com", []want{{"email", cueWeight, false}, {"bill", argWeight, false}}},
		{"what is at 51.5007,-0.1246", []want{{"coordinat", cueWeight, false}}},
	} {
		ws := queryWords(c.q)
		for _, w := range c.want {
			w.stem = Stem(w.stem)
			found := false
			for _, x := range ws {
				if x.stem == w.stem {
					found = true
					if x.weight != w.weight || x.unit != w.unit {
						t.Errorf("%q: %s weight %v unit %v, want %v %v", c.q, w.stem, x.weight, x.unit, w.weight, w.unit)
					}
				}
			}
			if !found {
				t.Errorf("%q: no word %q in %+v", c.q, w.stem, ws)
			}
		}
	}
	for _, w := range queryWords("e.g. this") {
		if w.stem == "file" || w.stem == "url" {
			t.Errorf("e.g. read as a %s", w.stem)
		}
	}
}

// TestPhrases: a phrase yields its concepts and silences its words' own,
// and a phrase with stopwords matches only word for word.
func TestPhrases(t *testing.T) {
	ids := func(q string) string {
		spans, _ := matchConcepts(queryWords(q))
		var out []string
		for _, sp := range spans {
			out = append(out, sp.id)
		}
		return " " + strings.Join(out, " ") + " "
	}
	for _, c := range []struct{ q, has, hasNot string }{
		{"file a bug", " @create ", " @file "},
		{"file a bug", " @issue ", " @file "},
		{"open an issue", " @create ", " @list "},
		{"what open issues are there", " @issue ", " @create "},
		{"what's in the readme", " @read ", " @create "},
		{"go to the docs site", " @navigate ", " @back "},
		{"go back", " @back ", " @navigate "},
		{"is it reachable at all", " @health ", " @list "},
	} {
		got := ids(c.q)
		if !strings.Contains(got, c.has) || strings.Contains(got, c.hasNot) {
			t.Errorf("%q yields%s; want %s and not %s", c.q, got, c.has, c.hasNot)
		}
	}
}

// TestEverydayServerName: a server named with an everyday word is meant
// only when the task says it is a server.
func TestEverydayServerName(t *testing.T) {
	ix := Build([]Doc{
		{Server: "everything", Name: "echo", Description: "Echoes back the input"},
		{Server: "everything", Name: "get-sum", Description: "Returns the sum of two numbers"},
		{Server: "memory", Name: "read_graph", Description: "Read the entire knowledge graph"},
		{Server: "memory", Name: "search_nodes", Description: "Search for nodes in the knowledge graph"},
	})
	if hits := ix.Search("dump everything you remembered", 1); len(hits) == 0 || hits[0].ID != "memory.read_graph" {
		t.Errorf("everyday word: %v, want memory.read_graph", hits)
	}
	if hits := ix.Search("add two numbers with the everything server", 1); len(hits) == 0 || hits[0].ID != "everything.get-sum" {
		t.Errorf("named server: %v, want everything.get-sum", hits)
	}
	if !ambiguousName("everything") || ambiguousName("memory") || ambiguousName("github") {
		t.Error("ambiguousName: want everything only")
	}
}

// TestSharedPrefix: the word most of a server's tools start with moves to
// the server field, so the names differ by what the tools do.
func TestSharedPrefix(t *testing.T) {
	ix := Build([]Doc{
		{Server: "playwright", Name: "browser_navigate", Description: "Navigate to a URL"},
		{Server: "playwright", Name: "browser_navigate_back", Description: "Go back to the previous page"},
		{Server: "playwright", Name: "browser_click", Description: "Click on a web page"},
		{Server: "slack", Name: "slack_post_message", Description: "Post a message"},
		{Server: "slack", Name: "slack_list_channels", Description: "List channels"},
	})
	for i, want := range []string{"navigate", "navigate back", "click", "post message", "list channels"} {
		if got := texts(ix.an[i].fields[fName]); got != want {
			t.Errorf("%s: name field %q, want %q", ix.docs[i].ID(), got, want)
		}
	}
	if got := texts(ix.an[0].fields[fServer]); got != "playwright browser" {
		t.Errorf("server field %q", got)
	}
	if hits := ix.Search("go to https://example.com", 1); len(hits) == 0 || hits[0].ID != "playwright.browser_navigate" {
		t.Errorf("go to a URL: %v", hits)
	}
}

func texts(ws []word) string {
	var out []string
	for _, w := range ws {
		if !w.stop {
			out = append(out, w.text)
		}
	}
	return strings.Join(out, " ")
}
