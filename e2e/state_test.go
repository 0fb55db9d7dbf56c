//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// jsonToolAt is jsonTool run from dir (another project).
func jsonToolAt(t *testing.T, dir string, vars []string, name, stdin string, args ...string) envelope {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", name, name)
	r := runAs(t, dir, vars, stdin, append([]string{link, "--format", "json"}, args...)...)
	var e envelope
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatalf("%s %v: not an envelope: %v\n%s", name, args, err, r)
	}
	return e
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// otherProject makes a second project (its own git top level) for the test
// user and returns its path.
func otherProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(env.home, "proj-other")
	mustCode(t, userSh(t, "mkdir -p "+dir+"/.git"), 0)
	return dir
}

// Memories outlive the daemon, are found from a new session of the same
// project, and never from another project; global ones from both.
func TestMemoryAcrossRestart(t *testing.T) {
	tag := randomFrom(t, "abcdefghijklmnopqrstuvwxyz", 10)
	store := func(dir string, sess, title, scope string) string {
		t.Helper()
		in := map[string]any{
			"title":       title,
			"description": "Use when a Go integration test times out waiting for its database; not for unit tests.",
			"content":     "The test container starts before Postgres accepts connections. Wait on pg_isready in the test's setup (" + tag + ").",
			"outcome":     "failure",
			"tags":        []string{"go", "tests", tag},
		}
		if scope != "" {
			in["scope"] = scope
		}
		e := jsonToolAt(t, dir, []string{"CONTEXTD_SESSION=" + sess}, "memory_store", "", "--json", asJSON(in))
		if e.Error != nil {
			t.Fatalf("memory_store: %+v", e.Error)
		}
		id := uuidRe.FindString(e.Data)
		if id == "" {
			t.Fatalf("memory_store printed no id: %q", e.Data)
		}
		return id
	}
	local := store(env.project, "e2e-mem-a", "Integration tests hang until Postgres is ready "+tag, "")
	global := store(env.project, "e2e-mem-a", "Container databases need a readiness wait "+tag, "global")

	// A new daemon: the store is read back from its file.
	before := mainPID(t)
	mustCode(t, systemctl(t, "stop", "contextd.service"), 0)
	query := asJSON(map[string]any{"query": "go integration test stuck waiting for postgres database " + tag, "limit": 5})
	found := jsonToolAt(t, env.project, []string{"CONTEXTD_SESSION=e2e-mem-b"}, "memory_search", "", "--json", query)
	if after := mainPID(t); after == before || after == 0 {
		t.Fatalf("the daemon was not restarted (MainPID %d -> %d)", before, after)
	}
	if !strings.Contains(found.Data, local) || !strings.Contains(found.Data, global) {
		t.Fatalf("memory_search from a new session after a restart does not find %s and %s:\n%s", local, global, found.Data)
	}
	if found.TokensUsed > 500 {
		t.Errorf("memory_search answer cost %d tokens, budget 500", found.TokensUsed)
	}

	other := otherProject(t)
	o := jsonToolAt(t, other, []string{"CONTEXTD_SESSION=e2e-mem-c"}, "memory_search", "", "--json", query)
	if strings.Contains(o.Data, local) {
		t.Fatalf("another project's search found the project memory %s:\n%s", local, o.Data)
	}
	if !strings.Contains(o.Data, global) {
		t.Fatalf("another project's search does not find the global memory %s:\n%s", global, o.Data)
	}
	g := jsonToolAt(t, other, []string{"CONTEXTD_SESSION=e2e-mem-c"}, "memory_get", "", "--json", asJSON(map[string]string{"id": local}))
	if g.Error == nil || g.Error.Code != "CTXD-E070" {
		t.Fatalf("memory_get of another project's memory: %+v", g)
	}
	full := jsonToolAt(t, env.project, nil, "memory_get", "", "--json", asJSON(map[string]string{"id": local}))
	if full.Error != nil || !strings.Contains(full.Data, "pg_isready") {
		t.Fatalf("memory_get in its project: %+v", full)
	}
}

// A checkpoint comes back at each level within its budget; the full level
// pages with --continue and the pages hold all of it.
func TestCheckpointLevels(t *testing.T) {
	sess := []string{"CONTEXTD_SESSION=e2e-ckpt"}
	summary := "Migrating the billing service to the new queue; tests pass except the retry test."
	context := strings.Repeat("Decision: keep the old consumer behind a flag until the backfill is done. Files: billing/queue.go, billing/retry_test.go.\n", 40)
	var full strings.Builder
	for i := 0; full.Len() < 200<<10; i++ {
		fmt.Fprintf(&full, "step %05d: ran the backfill for shard %d, 1200 rows, no errors\n", i, i%64)
	}
	// The full state comes on stdin (it may be far larger than a command line).
	saved := jsonTool(t, sess, "checkpoint_save", full.String(), "--summary", summary, "--context", context, "--name", "billing-queue")
	if saved.Error != nil {
		t.Fatalf("checkpoint_save: %+v", saved.Error)
	}
	id := uuidRe.FindString(saved.Data)
	if id == "" {
		t.Fatalf("checkpoint_save printed no id: %q", saved.Data)
	}

	s := jsonTool(t, sess, "checkpoint_restore", "", "--json", asJSON(map[string]any{"id": id, "level": "summary"}))
	if s.Error != nil || !strings.Contains(s.Data, summary) || strings.Contains(s.Data, "Decision:") || s.TokensUsed > 300+100 {
		t.Fatalf("summary level (%d tokens): %+v", s.TokensUsed, s)
	}
	c := jsonTool(t, sess, "checkpoint_restore", "", "--json", asJSON(map[string]any{"latest": true}))
	if c.Error != nil || !strings.Contains(c.Data, "Decision:") || strings.Contains(c.Data, "step 00001") || c.Truncated || c.TokensUsed > 3500 {
		t.Fatalf("context level, the default (%d tokens, truncated %v): %.300s", c.TokensUsed, c.Truncated, c.Data)
	}
	f := jsonTool(t, sess, "checkpoint_restore", "", "--json", asJSON(map[string]any{"id": id, "level": "full"}))
	if f.Error != nil || !f.Truncated || f.Continue == "" || f.TokensUsed > 3500 {
		t.Fatalf("full level of 200 kB: truncated %v, %d tokens, continue %q", f.Truncated, f.TokensUsed, f.Continue)
	}
	var all strings.Builder
	for ref, n := f.Continue, 0; ref != ""; n++ {
		p := jsonTool(t, sess, "checkpoint_restore", "", "--continue", ref)
		if p.Error != nil || p.TokensUsed > 3500 {
			t.Fatalf("page %d: %d tokens, %+v", n, p.TokensUsed, p.Error)
		}
		all.WriteString(p.Data)
		ref = p.Continue
	}
	if !strings.Contains(all.String(), full.String()) {
		t.Fatalf("the pages (%d bytes) do not hold the full state (%d bytes)", all.Len(), full.Len())
	}
}

// Inside a branch, every response (here safe_bash's real output) counts
// against the branch's budget: responses are cut to what is left, warn past
// 80%, and once it is spent calls are refused until return, which reports
// the branch's figures.
func TestBranchBudget(t *testing.T) {
	sess := []string{"CONTEXTD_SESSION=e2e-branch-" + randomFrom(t, "abcdefghij", 6)}
	b := jsonTool(t, sess, "branch", "", "--json", `{"description":"find which shard fails the backfill","budget":1500}`)
	if b.Error != nil || uuidRe.FindString(b.Data) == "" {
		t.Fatalf("branch: %+v", b)
	}
	var spent int64
	refused := false
	var warned bool
	for i := 0; i < 6 && !refused; i++ {
		r := jsonTool(t, sess, "safe_bash", "", "seq 1 20000")
		if r.Error != nil {
			if r.Error.Code != "CTXD-E071" {
				t.Fatalf("call %d inside the branch: %+v", i, r.Error)
			}
			refused = true
			continue
		}
		if r.TokensUsed > 1500 {
			t.Fatalf("call %d: %d tokens, more than the branch's whole budget", i, r.TokensUsed)
		}
		spent += r.TokensUsed
		for _, w := range r.Warnings {
			warned = warned || strings.Contains(w, "branch")
		}
	}
	if !refused {
		t.Fatalf("six calls of seq 1 20000 (%d tokens) and none refused in a 1500-token branch", spent)
	}
	if !warned {
		t.Error("no response warned that the branch's budget was nearly spent")
	}
	if spent > 1500+100 {
		t.Errorf("the branch's responses cost %d tokens, budget 1500", spent)
	}
	ret := jsonTool(t, sess, "return", "", "--json", `{"summary":"shard 17 fails: its rows have a NULL tenant id"}`)
	if ret.Error != nil || !strings.Contains(ret.Data, "shard 17 fails") {
		t.Fatalf("return: %+v", ret)
	}
	if !strings.Contains(ret.Data, fmt.Sprint(spent)) {
		t.Errorf("return does not report the %d tokens the branch's responses cost:\n%s", spent, ret.Data)
	}
	t.Logf("1500-token branch: responses cost %d tokens before calls were refused; return said:\n%s", spent, ret.Data)
	after := jsonTool(t, sess, "safe_bash", "", "echo back in the main context")
	if after.Error != nil || !strings.Contains(after.Data, "back in the main context") {
		t.Fatalf("a call after return: %+v", after)
	}
}

// kill -9 of the daemon during a stream of writes loses none that were
// acknowledged.
func TestStoreSurvivesKill(t *testing.T) {
	tag := randomFrom(t, "abcdefghijklmnopqrstuvwxyz", 8)
	type ack struct {
		id   string
		sent time.Time // when the write was started
	}
	var mu sync.Mutex
	var acked []ack
	acks := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acked {
			if !a.sent.Before(after) {
				n++
			}
		}
		return n
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			in := asJSON(map[string]any{
				"title":       fmt.Sprintf("Lesson %d of the kill test %s", i, tag),
				"description": fmt.Sprintf("Use when checking crash safety, case %d; not otherwise.", i),
				"content":     fmt.Sprintf("Distinct content number %d about %s and shard %d.", i, tag, i*7919%1000),
				"outcome":     "success",
			})
			link := filepath.Join(env.project, ".claude", "tools", "memory_store", "memory_store")
			sent := time.Now()
			r := runAs(t, "", nil, "", link, "--json", in)
			if id := uuidRe.FindString(r.stdout); r.code == 0 && id != "" {
				mu.Lock()
				acked = append(acked, ack{id, sent})
				mu.Unlock()
			}
		}
	}()
	stopWriter := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	t.Cleanup(stopWriter)
	// Writes are acknowledged before the kill (however slow each one is)...
	began := time.Now()
	waitFor(t, 90*time.Second, "3 acknowledged writes before the kill", func() bool { return acks(time.Time{}) >= 3 })
	t.Logf("3 writes acknowledged in %s", time.Since(began).Round(time.Millisecond))
	mustCode(t, systemctl(t, "kill", "--kill-whom=main", "--signal=SIGKILL", "contextd.service"), 0)
	killed := time.Now()
	// ...and the stream goes on into a new daemon (Restart=on-failure, and
	// the socket holds the calls meanwhile): a write started after the kill
	// was acknowledged.
	waitFor(t, 90*time.Second, "a write started after the kill to be acknowledged", func() bool { return acks(killed) >= 1 })
	t.Logf("a write started after the kill acknowledged %s after it", time.Since(killed).Round(time.Millisecond))
	stopWriter()
	waitFor(t, 20*time.Second, "contextd.service to leave the failed/restart state", func() bool {
		s := serviceState(t)
		return s == "inactive" || s == "active" || s == "failed"
	})
	systemctl(t, "reset-failed", "contextd.service")
	mu.Lock()
	all := append([]ack(nil), acked...)
	mu.Unlock()
	for _, a := range all {
		g := jsonTool(t, nil, "memory_get", "", "--json", asJSON(map[string]string{"id": a.id}))
		if g.Error != nil {
			t.Fatalf("acknowledged memory %s lost after kill -9: %+v", a.id, g.Error)
		}
	}
	t.Logf("%d acknowledged writes (%d started after the kill), all present after kill -9", len(all), acks(killed))
}
