package daemon_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/httpapi"
)

// hookSecret is both automations' key: GitHub's as the raw bytes,
// Standard Webhooks' as whsec_ and its base64.
const hookSecret = "It's a Secret to Everybody"

// startHooks is a daemon with three automations on the same workspace:
// "ci" (GitHub) runs safe_bash printing two payload values passed by env;
// "std" (Standard Webhooks) does the same with a smaller body bound and
// keeps its answer as a memory;
// "slow" runs one delivery an hour.
func startHooks(t *testing.T) (*httpDaemon, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gh, std := filepath.Join(dir, "ci.secret"), filepath.Join(dir, "std.secret")
	if err := os.WriteFile(gh, []byte(hookSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(std, []byte("whsec_"+base64.StdEncoding.EncodeToString([]byte(hookSecret))), 0o600); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`
[[automations]]
name = "ci"
workspace = %[1]q
scheme = "github"
secret_file = %[2]q
tool = "safe_bash"
input = { command = 'printf "ref=%%s title=%%s\n" "$CONTEXTD_HOOK_REF" "$CONTEXTD_HOOK_TITLE"' }
env = { REF = "ref", TITLE = "title" }

[[automations]]
name = "std"
workspace = %[1]q
scheme = "standard"
secret_file = %[3]q
window = "5m"
max_body_bytes = 1024
tool = "safe_bash"
input = { command = 'printf "ref=%%s\n" "$CONTEXTD_HOOK_REF"' }
env = { REF = "ref" }
memory = { title = "std run", description = "what the std automation printed" }

[[automations]]
name = "slow"
workspace = %[1]q
scheme = "github"
secret_file = %[2]q
rate = "1/h"
tool = "safe_bash"
input = { command = "true" }
`, ws, gh, std)
	cfg, err := config.Parse([]byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	return startHTTPConfig(t, cfg), ws
}

// github signs body as GitHub does, for delivery id.
func github(id string, body []byte) []string {
	m := hmac.New(sha256.New, []byte(hookSecret))
	m.Write(body)
	return []string{"X-Hub-Signature-256", "sha256=" + hex.EncodeToString(m.Sum(nil)),
		"X-GitHub-Delivery", id, "X-GitHub-Event", "push", "Content-Type", "application/json"}
}

// standard signs body as a Standard Webhooks sender does at ts.
func standard(id string, ts time.Time, body []byte) []string {
	sec := strconv.FormatInt(ts.Unix(), 10)
	m := hmac.New(sha256.New, []byte(hookSecret))
	fmt.Fprintf(m, "%s.%s.%s", id, sec, body)
	return []string{"webhook-id", id, "webhook-timestamp", sec,
		"webhook-signature", "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), "Content-Type", "application/json"}
}

// problem decodes a refusal and checks its status and code.
func problem(t *testing.T, st int, b []byte, status int, class *catalog.Class) catalog.Problem {
	t.Helper()
	var p catalog.Problem
	if err := json.Unmarshal(b, &p); err != nil || st != status || p.Code != class.Code {
		t.Fatalf("got %d %s, want %d %s", st, b, status, class.Code)
	}
	return p
}

// waitDone polls a call's record until it is no longer running: a bounded
// number of times, not a deadline.
func (d *httpDaemon) waitDone(id string) httpapi.CallRecord {
	d.t.Helper()
	var rec httpapi.CallRecord
	for range 600 {
		st, b := d.do("GET", "/v1/calls/"+id, nil)
		if err := json.Unmarshal(b, &rec); st != 200 || err != nil {
			d.t.Fatalf("GET /v1/calls/%s: %d %s", id, st, b)
		}
		if rec.State != "running" {
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.t.Fatalf("call %s still running", id)
	return rec
}

// A signed delivery runs its call after the answer: the payload's values
// reach the command as variables, as text, never as shell.
func TestHookGitHub(t *testing.T) {
	d, ws := startHooks(t)
	body := []byte(`{"ref":"refs/heads/main","title":"$(touch pwned) ` + "`touch pwned`" + `"}`)
	st, b := d.do("POST", "/v1/hooks/ci", body, github("d-1", body)...)
	var acc httpapi.HookAccepted
	if err := json.Unmarshal(b, &acc); st != http.StatusAccepted || err != nil || acc.CallID == "" {
		t.Fatalf("POST /v1/hooks/ci: %d %s", st, b)
	}
	if acc.StatusURL != "/v1/calls/"+acc.CallID {
		t.Errorf("status_url %q", acc.StatusURL)
	}
	rec := d.waitDone(acc.CallID)
	if rec.State != "done" || rec.Via != "hook:ci" || rec.Session != "hook-ci" || rec.Response == nil {
		t.Fatalf("record: %+v", rec)
	}
	want := "ref=refs/heads/main title=$(touch pwned) `touch pwned`"
	if got := strings.TrimSpace(rec.Response.Output); got != want || rec.Response.Result.ExitCode != 0 {
		t.Errorf("output %q (exit %d), want %q", got, rec.Response.Result.ExitCode, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); !os.IsNotExist(err) {
		t.Errorf("the payload ran as shell: %v", err)
	}

	// The same delivery again is a replay, naming the first call.
	st, b = d.do("POST", "/v1/hooks/ci", body, github("d-1", body)...)
	if p := problem(t, st, b, http.StatusConflict, catalog.ErrHookReplay); !strings.Contains(p.Detail, acc.CallID) {
		t.Errorf("the replay's detail does not name call %s: %q", acc.CallID, p.Detail)
	}
	// GitHub's signature covers the body only: the same signed body under
	// a new delivery id is a replay too.
	st, b = d.do("POST", "/v1/hooks/ci", body, github("d-2", body)...)
	problem(t, st, b, http.StatusConflict, catalog.ErrHookReplay)

	// A name no automation can have is refused before anything is
	// recorded.
	st, b = d.do("POST", "/v1/hooks/"+strings.Repeat("a", 500), body, github("d-3", body)...)
	problem(t, st, b, http.StatusNotFound, catalog.ErrUnknownAutomation)
}

// Each refusal has its status and code, in the order of the checks, and
// leaves a hook record in the audit log.
func TestHookRefusals(t *testing.T) {
	d, _ := startHooks(t)
	body := []byte(`{"ref":"main"}`)
	bad := github("d-2", body)
	bad[1] = "sha256=" + strings.Repeat("0", 64)
	cases := []struct {
		name   string
		path   string
		body   []byte
		header []string
		status int
		class  *catalog.Class
	}{
		{"unknown automation", "/v1/hooks/nope", body, github("d-3", body), http.StatusNotFound, catalog.ErrUnknownAutomation},
		{"wrong signature", "/v1/hooks/ci", body, bad, http.StatusUnauthorized, catalog.ErrHookSignature},
		{"timestamp 10 minutes old", "/v1/hooks/std", body, standard("s-1", time.Now().Add(-10*time.Minute), body),
			http.StatusUnauthorized, catalog.ErrHookTimestamp},
		{"body over the bound", "/v1/hooks/std", []byte(`{"ref":"` + strings.Repeat("x", 2000) + `"}`),
			standard("s-2", time.Now(), body), http.StatusRequestEntityTooLarge, catalog.ErrBodyTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, b := d.do("POST", tc.path, tc.body, tc.header...)
			problem(t, st, b, tc.status, tc.class)
			auto := strings.TrimPrefix(tc.path, "/v1/hooks/")
			st, b = d.do("GET", "/v1/audit?tool=hook:"+auto, nil)
			if st != 200 || !strings.Contains(string(b), `"error":"`+tc.class.Code+`"`) ||
				!strings.Contains(string(b), `"kind":"hook"`) {
				t.Errorf("no hook audit record with %s: %d %s", tc.class.Code, st, b)
			}
		})
	}
}

// A well-signed Standard delivery runs as the GitHub one does.
func TestHookStandard(t *testing.T) {
	d, _ := startHooks(t)
	body := []byte(`{"ref":"v1.2"}`)
	st, b := d.do("POST", "/v1/hooks/std", body, standard("s-3", time.Now(), body)...)
	var acc httpapi.HookAccepted
	if err := json.Unmarshal(b, &acc); st != http.StatusAccepted || err != nil {
		t.Fatalf("POST /v1/hooks/std: %d %s", st, b)
	}
	rec := d.waitDone(acc.CallID)
	if rec.Response == nil || strings.TrimSpace(rec.Response.Output) != "ref=v1.2" {
		t.Errorf("record: %+v", rec)
	}
	// The memory is stored after the call's record is done: polled, a
	// bounded number of times.
	search := map[string]any{"input": map[string]any{"query": "std run"}, "workspace": rec.Workspace, "session": "hook-std"}
	for range 200 {
		st, b := d.do("POST", "/v1/memory/search", search)
		var found httpapi.CallResponse
		if err := json.Unmarshal(b, &found); st != 200 || err != nil {
			t.Fatalf("memory search: %d %s", st, b)
		}
		if id, _, ok := strings.Cut(found.Output, " "); ok && strings.Contains(found.Output, "std run") {
			got := d.call(httpapi.CallRequest{Tool: "memory_get", Input: json.RawMessage(`{"id":"` + id + `"}`),
				Workspace: rec.Workspace, Session: "hook-std"})
			if !strings.Contains(got.Output, "ref=v1.2") || !strings.Contains(got.Output, "success") {
				t.Errorf("the memory: %q", got.Output)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the run's answer was not stored as a memory")
}

// A delivery over the rate is refused with the seconds until the next
// token, rounded up; its id is given back, so the sender may retry it.
func TestHookRate(t *testing.T) {
	d, _ := startHooks(t)
	body := []byte(`{}`)
	st, b := d.do("POST", "/v1/hooks/slow", body, github("r-1", body)...)
	var acc httpapi.HookAccepted
	if err := json.Unmarshal(b, &acc); st != http.StatusAccepted || err != nil {
		t.Fatalf("first delivery: %d %s", st, b)
	}
	d.waitDone(acc.CallID)
	st, b, h := d.doHeader("POST", "/v1/hooks/slow", body, github("r-2", body)...)
	problem(t, st, b, http.StatusTooManyRequests, catalog.ErrRateLimited)
	if n, err := strconv.Atoi(h.Get("Retry-After")); err != nil || n < 1 || n > 3600 {
		t.Errorf("Retry-After %q, want whole seconds up to an hour", h.Get("Retry-After"))
	}
	// Refused after its claim, r-2 is not a replay: the rate answers again.
	st, b = d.do("POST", "/v1/hooks/slow", body, github("r-2", body)...)
	problem(t, st, b, http.StatusTooManyRequests, catalog.ErrRateLimited)
}
