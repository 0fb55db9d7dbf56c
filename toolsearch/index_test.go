package toolsearch

import (
	"fmt"
	"strings"
	"testing"
)

var sample = []Doc{
	{Server: "kubernetes", Name: "kubectl_scale", Description: "Scale a Kubernetes deployment", Params: []Param{{"replicas", "Number of replicas"}}},
	{Server: "kubernetes", Name: "kubectl_logs", Description: "Get logs from Kubernetes resources"},
	{Server: "kubernetes", Name: "kubectl_get", Description: "Get or list Kubernetes resources by resource type"},
	{Server: "github", Name: "merge_pull_request", Description: "Merge a pull request"},
	{Server: "github", Name: "create_issue", Description: "Create a new issue in a GitHub repository"},
	{Server: "gitlab", Name: "create_issue", Description: "Create a new issue in a GitLab project"},
	{Server: "slack", Name: "slack_post_message", Description: "Post a new message to a Slack channel"},
}

func TestSearch(t *testing.T) {
	ix := Build(sample)
	for _, c := range []struct {
		q, want, why string
	}{
		{"kubectl_scale", "kubernetes.kubectl_scale", "name:exact"},
		{"kubectl-sc", "kubernetes.kubectl_scale", "name:prefix"},
		{"bump web to 5 replicas", "kubernetes.kubectl_scale", "(≈bump)"},
		{"land PR 42", "github.merge_pull_request", "(≈land)"},
		{"file a bug on gitlab", "gitlab.create_issue", "server:gitlab"},
		{"tell #deploys the release is out", "slack.slack_post_message", "(≈tell)"},
	} {
		hits := ix.Search(c.q, 3)
		if len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("Search(%q) = %v, want %s first", c.q, hits, c.want)
			continue
		}
		if !strings.Contains(strings.Join(hits[0].Why, " "), c.why) {
			t.Errorf("Search(%q) why %q, want %q in it", c.q, hits[0].Why, c.why)
		}
	}
	if hits := ix.Search("", 5); len(hits) != 0 {
		t.Errorf("empty query: %v", hits)
	}
	if hits := ix.Search("zebra quantum", 5); len(hits) != 0 {
		t.Errorf("no shared word: %v", hits)
	}
}

// TestAbbreviations: a word that begins a tool's word, or that a tool's
// word begins, finds it; a word of the concept table keeps its own meaning.
func TestAbbreviations(t *testing.T) {
	ix := Build([]Doc{
		{Server: "s", Name: "find_organizations", Description: "Find organizations the user can see"},
		{Server: "s", Name: "show_config", Description: "Show the server's config"},
		{Server: "s", Name: "list_tables", Description: "List the tables of a database"},
	})
	for _, c := range []struct{ q, want string }{
		{"my orgs", "s.find_organizations"},
		{"the configuration", "s.show_config"},
	} {
		if hits := ix.Search(c.q, 1); len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("Search(%q) = %v, want %s first", c.q, hits, c.want)
		}
	}
	if exps := ix.expansions("tab"); len(exps) != 0 {
		t.Errorf("tab, a concept word, expands to %v", exps)
	}
}

func TestReplaceServer(t *testing.T) {
	ix := Build(sample)
	ix.ReplaceServer("slack", []Doc{{Server: "slack", Name: "slack_add_reaction", Description: "Add a reaction emoji"}})
	if hits := ix.Search("post message", 5); len(hits) > 0 && hits[0].ID == "slack.slack_post_message" {
		t.Errorf("removed tool still found: %v", hits)
	}
	if hits := ix.Search("thumbs up", 1); len(hits) == 0 || hits[0].ID != "slack.slack_add_reaction" {
		t.Errorf("added tool not found: %v", hits)
	}
	if n := len(ix.Docs()); n != len(sample) {
		t.Errorf("%d docs after replace, want %d", n, len(sample))
	}
}

// TestReplaceServerMatchesBuild: what ReplaceServer keeps of the other
// servers' reading ranks exactly as a fresh Build of the same tools.
func TestReplaceServerMatchesBuild(t *testing.T) {
	more := []Doc{
		{Server: "github", Name: "list_issues", Description: "List issues in a GitHub repository"},
		{Server: "github", Name: "get_issue", Description: "Get details of a specific issue"},
	}
	ix := Build(sample)
	ix.ReplaceServer("github", more)
	var want []Doc
	for _, d := range sample {
		if d.Server != "github" {
			want = append(want, d)
		}
	}
	fresh := Build(append(want, more...))
	for _, q := range []string{"what open issues are there", "file a bug on gitlab", "bump web to 5 replicas", "tell #ops"} {
		a, b := ix.Search(q, 5), fresh.Search(q, 5)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: after ReplaceServer %v, fresh Build %v", q, a, b)
		}
	}
}

func TestBaselines(t *testing.T) {
	if hits := Exact(sample, "create_issue", 5); len(hits) != 2 || hits[0].Why[0] != "name:exact" {
		t.Errorf("Exact(create_issue) = %v", hits)
	}
	if hits := Exact(sample, "kubectl", 5); len(hits) != 3 {
		t.Errorf("Exact(kubectl) = %v, want the three kubectl tools by substring", hits)
	}
	// BM25 has no stemming and no concepts: a paraphrase with no shared
	// word finds nothing, which is the gap the index closes.
	if hits := NewBM25(sample).Search("bump web replicas", 5); len(hits) != 0 {
		t.Errorf("BM25 found %v for a paraphrase", hits)
	}
	if hits := NewBM25(sample).Search("merge pull request", 1); len(hits) != 1 || hits[0].ID != "github.merge_pull_request" {
		t.Errorf("BM25(merge pull request) = %v", hits)
	}
}
