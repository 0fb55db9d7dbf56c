package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/httpapi"
	"github.com/contextd/contextd/daemon/httpguard"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/daemon/tools/inside"
)

// tcpAnswer is what the TCP listener answered.
type tcpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// problemCode is the answer's problem code, "" when it is not problem details.
func (a tcpAnswer) problemCode() string {
	var p catalog.Problem
	if a.header.Get("Content-Type") != catalog.ProblemType || json.Unmarshal(a.body, &p) != nil || p.Status != a.status {
		return ""
	}
	return p.Code
}

// tcpDo sends a request to the TCP listener at addr with the Host host and
// the headers given.
func tcpDo(t *testing.T, method, addr, host, path string, body any, header ...string) tcpAnswer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, "http://"+addr+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return tcpAnswer{resp.StatusCode, resp.Header, b}
}

// tcpListener is the TCP address among the status reply's HTTP listeners:
// how a client learns the port the daemon bound for "127.0.0.1:0".
func tcpListener(t *testing.T, d *httpDaemon) string {
	t.Helper()
	st, b := d.do("GET", "/v1/status", nil)
	var status httpapi.StatusReply
	if err := json.Unmarshal(b, &status); st != 200 || err != nil || len(status.HTTP) != 2 {
		t.Fatalf("status: %d %s %v", st, b, err)
	}
	for _, a := range status.HTTP {
		if _, port, err := net.SplitHostPort(a); err == nil && port != "0" {
			return a
		}
	}
	t.Fatalf("no TCP listener in %q", status.HTTP)
	return ""
}

// The TCP listener answers only the token's holder, only under a loopback
// Host and only to the configured browser origins; the Unix socket needs no
// token but refuses forwarded requests and foreign origins alike.
func TestHTTPTCPGuard(t *testing.T) {
	const editor = "http://localhost:5173"
	cfg := config.Default()
	cfg.HTTP.TCP = "127.0.0.1:0"
	cfg.HTTP.AllowedOrigins = []string{editor}
	cfg.IdleTimeout.Duration = 100 * time.Millisecond
	d := startHTTPConfig(t, cfg)
	addr := tcpListener(t, d)

	path, err := httpguard.TokenPath()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, os.Getenv("XDG_STATE_HOME")+"/") {
		t.Fatalf("token %s is not under the test's XDG_STATE_HOME", path)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v, want mode %o", p, fi.Mode(), err, want)
		}
	}
	token, err := httpguard.LoadToken(path)
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + token

	cases := []struct {
		name, host string
		header     []string
		status     int
		code       string
	}{
		{"no token", "127.0.0.1", nil, 401, catalog.ErrToken.Code},
		{"wrong token", "127.0.0.1", []string{"Authorization", "Bearer " + strings.Repeat("x", len(token))}, 401, catalog.ErrToken.Code},
		{"foreign host", "evil.example", []string{"Authorization", bearer}, 403, catalog.ErrHostRefused.Code},
		{"foreign origin", "localhost", []string{"Authorization", bearer, "Origin", "http://evil.example"}, 403, catalog.ErrHostRefused.Code},
		{"loopback host", addr, []string{"Authorization", bearer}, 200, ""},
		{"localhost", "localhost", []string{"Authorization", bearer}, 200, ""},
		{"allowed origin", "localhost", []string{"Authorization", bearer, "Origin", editor}, 200, ""},
	}
	for _, c := range cases {
		a := tcpDo(t, "GET", addr, c.host, "/v1/status", nil, c.header...)
		if a.status != c.status || a.problemCode() != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.status, a.body, c.status, c.code)
		}
	}
	if a := tcpDo(t, "GET", addr, "localhost", "/v1/status", nil, "Authorization", bearer, "Origin", editor); a.header.Get("Access-Control-Allow-Origin") != editor {
		t.Errorf("allowed origin over TCP: no CORS answer: %v", a.header)
	}

	// A call over TCP that names no session is a session of its own.
	a := tcpDo(t, "POST", addr, "localhost", "/v1/calls",
		httpapi.CallRequest{Tool: "safe_bash", Input: json.RawMessage(`{"command":"echo over tcp"}`), Workspace: d.ws}, "Authorization", bearer)
	var resp httpapi.CallResponse
	if err := json.Unmarshal(a.body, &resp); a.status != 200 || err != nil || resp.Output != "over tcp\n" || resp.Result.Session != "http-"+resp.ID {
		t.Fatalf("call over TCP: %d %s %v", a.status, a.body, err)
	}
	st, b := d.do("GET", "/v1/audit?session=http-"+resp.ID, nil)
	if st != 200 || !strings.Contains(string(b), resp.ID) {
		t.Errorf("the TCP call's audit record under its session: %d %s", st, b)
	}

	unix := []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"forwarded", []string{"X-Forwarded-For", "203.0.113.7"}, 403, catalog.ErrHostRefused.Code},
		{"foreign origin", []string{"Origin", "http://evil.example"}, 403, catalog.ErrHostRefused.Code},
		{"allowed origin", []string{"Origin", editor}, 200, ""},
	}
	for _, c := range unix {
		req, err := http.NewRequest("GET", "http://contextd/v1/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		r, err := d.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := tcpAnswer{r.StatusCode, r.Header, b}
		if got.status != c.status || got.problemCode() != c.code {
			t.Errorf("unix socket, %s: %d %s, want %d %s", c.name, got.status, b, c.status, c.code)
		}
		if c.status == 200 && r.Header.Get("Access-Control-Allow-Origin") != editor {
			t.Errorf("unix socket, %s: no CORS answer: %v", c.name, r.Header)
		}
	}

	// idle_timeout has long passed: a daemon listening on TCP stays up.
	time.Sleep(500 * time.Millisecond)
	if a := tcpDo(t, "GET", addr, "localhost", "/v1/status", nil, "Authorization", bearer); a.status != 200 {
		t.Errorf("after idle_timeout: %d %s", a.status, a.body)
	}
}

// An [http] tcp address that is not loopback stops the daemon at start,
// whatever let the configuration through.
func TestHTTPTCPNotLoopback(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cfg := config.Default()
	cfg.HTTP.TCP = "0.0.0.0:0"
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "contextd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(context.Background(), ln, &daemon.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler),
			Notify: func(string) error { return nil }, Runner: runnertest.Unsandboxed{ToolMain: inside.MainUnsandboxed}})
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run serves with [http] tcp on a non-loopback address")
	}
	if !errors.Is(err, catalog.ErrConfig) {
		t.Fatalf("Run with [http] tcp %s: %v, want ErrConfig", cfg.HTTP.TCP, err)
	}
}
