package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/httpapi"
	"github.com/contextd/contextd/internal/daemontest"
	"github.com/contextd/contextd/wire/lite"
)

// httpDaemon is a test daemon with its HTTP API, and a workspace.
type httpDaemon struct {
	t         *testing.T
	sock, api string
	c         *http.Client
	ws        string
}

func startHTTP(t *testing.T) *httpDaemon {
	t.Helper()
	return startHTTPConfig(t, nil)
}

// startHTTPConfig is startHTTP with cfg as the daemon's configuration (nil:
// the defaults).
func startHTTPConfig(t *testing.T, cfg *config.Config) *httpDaemon {
	t.Helper()
	// The daemon keeps its audit log, call records and store under these.
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_DATA_HOME", filepath.Join(state, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(state, "config"))
	sock, api := daemontest.StartHTTPConfig(t, cfg)
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", api)
	}}}
	return &httpDaemon{t: t, sock: sock, api: api, c: c, ws: ws}
}

// do sends a request and returns the status and the body: body as it is
// when it is a []byte, as JSON otherwise.
func (d *httpDaemon) do(method, path string, body any, header ...string) (int, []byte) {
	d.t.Helper()
	st, b, _ := d.doHeader(method, path, body, header...)
	return st, b
}

// doHeader is do, with the answer's header.
func (d *httpDaemon) doHeader(method, path string, body any, header ...string) (int, []byte, http.Header) {
	d.t.Helper()
	var r io.Reader
	if raw, ok := body.([]byte); ok {
		r = bytes.NewReader(raw)
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			d.t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, "http://contextd"+path, r)
	if err != nil {
		d.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := d.c.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// call POSTs a call and decodes its answer.
func (d *httpDaemon) call(req httpapi.CallRequest) httpapi.CallResponse {
	d.t.Helper()
	st, b := d.do("POST", "/v1/calls", req)
	var resp httpapi.CallResponse
	if err := json.Unmarshal(b, &resp); st != 200 || err != nil {
		d.t.Fatalf("POST /v1/calls: %d %s %v", st, b, err)
	}
	return resp
}

// liteCall makes the same call over the light protocol, as the proxy does.
func (d *httpDaemon) liteCall(c lite.Call) (string, *lite.Result) {
	d.t.Helper()
	conn, err := net.Dial("unix", d.sock)
	if err != nil {
		d.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, lite.Magic); err != nil {
		d.t.Fatal(err)
	}
	if err := lite.Write(conn, &lite.Request{Call: &c}); err != nil {
		d.t.Fatal(err)
	}
	var out strings.Builder
	for {
		var ev lite.Event
		if err := lite.Read(conn, &ev, 64<<20); err != nil {
			d.t.Fatal(err)
		}
		switch {
		case ev.Error != nil:
			d.t.Fatalf("lite call: %+v", ev.Error)
		case ev.Result != nil:
			return out.String(), ev.Result
		}
		out.Write(ev.Output)
	}
}

// A call over HTTP answers what the proxy's light protocol answers for the
// same input; its record and the audit log know it by its id.
func TestHTTPCallAsLite(t *testing.T) {
	d := startHTTP(t)
	input := json.RawMessage(`{"command":"echo out; echo err >&2; exit 3"}`)
	resp := d.call(httpapi.CallRequest{Tool: "safe_bash", Input: input, Workspace: d.ws, Session: "s-http"})
	out, res := d.liteCall(lite.Call{Tool: "safe_bash", Input: input, Cwd: d.ws, Session: "s-http"})
	got := resp.Result
	if resp.Output != out || got.ExitCode != res.ExitCode || got.ExitCode != 3 || got.TokensUsed != int(res.TokensUsed) ||
		got.Truncated != res.Truncated || got.Session != res.Session || got.Workspace != res.Workspace {
		t.Fatalf("http %q %+v\nlite %q %+v", resp.Output, got, out, res)
	}

	st, b := d.do("GET", "/v1/calls/"+resp.ID, nil)
	var rec httpapi.CallRecord
	if err := json.Unmarshal(b, &rec); st != 200 || err != nil || rec.State != "done" || rec.Response == nil ||
		rec.Response.Output != out || rec.Via != "http" {
		t.Fatalf("GET /v1/calls/%s: %d %s %v", resp.ID, st, b, err)
	}

	st, b = d.do("GET", "/v1/audit?tool=safe_bash&session=s-http", nil)
	var entries []httpapi.AuditEntry
	if err := json.Unmarshal(b, &entries); st != 200 || err != nil || len(entries) != 2 {
		t.Fatalf("GET /v1/audit: %d %s %v", st, b, err)
	}
	var first struct {
		CallID string `json:"call_id"`
		Via    string `json:"via"`
		Hash   string `json:"hash"`
	}
	var second map[string]any
	json.Unmarshal(entries[0].Record, &first)
	json.Unmarshal(entries[1].Record, &second)
	if first.CallID != resp.ID || first.Via != "http" || first.Hash == "" {
		t.Errorf("the HTTP call's record: %s", entries[0].Record)
	}
	if _, ok := second["call_id"]; ok {
		t.Errorf("the proxy's call's record names a call id: %s", entries[1].Record)
	}
	st, b = d.do("GET", "/v1/audit/verify", nil)
	var rep httpapi.AuditVerifyReply
	if err := json.Unmarshal(b, &rep); st != 200 || err != nil || !rep.OK || rep.Records < 2 {
		t.Fatalf("GET /v1/audit/verify: %d %s %v", st, b, err)
	}
}

// A refusal before the tool runs is a problem with its code and status,
// streamed or not, and its record says refused.
func TestHTTPRefusal(t *testing.T) {
	d := startHTTP(t)
	for _, accept := range []string{"", "text/event-stream"} {
		st, b := d.do("POST", "/v1/calls", httpapi.CallRequest{Tool: "no_such_tool", Input: json.RawMessage(`{}`), Workspace: d.ws}, "Accept", accept)
		var p catalog.Problem
		if err := json.Unmarshal(b, &p); err != nil || st != 404 || p.Code != catalog.ErrUnknownTool.Code || p.Status != 404 {
			t.Errorf("accept %q: %d %s %v", accept, st, b, err)
		}
	}
	st, b := d.do("POST", "/v1/calls", httpapi.CallRequest{Tool: "safe_bash", Input: json.RawMessage(`{"command":"true"}`), Workspace: "relative"})
	if !strings.Contains(string(b), catalog.ErrBadInput.Code) || st != 400 {
		t.Errorf("relative workspace: %d %s", st, b)
	}
	st, b = d.do("GET", "/v1/calls/00000000-0000-4000-8000-000000000000", nil)
	if !strings.Contains(string(b), catalog.ErrNoCall.Code) || st != 404 {
		t.Errorf("unknown call: %d %s", st, b)
	}
}

// A streamed call's output reaches the client before the command ends:
// the command waits for a file the test makes only once it has read the
// first output event.
func TestHTTPStream(t *testing.T) {
	d := startHTTP(t)
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := fmt.Sprintf("echo started; while [ ! -e %s ]; do sleep 0.02; done; echo finished", gate)
	body, _ := json.Marshal(httpapi.CallRequest{Tool: "safe_bash", Input: json.RawMessage(fmt.Sprintf(`{"command":%q}`, cmd)), Workspace: d.ws})
	req, _ := http.NewRequest("POST", "http://contextd/v1/calls", strings.NewReader(string(body)))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	events := bufio.NewReader(resp.Body)
	next := func() (string, string) {
		var name, data string
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v (event %q)", err, name)
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && name != "":
				return name, data
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}
	name, data := next()
	if name != "output" || !strings.Contains(data, "started") || strings.Contains(data, "finished") {
		t.Fatalf("first event %s %s", name, data)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for {
		name, data = next()
		if name != "output" {
			break
		}
		var o struct{ Text string }
		json.Unmarshal([]byte(data), &o)
		rest.WriteString(o.Text)
	}
	var res httpapi.CallResponse
	if err := json.Unmarshal([]byte(data), &res); name != "result" || err != nil || res.ID == "" || res.Output != "" || res.Result.ExitCode != 0 {
		t.Fatalf("last event %s %s %v", name, data, err)
	}
	if !strings.Contains(rest.String(), "finished") {
		t.Errorf("output after the gate: %q", rest.String())
	}
}

// A long read's pages, fetched by number, reassemble to the whole file.
func TestHTTPPages(t *testing.T) {
	d := startHTTP(t)
	var file, want strings.Builder
	for i := 0; file.Len() < 200<<10; i++ {
		line := fmt.Sprintf("entry %d: status ok after %d retries", i, i%7)
		fmt.Fprintf(&file, "%s\n", line)
		fmt.Fprintf(&want, "%6d\t%s\n", i+1, line)
	}
	if err := os.WriteFile(filepath.Join(d.ws, "long.txt"), []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	first := d.call(httpapi.CallRequest{Tool: "safe_read", Input: json.RawMessage(`{"path":"long.txt"}`), Workspace: d.ws})
	if !first.Result.Truncated || first.NextPage != "/v1/calls/"+first.ID+"/pages/1" {
		t.Fatalf("first read: %+v", first.Result)
	}
	if st, b := d.do("GET", "/v1/calls/"+first.ID+"/pages/2", nil); st != 404 || !strings.Contains(string(b), catalog.ErrNoCall.Code) {
		t.Errorf("page 2 before page 1: %d %s", st, b)
	}
	var all strings.Builder
	pages := 0
	for next := first.NextPage; next != ""; pages++ {
		st, b := d.do("GET", next, nil)
		var page httpapi.CallResponse
		if err := json.Unmarshal(b, &page); st != 200 || err != nil || page.Result.Error != nil {
			t.Fatalf("%s: %d %s %v", next, st, b, err)
		}
		all.WriteString(page.Output)
		next = page.NextPage
	}
	if all.String() != want.String() {
		t.Fatalf("%d pages reassemble to %d bytes, want %d", pages, all.Len(), want.Len())
	}
}

// Memories stored over the API are found by a search over it; the tools,
// the status and the document answer.
func TestHTTPStateToolsStatusTools(t *testing.T) {
	d := startHTTP(t)
	body := map[string]any{"workspace": d.ws, "input": map[string]any{
		"title": "flaky test fix", "description": "when the integration suite fails on CI only",
		"content": "the integration suite needs TZ=UTC to pass on CI runners", "outcome": "success"}}
	st, b := d.do("POST", "/v1/memory/store", body)
	if st != 200 {
		t.Fatalf("memory store: %d %s", st, b)
	}
	st, b = d.do("POST", "/v1/memory/search", map[string]any{"workspace": d.ws, "input": map[string]any{"query": "integration suite TZ"}})
	var found httpapi.CallResponse
	if err := json.Unmarshal(b, &found); st != 200 || err != nil || !strings.Contains(found.Output, "flaky test fix") {
		t.Fatalf("memory search: %d %s %v", st, b, err)
	}
	if st, b := d.do("POST", "/v1/memory/search", map[string]any{"workspace": d.ws, "input": map[string]any{}, "extra": 1}); st != 400 {
		t.Errorf("unknown member: %d %s", st, b)
	}

	st, b = d.do("GET", "/v1/status", nil)
	var status httpapi.StatusReply
	if err := json.Unmarshal(b, &status); st != 200 || err != nil || status.PID != os.Getpid() || len(status.HTTP) != 1 {
		t.Fatalf("status: %d %s %v", st, b, err)
	}
	st, b = d.do("GET", "/v1/tools", nil)
	var tools []httpapi.ToolInfo
	if err := json.Unmarshal(b, &tools); st != 200 || err != nil {
		t.Fatalf("tools: %d %s %v", st, b, err)
	}
	bash := false
	for _, ti := range tools {
		if ti.Name == "safe_bash" {
			var schema struct{ Properties map[string]any }
			bash = ti.Kind == "sandboxed" && json.Unmarshal(ti.Schema, &schema) == nil && schema.Properties["command"] != nil
		}
	}
	if !bash {
		t.Errorf("safe_bash with its schema not in %s", b)
	}
	if st, b := d.do("GET", "/v1/openapi.json", nil); st != 200 || !strings.Contains(string(b), `"openapi": "3.1.0"`) {
		t.Errorf("document: %d %.200s", st, b)
	}
}
