package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

// echoCore answers a call with its tool name as output, refuses the tool
// "refused" before any output, and fails "late" after output started.
type echoCore struct{ Core }

func (echoCore) Call(_ context.Context, req CallRequest, out func([]byte) error) (CallResponse, error) {
	switch req.Tool {
	case "refused":
		return CallResponse{}, fmt.Errorf("no: %w", catalog.ErrPolicy)
	case "late":
		out([]byte("some"))
		return CallResponse{}, fmt.Errorf("gone: %w", catalog.ErrShuttingDown)
	}
	if out != nil {
		// é cut in two: the stream must not send half of it.
		out([]byte(req.Tool + " \xc3"))
		out([]byte("\xa9"))
	}
	return CallResponse{ID: "id1", Output: req.Tool + " é", Result: Result{Session: "s"}}, nil
}

func TestRequests(t *testing.T) {
	s, err := New(echoCore{}, Options{MaxBodyBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool string) string {
		return `{"tool":"` + tool + `","input":{},"workspace":"/w"}`
	}
	for _, tc := range []struct {
		name, method, path, body, accept string
		status                           int
		code, contains                   string
	}{
		{"ok", "POST", "/v1/calls", call("safe_bash"), "", 200, "", `"output":"safe_bash é"`},
		{"unknown member", "POST", "/v1/calls", `{"tool":"x","input":{},"workspace":"/w","extra":1}`, "", 400, "CTXD-E002", "extra"},
		{"two values", "POST", "/v1/calls", call("x") + "{}", "", 400, "CTXD-E002", ""},
		{"too large", "POST", "/v1/calls", call(strings.Repeat("x", 300)), "", 413, "CTXD-E101", ""},
		{"refused", "POST", "/v1/calls", call("refused"), "", 403, "CTXD-E051", ""},
		{"refused streamed", "POST", "/v1/calls", call("refused"), "text/event-stream", 403, "CTXD-E051", ""},
		{"streamed", "POST", "/v1/calls", call("safe_bash"), "text/event-stream", 200, "",
			"event: output\ndata: {\"text\":\"safe_bash \"}\n\nevent: output\ndata: {\"text\":\"é\"}\n\nevent: result\ndata: {\"id\":\"id1\",\"result\""},
		{"late failure", "POST", "/v1/calls", call("late"), "text/event-stream", 200, "", "event: problem\ndata: {\"type\":\"urn:contextd:error:CTXD-E014\""},
		{"no endpoint", "GET", "/v1/nothing", "", "", 404, "CTXD-E100", ""},
		{"wrong method", "DELETE", "/v1/calls", "", "", 404, "CTXD-E100", ""},
		{"unknown query", "GET", "/v1/audit?foo=1", "", "", 400, "CTXD-E002", "foo"},
		{"bad limit", "GET", "/v1/audit?limit=5000", "", "", 400, "CTXD-E002", ""},
		{"bad time", "GET", "/v1/audit?since=yesterday", "", "", 400, "CTXD-E002", ""},
		{"document", "GET", "/v1/openapi.json", "", "", 200, "", `"openapi": "3.1.0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			body := w.Body.String()
			if w.Code != tc.status || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s, want %d with %q", w.Code, body, tc.status, tc.contains)
			}
			if tc.code == "" {
				return
			}
			var p catalog.Problem
			if ct := w.Header().Get("Content-Type"); ct != catalog.ProblemType {
				t.Errorf("Content-Type %q", ct)
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != tc.code || p.Status != tc.status {
				t.Errorf("problem %+v %v, want %s", p, err, tc.code)
			}
		})
	}
}

func TestAcceptsStream(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream": true, "application/json, text/event-stream;q=0.9": true,
		"application/json": false, "": false, "text/event-streams": false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/calls", nil)
		r.Header.Set("Accept", accept)
		if got := acceptsStream(r); got != want {
			t.Errorf("%q: %v", accept, got)
		}
	}
}
