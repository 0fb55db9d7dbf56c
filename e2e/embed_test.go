//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/embedding/embedtest"
)

// The daemon with an embedding endpoint configured: config.toml's [store]
// embed_* keys and the API key from the user manager's environment reach
// the memory tools; memories and queries are embedded and fused; an
// endpoint that goes down leaves both working by words, with warnings;
// doctor reports the endpoint. The endpoint is the protocol test server
// (embedtest, stand-in trigram vectors), not a real model: no embedding
// server can be installed here.
func TestDenseMemorySearch(t *testing.T) {
	const keyVar, key = "CONTEXTD_E2E_EMBED_KEY", "e2e-embed-key-5d1c0b9a8f7e6d5c"
	srv := embedtest.New(t, "ollama", "e2e-model", 256)
	srv.Key = key

	// The environment is set before the daemon that reads the
	// configuration starts (the next call's), and unset after it stops.
	mustCode(t, systemctl(t, "set-environment", keyVar+"="+key), 0)
	t.Cleanup(func() { systemctl(t, "unset-environment", keyVar) })
	withConfig(t, "[store]\nembed_api = \"ollama\"\nembed_url = \""+srv.URL+"\"\nembed_model = \"e2e-model\"\nembed_api_key_env = \""+keyVar+"\"")

	sess := []string{"CONTEXTD_SESSION=e2e-dense"}
	tag := randomFrom(t, "abcdefghijklmnopqrstuvwxyz", 8)
	// A project of this test's own (memories are kept per project): the
	// searches below rank among this run's memories only, whatever other
	// tests or earlier runs stored.
	proj := filepath.Join(env.home, "proj-dense-"+tag)
	mustCode(t, userSh(t, "mkdir -p "+proj+"/.git"), 0)
	t.Cleanup(func() { userSh(t, "rm -rf "+proj) })
	memTool := func(name string, args ...string) envelope {
		t.Helper()
		return jsonToolAt(t, proj, sess, name, "", args...)
	}
	// What the daemon asked the endpoint to embed, less its probes of the
	// endpoint (they may come at any time).
	inputs := func() []string {
		var in []string
		for _, s := range srv.Inputs() {
			if s != embedProbeText {
				in = append(in, s)
			}
		}
		return in
	}
	store := func(title, description, content string) (string, envelope) {
		t.Helper()
		in := map[string]any{"title": title + " " + tag, "description": description, "content": content, "outcome": "success"}
		e := memTool("memory_store", "--json", asJSON(in))
		if e.Error != nil {
			t.Fatalf("memory_store: %+v", e.Error)
		}
		id := uuidRe.FindString(e.Data)
		if id == "" {
			t.Fatalf("memory_store printed no id: %q", e.Data)
		}
		return id, e
	}
	target, e := store("Raise the inotify watch limit", "When file system watchers stop seeing changes in a large repository.",
		"The default of 8192 user watches is too low for big trees: sysctl fs.inotify.max_user_watches=524288.")
	if len(e.Warnings) != 0 {
		t.Fatalf("memory_store with a working endpoint warned: %q", e.Warnings)
	}
	store("Connection pool exhausted by leaked transactions", "When requests hang waiting for a database connection.",
		"A transaction left open on an error path held its connection; always defer the rollback.")
	store("Slack notifications for failed pipelines", "When the team misses red builds.",
		"Post a message from the final CI stage only on failure, with a link to the job.")
	// Each memory was embedded, in the order stored, and nothing else (a
	// retry may repeat one).
	memories := []string{"Raise the inotify watch limit " + tag, "Connection pool exhausted by leaked transactions " + tag, "Slack notifications for failed pipelines " + tag}
	embedded := func(in []string) bool {
		next := 0
		for _, s := range in {
			switch {
			case next < len(memories) && strings.Contains(s, memories[next]):
				next++
			case next > 0 && strings.Contains(s, memories[next-1]):
			default:
				return false
			}
		}
		return next == len(memories)
	}
	stored := inputs()
	if !embedded(stored) {
		t.Fatalf("the endpoint was asked to embed %q, want the 3 memories in order", stored)
	}

	// No word of the query is in the target: only its vector finds it.
	const query = "filesystem notifications exhausted"
	found := memTool("memory_search", "--json", asJSON(map[string]any{"query": query, "limit": 3}))
	if found.Error != nil || len(found.Warnings) != 0 || !strings.Contains(found.Data, target) {
		t.Fatalf("fused memory_search does not find %s: %+v", target, found)
	}
	if in := inputs(); len(in) <= len(stored) || !slices.Equal(in[:len(stored)], stored) ||
		slices.ContainsFunc(in[len(stored):], func(s string) bool { return s != query }) {
		t.Fatalf("the query was not embedded, or not alone (after the memories %q): %q", stored, in)
	}

	// doctor: the endpoint and its probe.
	r := runAs(t, "", []string{keyVar + "=" + key}, "", filepath.Join(env.bin, "contextd"), "doctor")
	mustContain(t, "doctor", r.stdout, "memory search", "lexical + dense (ollama at "+srv.URL+", model e2e-model): probe answered in ", "256 dimensions")

	// The endpoint goes down: memories are still stored and found, by words.
	srv.Close()
	id, e := store("Quarantine flaky tests", "When a test fails one run in fifty.", "Move it to a quarantine job and file an issue.")
	if !slices.ContainsFunc(e.Warnings, func(w string) bool { return strings.Contains(w, "has no dense vector") }) {
		t.Fatalf("memory_store with the endpoint down: warnings %q", e.Warnings)
	}
	found = memTool("memory_search", "--json", asJSON(map[string]any{"query": "quarantine flaky tests " + tag}))
	if found.Error != nil || !strings.Contains(found.Data, id) ||
		!slices.ContainsFunc(found.Warnings, func(w string) bool { return strings.Contains(w, "ranked by words only") }) {
		t.Fatalf("memory_search with the endpoint down: %+v", found)
	}
	for _, w := range append(e.Warnings, found.Warnings...) {
		if strings.Contains(w, key) {
			t.Errorf("a warning shows the API key: %q", w)
		}
	}
	if log := daemonLog(t); strings.Contains(log, key) {
		t.Errorf("the daemon's log holds the API key")
	}
}

// embedProbeText is what the daemon and doctor embed to probe an endpoint
// (daemon/embedding's Probe).
const embedProbeText = "contextd probe: is this endpoint an embedding model?"
