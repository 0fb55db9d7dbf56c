package state

// The memory tools with dense embeddings, on the real SQLite store, with
// vectors from embedtest.Trigrams (a deterministic stand-in for a model)
// served through the same httptest endpoint the client protocol tests use.
// No real embedding model runs here: what this shows is the wiring (what is
// embedded, when, what a failure does) and the fusion path end to end, not
// the quality of any real model.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/embedding/embedtest"
	"github.com/contextd/contextd/daemon/respond"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/storetest"
	"github.com/contextd/contextd/scrub"
)

const (
	testDims   = 256
	testAPIKey = "sk-state-test-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
)

// embedServer starts an endpoint of api and a client for it.
func embedServer(t *testing.T, api string, o embedding.Options) (*embedtest.Server, *embedding.Client) {
	t.Helper()
	srv := embedtest.New(t, api, "test-model", testDims)
	o.API, o.URL, o.Model = api, srv.BaseURL(), "test-model"
	if o.RetryAfter == 0 {
		o.RetryAfter = -1 // every call tries: the tests count requests
	}
	c, err := embedding.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// warnedEnv is a call's environment that keeps the warnings its calls
// returned, added up.
type warnedEnv struct {
	*Env
	Warnings []string
}

// callWith runs tool from the tools of cfg (call uses the defaults).
func callWith(t *testing.T, cfg *Config, env *warnedEnv, tool string, input obj) (string, error) {
	t.Helper()
	raw := mustJSON(t, input)
	for _, tl := range cfg.Tools() {
		if tl.Name() != tool {
			continue
		}
		c, err := tl.Decode(raw)
		if err != nil {
			return "", err
		}
		var out bytes.Buffer
		env.Out = &out
		o := c.Run(context.Background(), env.Env)
		env.Warnings = append(env.Warnings, o.Warnings...)
		return out.String(), o.Err
	}
	t.Fatalf("no tool %s", tool)
	return "", nil
}

func mustCallWith(t *testing.T, cfg *Config, env *warnedEnv, tool string, input obj) string {
	t.Helper()
	out, err := callWith(t, cfg, env, tool, input)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, input, err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// denseOnly returns the ids the store ranks first for the vector of text
// alone (no words): the memories that have a vector close to it.
func denseOnly(t *testing.T, st store.Store, projects []string, text string, limit int) []string {
	t.Helper()
	hits, err := st.SearchMemories(context.Background(), store.MemoryQuery{
		Projects: projects, Vector: embedtest.Trigrams(text, testDims), Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Memory.ID)
	}
	return ids
}

// memory_store embeds the stored text and keeps the vector; memory_search
// embeds the query; both APIs.
func TestMemoryToolsEmbed(t *testing.T) {
	for _, api := range []string{embedding.Ollama, embedding.OpenAI} {
		t.Run(api, func(t *testing.T) {
			srv, c := embedServer(t, api, embedding.Options{})
			cfg := &Config{Embedder: c}
			st := openStore(t)
			env := &warnedEnv{Env: newEnv(st, "/p", "s")}
			in := lesson("Raise the inotify watch limit", "When file system watchers stop seeing changes.",
				"sysctl fs.inotify.max_user_watches=524288")
			id := storedID(t, mustCallWith(t, cfg, env, "memory_store", in))
			if len(env.Warnings) != 0 {
				t.Errorf("warnings: %q", env.Warnings)
			}
			want := in["title"].(string) + "\n" + in["description"].(string) + "\n" + in["content"].(string)
			if got := srv.Inputs(); len(got) != 1 || got[0] != want {
				t.Fatalf("the endpoint was asked to embed %q, want %q", got, want)
			}
			if ids := denseOnly(t, st, []string{"/p"}, want, 1); !slices.Equal(ids, []string{id}) {
				t.Errorf("no stored vector: a dense-only search finds %q", ids)
			}

			out := mustCallWith(t, cfg, env, "memory_search", obj{"query": "filesystem notifications exhausted"})
			if !slices.Contains(searchIDs(out), id) {
				t.Errorf("memory_search: %q", out)
			}
			if got := srv.Inputs(); len(got) != 2 || got[1] != "filesystem notifications exhausted" {
				t.Errorf("the query was not embedded: %q", got)
			}
			if len(env.Warnings) != 0 {
				t.Errorf("warnings: %q", env.Warnings)
			}
		})
	}
}

// Without an Embedder nothing is embedded: no request, no vector, no
// warning. (The daemon sets one only when [store] embed_api is set:
// embedding.FromConfig returns nil for the defaults, tested in package embed.)
func TestMemoryToolsWithoutEmbedder(t *testing.T) {
	srv, _ := embedServer(t, embedding.Ollama, embedding.Options{})
	st := openStore(t)
	env := &warnedEnv{Env: newEnv(st, "/p", "s")}
	for _, cfg := range []*Config{nil, {}} {
		mustCallWith(t, cfg, env, "memory_store", lesson(fmt.Sprintf("Lesson %p", cfg), "When testing.", "content"))
		mustCallWith(t, cfg, env, "memory_search", obj{"query": "lesson"})
	}
	if srv.Requests() != 0 || len(env.Warnings) != 0 {
		t.Errorf("%d requests, warnings %q", srv.Requests(), env.Warnings)
	}
	if ids := denseOnly(t, st, []string{"/p"}, "Lesson", 5); len(ids) != 0 {
		t.Errorf("memories got vectors without an embedder: %q", ids)
	}
}

// Text that leaves the machine is scrubbed: the memory (as stored) and the
// query.
func TestEmbeddedTextIsScrubbed(t *testing.T) {
	sc, err := testScrubber()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "ghp_R8x2Lq7Vn4Tz9Wb3Kc6Md1Pf5Hs0Jy2Ga8Ue"
	srv, c := embedServer(t, embedding.Ollama, embedding.Options{})
	cfg := &Config{Embedder: c}
	env := &warnedEnv{Env: newEnv(openStore(t), "/p", "s")}
	env.Scrub = (&respond.Layer{Scrubber: sc, Vault: scrub.NewVault()}).Scrub
	mustCallWith(t, cfg, env, "memory_store", lesson("Token setup", "Use for CI.", "export GITHUB_TOKEN="+secret))
	mustCallWith(t, cfg, env, "memory_search", obj{"query": "where is " + secret + " used"})
	in := srv.Inputs()
	if len(in) != 2 {
		t.Fatalf("inputs %q", in)
	}
	for _, s := range in {
		if strings.Contains(s, secret) || !strings.Contains(s, "[REDACTED:") {
			t.Errorf("the endpoint got %q", s)
		}
	}
}

// A merge replaces the text; the store drops the old vector and
// memory_store computes the new one.
func TestMergeReembeds(t *testing.T) {
	srv, c := embedServer(t, embedding.Ollama, embedding.Options{})
	cfg := &Config{Embedder: c}
	st := openStore(t)
	env := &warnedEnv{Env: newEnv(st, "/p", "s")}
	id := storedID(t, mustCallWith(t, cfg, env, "memory_store", lesson("Pin the base image", "When builds drift.", "Use a digest.")))
	out := mustCallWith(t, cfg, env, "memory_store", lesson("Pin the base image", "When builds drift.", "Pin alpine by sha256 digest, not a tag."))
	if !strings.HasPrefix(out, "updated "+id) {
		t.Fatalf("second store: %q", out)
	}
	newText := "Pin the base image\nWhen builds drift.\nPin alpine by sha256 digest, not a tag."
	if in := srv.Inputs(); len(in) != 2 || in[1] != newText {
		t.Fatalf("the merged text was not embedded: %q", in)
	}
	// The stored vector is the new text's: the most similar to it of all.
	hits, err := st.SearchMemories(context.Background(), store.MemoryQuery{
		Projects: []string{"/p"}, Vector: embedtest.Trigrams(newText, testDims), Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Memory.ID != id {
		t.Fatalf("dense search: %v, %v", hits, err)
	}
	// memory_feedback and memory_get do not change the text: no request,
	// and the vector stays.
	mustCallWith(t, cfg, env, "memory_feedback", obj{"id": id, "helpful": true})
	mustCallWith(t, cfg, env, "memory_get", obj{"id": id})
	if srv.Requests() != 2 {
		t.Errorf("%d requests after feedback and get, want 2", srv.Requests())
	}
	if ids := denseOnly(t, st, []string{"/p"}, newText, 1); !slices.Equal(ids, []string{id}) {
		t.Errorf("the vector did not survive feedback: %q", ids)
	}
}

// Every failure of the endpoint leaves memory_store storing and
// memory_search searching by words, each with a warning that says why, and
// no warning shows the API key.
func TestEmbedFailuresAreWarnings(t *testing.T) {
	tests := []struct {
		name  string
		setup func(srv *embedtest.Server, o *embedding.Options)
		warn  string
	}{
		{"endpoint down", func(srv *embedtest.Server, o *embedding.Options) { srv.Close() }, "connection refused"},
		{"timeout", func(srv *embedtest.Server, o *embedding.Options) {
			o.Timeout = 100 * time.Millisecond
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			})
		}, "no answer within 100ms"},
		{"bad JSON", func(srv *embedtest.Server, o *embedding.Options) {
			srv.SetFault(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"embeddings": [[0.1,`) })
		}, "malformed embedding response"},
		{"wrong dimension", func(srv *embedtest.Server, o *embedding.Options) { o.Dimensions = 768 }, "embedding dimension changed"},
		{"HTTP 401", func(srv *embedtest.Server, o *embedding.Options) { srv.Key = "sk-another-key" }, "HTTP 401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := embedtest.New(t, embedding.Ollama, "test-model", testDims)
			o := embedding.Options{API: embedding.Ollama, URL: srv.BaseURL(), Model: "test-model", APIKey: testAPIKey, RetryAfter: -1}
			tt.setup(srv, &o)
			c, err := embedding.New(&o)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &Config{Embedder: c}
			st := openStore(t)
			env := &warnedEnv{Env: newEnv(st, "/p", "s")}

			out, err := callWith(t, cfg, env, "memory_store", lesson("Quarantine flaky tests", "When a test fails one run in fifty.", "Move it to a quarantine job and file an issue."))
			if err != nil {
				t.Fatalf("memory_store failed with the endpoint failing: %v", err)
			}
			id := storedID(t, out)
			if m, err := st.GetMemory(context.Background(), id, []string{"/p"}); err != nil || m.Title != "Quarantine flaky tests" {
				t.Fatalf("not stored: %v, %v", m, err)
			}
			if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], tt.warn) || !strings.Contains(env.Warnings[0], "found by its words") {
				t.Errorf("memory_store warnings %q, want one saying %q", env.Warnings, tt.warn)
			}

			env.Warnings = nil
			out, err = callWith(t, cfg, env, "memory_search", obj{"query": "flaky test quarantine"})
			if err != nil || !slices.Contains(searchIDs(out), id) {
				t.Errorf("memory_search with the endpoint failing: %q, %v", out, err)
			}
			if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "ranked by words only") || !strings.Contains(env.Warnings[0], tt.warn) {
				t.Errorf("memory_search warnings %q", env.Warnings)
			}
			for _, w := range env.Warnings {
				if strings.Contains(w, testAPIKey) {
					t.Errorf("a warning shows the API key: %q", w)
				}
			}
		})
	}
}

// A query that shares no word with a memory but shares word pieces (its
// vector neighbourhood, for the stand-in embedding) is found with fusion,
// and is not without: lexical search finds only memories holding a word of
// the query, and two others do.
func TestFusionFindsByVector(t *testing.T) {
	memories := []obj{
		lesson("Raise the inotify watch limit", "When file system watchers stop seeing changes in a large repository.",
			"The default of 8192 user watches is too low for big trees: sysctl fs.inotify.max_user_watches=524288."),
		lesson("Connection pool exhausted by leaked transactions", "When requests hang waiting for a database connection.",
			"A transaction left open on an error path held its connection; always defer the rollback."),
		lesson("Slack notifications for failed pipelines", "When the team misses red builds.",
			"Post a message from the final CI stage only on failure, with a link to the job."),
		lesson("Prefer table-driven tests for parsers", "When a function has many input/output cases.",
			"A slice of cases with t.Run per case made each regression one line."),
		lesson("Use --force-with-lease instead of --force", "When pushing a rewritten branch.",
			"A plain --force overwrote a colleague's commit."),
	}
	const query = "filesystem notifications exhausted"
	rank := func(t *testing.T, cfg *Config) (target string, ids []string) {
		st := openStore(t)
		env := &warnedEnv{Env: newEnv(st, "/p", "s")}
		for i, m := range memories {
			id := storedID(t, mustCallWith(t, cfg, env, "memory_store", m))
			if i == 0 {
				target = id
			}
		}
		ids = searchIDs(mustCallWith(t, cfg, env, "memory_search", obj{"query": query}))
		if len(env.Warnings) != 0 {
			t.Errorf("warnings %q", env.Warnings)
		}
		return target, ids
	}
	target, lexical := rank(t, nil)
	if slices.Contains(lexical, target) {
		t.Fatalf("lexical search already finds the memory (%q): the case shows nothing", lexical)
	}
	if len(lexical) != 2 {
		t.Errorf("lexical search found %d memories, want the 2 that share a word", len(lexical))
	}
	_, c := embedServer(t, embedding.Ollama, embedding.Options{})
	target, fused := rank(t, &Config{Embedder: c})
	i := slices.Index(fused, target)
	if i < 0 {
		t.Fatalf("with fusion the memory is still not found: %q", fused)
	}
	t.Logf("%q: the inotify lesson is not found lexically (%d other hits), rank %d of %d fused", query, len(lexical), i+1, len(fused))
}

// TestRetrievalFused measures recall@3 on the store's retrieval set
// (storetest.RetrievalSet) through memory_store and memory_search, on the
// real SQLite store, lexical alone and fused with the stand-in embedding,
// and reports both. The stand-in knows word pieces, not meaning: the
// number says what fusion with a weak ranking does to a strong lexical one
// on this set, not what a real model would give.
func TestRetrievalFused(t *testing.T) {
	memories, queries := storetest.RetrievalSet()
	const project = "/home/dev/src/retrieval"
	measure := func(t *testing.T, cfg *Config) (recall float64, misses []string) {
		st := openStore(t)
		env := &warnedEnv{Env: newEnv(st, project, "s")}
		byKey := map[string]string{}
		for _, m := range memories {
			in := obj{"title": m.Title, "description": m.Description, "content": m.Content, "outcome": m.Outcome, "tags": m.Tags}
			if m.Global {
				in["scope"] = "global"
			}
			out := mustCallWith(t, cfg, env, "memory_store", in)
			if !strings.HasPrefix(out, "stored ") {
				t.Fatalf("%q was merged: %q", m.Title, out)
			}
			byKey[m.Key] = storedID(t, out)
		}
		found := 0
		for _, q := range queries {
			ids := searchIDs(mustCallWith(t, cfg, env, "memory_search", obj{"query": q.Text, "limit": 3}))
			if slices.Contains(ids, byKey[q.Want]) {
				found++
			} else {
				misses = append(misses, fmt.Sprintf("%q (wanted %s)", q.Text, q.Want))
			}
		}
		if len(env.Warnings) != 0 {
			t.Errorf("warnings: %q", env.Warnings)
		}
		return float64(found) / float64(len(queries)), misses
	}
	lexical, lexMisses := measure(t, nil)
	srv, c := embedServer(t, embedding.Ollama, embedding.Options{})
	fused, fusedMisses := measure(t, &Config{Embedder: c})
	if want := len(memories) + len(queries); srv.Requests() != want {
		t.Errorf("%d embedding requests, want %d (one per memory and per query)", srv.Requests(), want)
	}
	t.Logf("recall@3 on %d queries, %d memories: lexical %.3f (%d found), fused with trigram vectors %.3f (%d found)",
		len(queries), len(memories), lexical, len(queries)-len(lexMisses), fused, len(queries)-len(fusedMisses))
	t.Logf("lexical misses: %s", strings.Join(lexMisses, "; "))
	t.Logf("fused misses: %s", strings.Join(fusedMisses, "; "))
	// Fusion must not undo the lexical ranking's floor on this set.
	if fused < storetest.RecallFloor {
		t.Errorf("fused recall@3 %.3f is below the store's floor %.2f", fused, storetest.RecallFloor)
	}
}
