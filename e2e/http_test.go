//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memoryIDRe finds a memory's id (a UUID) in a tool's output.
var memoryIDRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// httpSock is the HTTP API's socket of the test user.
func httpSock() string { return filepath.Join(env.runtime, "contextd", "http.sock") }

// curled is one curl's answer: its body and HTTP status.
type curled struct {
	body   string
	status int
	r      result
}

// curlAPI makes one request over the HTTP API's socket as the test user.
func curlAPI(t *testing.T, method, path, body string, headers ...string) curled {
	t.Helper()
	args := []string{"curl", "-sS", "--unix-socket", httpSock(), "-X", method, "-w", "\n%{http_code}"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	if body != "" {
		args = append(args, "-H", "Content-Type: application/json", "--data-binary", "@-")
	}
	args = append(args, "http://localhost"+path)
	r := runAs(t, "", nil, body, args...)
	i := strings.LastIndexByte(r.stdout, '\n')
	if r.code != 0 || i < 0 {
		t.Fatalf("curl %s %s: %s", method, path, r)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(r.stdout[i+1:]))
	return curled{body: r.stdout[:i], status: code, r: r}
}

// mustJSON decodes an answer that must have the given status.
func (c curled) mustJSON(t *testing.T, status int, v any) {
	t.Helper()
	if c.status != status {
		t.Fatalf("HTTP %d, want %d: %s", c.status, status, c.body)
	}
	if err := json.Unmarshal([]byte(c.body), v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, c.body)
	}
}

type httpCallResponse struct {
	ID       string `json:"id"`
	Output   string `json:"output"`
	NextPage string `json:"next_page"`
	Result   struct {
		ExitCode  int    `json:"exit_code"`
		Truncated bool   `json:"truncated"`
		Continue  string `json:"continue"`
		Session   string `json:"session"`
		Error     *struct{ Code, Message string }
	} `json:"result"`
}

type httpProblem struct {
	Type, Title, Detail, Code, Hint string
	Status                          int
}

// The HTTP API on the test user's socket, started by systemd with the
// daemon: every endpoint through `curl --unix-socket`, a streamed call that
// delivers output before its command ends, and contextd api.
func TestHTTPAPI(t *testing.T) {
	var status struct {
		PID   int      `json:"pid"`
		Tools []string `json:"tools"`
	}
	curlAPI(t, "GET", "/v1/status", "").mustJSON(t, 200, &status)
	if status.PID == 0 || !slices.Contains(status.Tools, "safe_bash") {
		t.Fatalf("status: %+v", status)
	}

	var tools []struct {
		Name   string          `json:"name"`
		Kind   string          `json:"kind"`
		Schema json.RawMessage `json:"schema"`
	}
	curlAPI(t, "GET", "/v1/tools", "").mustJSON(t, 200, &tools)
	found := false
	for _, tl := range tools {
		found = found || (tl.Name == "safe_bash" && strings.Contains(string(tl.Schema), `"command"`))
	}
	if !found {
		t.Fatalf("GET /v1/tools lacks safe_bash with its schema: %+v", tools)
	}

	body := func(tool, input string) string {
		return fmt.Sprintf(`{"tool":%q,"input":%s,"workspace":%q,"session":"e2e-http"}`, tool, input, env.project)
	}
	var call httpCallResponse
	curlAPI(t, "POST", "/v1/calls", body("safe_bash", `{"command":"echo hello-over-http; exit 3"}`)).mustJSON(t, 200, &call)
	if call.Output != "hello-over-http\n" || call.Result.ExitCode != 3 || call.ID == "" {
		t.Fatalf("POST /v1/calls: %+v", call)
	}
	var rec struct {
		ID, State string
	}
	curlAPI(t, "GET", "/v1/calls/"+call.ID, "").mustJSON(t, 200, &rec)
	if rec.ID != call.ID || rec.State != "done" {
		t.Errorf("GET /v1/calls/{id}: %+v", rec)
	}

	// A refusal is problem+json with the catalog's code.
	bad := curlAPI(t, "POST", "/v1/calls", body("safe_bash", `{"cmd":"true"}`))
	var p httpProblem
	bad.mustJSON(t, 400, &p)
	if p.Code != "CTXD-E002" || p.Type != "urn:contextd:error:CTXD-E002" || p.Hint == "" {
		t.Errorf("a bad input's problem: %+v", p)
	}
	missing := curlAPI(t, "GET", "/v1/calls/nosuchcall", "")
	missing.mustJSON(t, 404, &p)

	// A long output pages: the pages, in order, put it back together.
	var long httpCallResponse
	curlAPI(t, "POST", "/v1/calls", fmt.Sprintf(`{"tool":"safe_bash","input":{"command":"seq 1 60000"},"workspace":%q,"session":"e2e-http","max_tokens":2000}`, env.project)).mustJSON(t, 200, &long)
	if !long.Result.Truncated || long.NextPage == "" {
		t.Fatalf("60000 lines in 2000 tokens: truncated %v, next %q", long.Result.Truncated, long.NextPage)
	}
	var all strings.Builder
	next := long.NextPage
	for n := 0; next != "" && n < 200; n++ {
		var page httpCallResponse
		curlAPI(t, "GET", next, "").mustJSON(t, 200, &page)
		all.WriteString(page.Output)
		next = page.NextPage
	}
	var want strings.Builder
	for i := 1; i <= 60000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if all.String() != want.String() {
		t.Errorf("the pages reassemble to %d bytes, want %d", all.Len(), want.Len())
	}

	// Memories and checkpoints.
	var stored httpCallResponse
	curlAPI(t, "POST", "/v1/memory/store", fmt.Sprintf(`{"workspace":%q,"input":{"title":"http api memory","description":"when testing the HTTP API","content":"stored over HTTP","outcome":"success"}}`, env.project)).mustJSON(t, 200, &stored)
	var searched httpCallResponse
	curlAPI(t, "POST", "/v1/memory/search", fmt.Sprintf(`{"workspace":%q,"input":{"query":"http api memory"}}`, env.project)).mustJSON(t, 200, &searched)
	mustContain(t, "memory search over HTTP", searched.Output, "http api memory")
	// The search names the memory's id; memory_get fetches it by that id.
	id := memoryIDRe.FindString(searched.Output)
	if id == "" {
		t.Fatalf("no memory id in the search's output:\n%s", searched.Output)
	}
	var got httpCallResponse
	curlAPI(t, "POST", "/v1/memory/get", fmt.Sprintf(`{"workspace":%q,"input":{"id":%q}}`, env.project, id)).mustJSON(t, 200, &got)
	mustContain(t, "memory get over HTTP", got.Output, "stored over HTTP")
	var saved httpCallResponse
	curlAPI(t, "POST", "/v1/checkpoints/save", fmt.Sprintf(`{"workspace":%q,"session":"e2e-http","input":{"summary":"http checkpoint","context":"ctx","full":"everything"}}`, env.project)).mustJSON(t, 200, &saved)
	var listed httpCallResponse
	curlAPI(t, "POST", "/v1/checkpoints/list", fmt.Sprintf(`{"workspace":%q,"session":"e2e-http","input":{}}`, env.project)).mustJSON(t, 200, &listed)
	mustContain(t, "checkpoint list over HTTP", listed.Output, "http checkpoint")
	var restored httpCallResponse
	curlAPI(t, "POST", "/v1/checkpoints/restore", fmt.Sprintf(`{"workspace":%q,"session":"e2e-http","input":{"latest":true,"level":"full"}}`, env.project)).mustJSON(t, 200, &restored)
	mustContain(t, "checkpoint restore over HTTP", restored.Output, "everything")

	// The audit log: the calls above, and its verification.
	var entries []struct {
		Record struct {
			Tool    string `json:"tool"`
			Session string `json:"session"`
		} `json:"record"`
	}
	curlAPI(t, "GET", "/v1/audit?session=e2e-http&limit=50", "").mustJSON(t, 200, &entries)
	if len(entries) < 3 {
		t.Errorf("GET /v1/audit?session=e2e-http: %d records", len(entries))
	}
	var verify struct {
		OK bool `json:"ok"`
	}
	curlAPI(t, "GET", "/v1/audit/verify", "").mustJSON(t, 200, &verify)

	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	curlAPI(t, "GET", "/v1/openapi.json", "").mustJSON(t, 200, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") || doc.Paths["/v1/calls"] == nil {
		t.Errorf("openapi.json: %s, %d paths", doc.OpenAPI, len(doc.Paths))
	}

	// contextd api: the body, and the problem's exit status.
	r := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "api", "/v1/status")
	mustCode(t, r, 0)
	mustContain(t, "contextd api /v1/status", r.stdout, `"pid"`)
	r = runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "api", "-X", "POST", "/v1/calls", "-d", body("safe_bash", `{"cmd":"x"}`))
	if r.code != 65 || !strings.Contains(r.stdout, "CTXD-E002") {
		t.Errorf("contextd api with a bad input: %s", r)
	}
}

// A streamed call delivers its output before the command ends: the command
// prints a line, then waits for a file this test makes only after it read
// that line from the stream.
func TestHTTPStreamsBeforeTheEnd(t *testing.T) {
	flag := "http-stream-flag-" + randomFrom(t, "abcdefgh", 8)
	t.Cleanup(func() { os.Remove(filepath.Join(env.project, flag)) })
	script := fmt.Sprintf("echo started; while [ ! -e %s ]; do sleep 0.05; done; echo finished", flag)
	body := fmt.Sprintf(`{"tool":"safe_bash","input":{"command":%q},"workspace":%q}`, script, env.project)
	cmd := exec.Command("bash", env.usermgr, "run", testUser, "-C", env.project, "--",
		"curl", "-sN", "--unix-socket", httpSock(), "-H", "Accept: text/event-stream", "-H", "Content-Type: application/json",
		"--data-binary", body, "http://localhost/v1/calls")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() { cmd.Process.Kill(); cmd.Wait(); close(done) }()
	go func() {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
		}
	}()
	sc := bufio.NewScanner(out)
	var events []string
	sawStarted := false
	for sc.Scan() {
		line := sc.Text()
		events = append(events, line)
		if !sawStarted && strings.HasPrefix(line, "data:") && strings.Contains(line, "started") {
			sawStarted = true
			// Only now may the command end.
			mustCode(t, userSh(t, "touch "+shq(filepath.Join(env.project, flag))), 0)
		}
		if strings.HasPrefix(line, "event: result") {
			break
		}
	}
	if !sawStarted {
		t.Fatalf("no output event before the end; the stream:\n%s", strings.Join(events, "\n"))
	}
	rest := strings.Join(events, "\n")
	for sc.Scan() {
		rest += "\n" + sc.Text()
		if strings.HasPrefix(sc.Text(), "data:") {
			break
		}
	}
	mustContain(t, "the stream", rest, "finished", "event: result")
}

// Another uid gets no byte from the HTTP API's socket.
func TestHTTPOtherUserRefused(t *testing.T) {
	r := otherAs(t, nil, "curl", "-sS", "--unix-socket", httpSock(), "http://localhost/v1/status")
	if r.code == 0 || r.stdout != "" {
		t.Fatalf("another user on the HTTP socket: %s", r)
	}
}

// A client nobody here wrote: openapi-typescript generates its types from
// the daemon's own openapi.json, tsc checks client.mjs's calls against
// them, and openapi-fetch runs a safe_bash call, a memory store and a
// search over the socket. Redocly and Spectral lint the document with no
// network at all.
func TestHTTPOpenAPIClient(t *testing.T) {
	doc := curlAPI(t, "GET", "/v1/openapi.json", "")
	if doc.status != 200 {
		t.Fatalf("openapi.json: HTTP %d", doc.status)
	}
	src := filepath.Join(env.repo, "e2e", "httpjs")
	if err := npmCI(src); err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(src, "gen")
	if err := os.MkdirAll(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gen, "openapi.json"), []byte(doc.body), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string { return filepath.Join(src, "node_modules", ".bin", name) }
	steps := []struct {
		what string
		argv []string
	}{
		{"openapi-typescript", []string{bin("openapi-typescript"), "gen/openapi.json", "-o", "gen/schema.d.ts"}},
		{"tsc --checkJs client.mjs", []string{bin("tsc"), "-p", "."}},
		// The linters run in a network namespace of their own, without
		// any network: what they check is the document alone.
		{"redocly lint", []string{"unshare", "-n", bin("redocly"), "lint", "--extends=recommended-strict", "gen/openapi.json"}},
		{"spectral lint", []string{"unshare", "-n", bin("spectral"), "lint", "--ruleset", ".spectral.yaml", "--fail-severity=hint", "gen/openapi.json"}},
	}
	for _, s := range steps {
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", s.what, err, out)
		}
	}
	dir, err := installJS("httpjs", "client.mjs", filepath.Join("node_modules", "openapi-fetch", "package.json"), filepath.Join("gen", "schema.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	r := runAs(t, "", nil, "", "node", filepath.Join(dir, "client.mjs"), httpSock(), env.project)
	mustCode(t, r, 0)
	var out struct {
		Call struct {
			Output   string `json:"output"`
			ExitCode int    `json:"exit_code"`
		} `json:"call"`
		Search struct{ Output string } `json:"search"`
		Status struct{ PID int }       `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("client.mjs printed %q: %v", r.stdout, err)
	}
	if out.Call.Output != "from-the-generated-client\n" || out.Call.ExitCode != 0 || out.Status.PID == 0 {
		t.Errorf("the generated client's call: %+v", out)
	}
	mustContain(t, "the generated client's memory search", out.Search.Output, "generated client stores a memory")
}

// Webhooks signed by GitHub's and Standard Webhooks' own libraries each run
// their automation's sandboxed call, whose result is then retrievable; a
// wrong signature, a replay, an expired timestamp and a body over the limit
// are refused and audited; a payload field that is shell syntax stays text.
// And the loopback TCP listener: no token 401, a foreign Host or Origin 403.
func TestHTTPWebhooksAndTCP(t *testing.T) {
	js, err := installJS("httpjs", "sign.mjs", filepath.Join("node_modules", "standardwebhooks", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	ghSecret := "gh-" + randomFrom(t, "abcdefghijklmnop0123456789", 24)
	stdSecret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	port := freePort(t)
	setup := fmt.Sprintf(`set -e
mkdir -p ~/.config/contextd/hooks && chmod 700 ~/.config/contextd/hooks
printf %%s %s > ~/.config/contextd/hooks/gh.secret
printf %%s %s > ~/.config/contextd/hooks/std.secret
chmod 600 ~/.config/contextd/hooks/*.secret`, shq(ghSecret), shq(stdSecret))
	mustCode(t, userSh(t, setup), 0)
	t.Cleanup(func() {
		userSh(t, "rm -rf ~/.config/contextd/hooks ~/.local/state/contextd/hooks.db ~/.local/state/contextd/http-token; rm -f ~/proj/pwned")
	})
	withConfig(t, fmt.Sprintf(`[http]
tcp = "127.0.0.1:%d"

[[automations]]
name = "gh"
workspace = %q
scheme = "github"
secret_file = "~/.config/contextd/hooks/gh.secret"
max_body_bytes = 4096
tool = "safe_bash"
input = { command = 'echo "ref=$CONTEXTD_HOOK_REF"' }
env = { REF = "ref" }

[[automations]]
name = "std"
workspace = %q
scheme = "standard"
secret_file = "~/.config/contextd/hooks/std.secret"
tool = "safe_bash"
input = { command = 'echo "tag=$CONTEXTD_HOOK_TAG"' }
env = { TAG = "data.tag" }
`, port, env.project, env.project))

	// deliver signs body with the senders' library and posts it.
	// The bodies are read by sign.mjs as the test user: a directory it can
	// read (t.TempDir's parent is root's alone).
	dir, err := os.MkdirTemp("", "ctxd-hooks-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	deliver := func(name, scheme, secret, id, body string, at ...string) curled {
		t.Helper()
		f := filepath.Join(dir, id+".json")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runAs(t, "", nil, "", append([]string{"node", filepath.Join(js, "sign.mjs"), scheme, secret, f, id}, at...)...)
		mustCode(t, r, 0)
		headers := strings.Split(strings.TrimSpace(r.stdout), "\n")
		return curlAPI(t, "POST", "/v1/hooks/"+name, body, headers...)
	}
	accepted := func(c curled) string {
		t.Helper()
		var a struct {
			CallID string `json:"call_id"`
		}
		c.mustJSON(t, 202, &a)
		return a.CallID
	}
	result := func(id string) string {
		t.Helper()
		for i := 0; i < 600; i++ {
			var rec struct {
				State    string
				Response *httpCallResponse
			}
			curlAPI(t, "GET", "/v1/calls/"+id, "").mustJSON(t, 200, &rec)
			if rec.State == "done" && rec.Response != nil {
				return rec.Response.Output
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the hook's call %s did not end", id)
		return ""
	}

	hostile := "$(touch pwned)$(touch /tmp/pwn)`touch pwned`"
	gh := accepted(deliver("gh", "github", ghSecret, "gh-1", fmt.Sprintf(`{"ref":%q}`, hostile)))
	if out := result(gh); !strings.Contains(out, "ref="+hostile) {
		t.Errorf("the GitHub-signed delivery's call: %q", out)
	}
	if _, err := os.Stat(filepath.Join(env.project, "pwned")); err == nil {
		t.Error("a payload field ran as shell code in the workspace")
	}
	std := accepted(deliver("std", "standard", stdSecret, "msg_1", `{"data":{"tag":"v1.2.3"}}`))
	mustContain(t, "the Standard Webhooks delivery's call", result(std), "tag=v1.2.3")

	var p httpProblem
	deliver("gh", "github", "not-the-secret", "gh-2", `{"ref":"x"}`).mustJSON(t, 401, &p)
	if p.Code != "CTXD-E104" {
		t.Errorf("a wrong signature: %+v", p)
	}
	deliver("gh", "github", ghSecret, "gh-1", fmt.Sprintf(`{"ref":%q}`, hostile)).mustJSON(t, 409, &p)
	if p.Code != "CTXD-E105" {
		t.Errorf("a replay: %+v", p)
	}
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	deliver("std", "standard", stdSecret, "msg_old", `{"data":{"tag":"old"}}`, old).mustJSON(t, 401, &p)
	if p.Code != "CTXD-E106" {
		t.Errorf("an expired timestamp: %+v", p)
	}
	deliver("gh", "github", ghSecret, "gh-big", `{"ref":"`+strings.Repeat("x", 5000)+`"}`).mustJSON(t, 413, &p)
	if p.Code != "CTXD-E101" {
		t.Errorf("a body over the limit: %+v", p)
	}
	var hooks []struct {
		Record struct {
			Kind, Tool, Error string
		} `json:"record"`
	}
	curlAPI(t, "GET", "/v1/audit?limit=200", "").mustJSON(t, 200, &hooks)
	codes := map[string]bool{}
	for _, h := range hooks {
		if h.Record.Kind == "hook" {
			codes[h.Record.Error] = true
		}
	}
	for _, c := range []string{"CTXD-E104", "CTXD-E105", "CTXD-E106", "CTXD-E101"} {
		if !codes[c] {
			t.Errorf("no hook audit record with %s (have %v)", c, codes)
		}
	}

	// The loopback TCP listener, behind its token.
	token := strings.TrimSpace(userSh(t, "cat ~/.local/state/contextd/http-token").stdout)
	if token == "" {
		t.Fatal("no token file after the daemon started with [http] tcp")
	}
	tcp := func(headers ...string) int {
		args := []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		r := runAs(t, "", nil, "", append(args, fmt.Sprintf("http://127.0.0.1:%d/v1/status", port))...)
		n, _ := strconv.Atoi(r.stdout)
		return n
	}
	auth := "Authorization: Bearer " + token
	for _, c := range []struct {
		what    string
		headers []string
		want    int
	}{
		{"no token", nil, 401},
		{"a wrong token", []string{"Authorization: Bearer nope"}, 401},
		{"a foreign Host", []string{auth, "Host: evil.example"}, 403},
		{"a foreign Origin", []string{auth, "Origin: http://evil.example"}, 403},
		{"the token", []string{auth}, 200},
	} {
		if got := tcp(c.headers...); got != c.want {
			t.Errorf("TCP with %s: HTTP %d, want %d", c.what, got, c.want)
		}
	}
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
