package httpguard

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

const testToken = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

var allowed = []string{"https://editor.example:8443", "http://localhost:5173"}

// ok is what the API behind the guard answers.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("api")) })

// refusal is what the guard should do with a request.
type refusal int

const (
	pass     refusal = iota // reaches the API
	byToken                 // no or a wrong token
	byOrigin                // Host, Origin or forwarding refused
)

// class is the refusal's class, named here and not through the guard's own
// variables, so a guard answering with another class fails.
func (r refusal) class() *catalog.Class {
	return map[refusal]*catalog.Class{byToken: catalog.ErrToken, byOrigin: catalog.ErrHostRefused}[r]
}

// status is what a client sees of the refusal: 401 asks for credentials, 403
// refuses whatever they are.
func (r refusal) status() int {
	return map[refusal]int{pass: http.StatusOK, byToken: http.StatusUnauthorized, byOrigin: http.StatusForbidden}[r]
}

type req struct {
	method, path, host string
	header             map[string]string
}

// check sends r through g and wants it answered as want says.
func check(t *testing.T, g *Guard, r req, wantRefusal refusal) *httptest.ResponseRecorder {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	if r.path == "" {
		r.path = "/v1/status"
	}
	hr := httptest.NewRequest(r.method, r.path, nil)
	hr.Host = r.host
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	g.Wrap(ok).ServeHTTP(w, hr)
	want := wantRefusal.class()
	if want == nil {
		if w.Code != http.StatusOK || w.Body.String() != "api" {
			t.Errorf("%+v: %d %q, want it to reach the API", r, w.Code, w.Body)
		}
		return w
	}
	var p catalog.Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Header().Get("Content-Type") != catalog.ProblemType {
		t.Fatalf("%+v: %d %s %q: not problem details", r, w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if w.Code != wantRefusal.status() || p.Status != w.Code || p.Code != want.Code {
		t.Errorf("%+v: %d %s, want %d %s (%s)", r, w.Code, p.Code, wantRefusal.status(), want.Code, p.Detail)
	}
	return w
}

func TestTCPGuard(t *testing.T) {
	g, err := TCP(testToken, allowed)
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + testToken
	cases := []struct {
		name string
		req
		want refusal
	}{
		{"localhost with port", req{host: "localhost:1", header: map[string]string{"Authorization": bearer}}, pass},
		{"localhost", req{host: "localhost", header: map[string]string{"Authorization": bearer}}, pass},
		{"upper case", req{host: "LOCALHOST:8080", header: map[string]string{"Authorization": bearer}}, pass},
		{"ipv4", req{host: "127.0.0.1", header: map[string]string{"Authorization": bearer}}, pass},
		{"ipv4 port", req{host: "127.0.0.1:7777", header: map[string]string{"Authorization": bearer}}, pass},
		{"ipv6 port", req{host: "[::1]:9", header: map[string]string{"Authorization": bearer}}, pass},
		{"ipv6", req{host: "[::1]", header: map[string]string{"Authorization": bearer}}, pass},
		{"bearer any case", req{host: "localhost", header: map[string]string{"Authorization": "bearer " + testToken}}, pass},

		{"no token", req{host: "localhost:1"}, byToken},
		{"wrong token", req{host: "localhost:1", header: map[string]string{"Authorization": "Bearer " + strings.ToUpper(testToken)}}, byToken},
		{"token prefix", req{host: "localhost:1", header: map[string]string{"Authorization": bearer[:len(bearer)-1]}}, byToken},
		{"token and more", req{host: "localhost:1", header: map[string]string{"Authorization": bearer + "x"}}, byToken},
		{"basic scheme", req{host: "localhost:1", header: map[string]string{"Authorization": "Basic " + testToken}}, byToken},
		{"bare token", req{host: "localhost:1", header: map[string]string{"Authorization": testToken}}, byToken},

		// DNS rebinding: a page's own name reaches 127.0.0.1 but says so in Host.
		{"evil host", req{host: "evil.com", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"evil host port", req{host: "evil.com:8080", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"localhost suffix", req{host: "localhost.evil.com", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"localhost prefix", req{host: "evil-localhost:1", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"trailing dot", req{host: "localhost.:1", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"other loopback", req{host: "127.0.0.2", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"rebind ip name", req{host: "127.0.0.1.nip.io", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"any address", req{host: "0.0.0.0:80", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"no host", req{host: "", header: map[string]string{"Authorization": bearer}}, byOrigin},
		{"bad host, no token", req{host: "evil.com"}, byOrigin},

		{"allowed origin", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "https://editor.example:8443"}}, pass},
		{"foreign origin", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "http://evil.example"}}, byOrigin},
		{"null origin", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "null"}}, byOrigin},
		{"origin other port", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "https://editor.example"}}, byOrigin},
		{"origin other scheme", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "http://editor.example:8443"}}, byOrigin},
		{"origin with slash", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": "https://editor.example:8443/"}}, byOrigin},
		{"empty origin", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Origin": ""}}, byOrigin},
		{"allowed origin, no token", req{host: "localhost", header: map[string]string{"Origin": "https://editor.example:8443"}}, byToken},

		// Webhooks carry their own signature and may come through a tunnel.
		{"hook without token", req{method: "POST", path: "/v1/hooks/ci", host: "hooks.example.net"}, pass},
		{"hook forwarded", req{method: "POST", path: "/v1/hooks/ci", host: "hooks.example.net", header: map[string]string{"X-Forwarded-For": "1.2.3.4"}}, pass},
		{"hook from a page", req{method: "POST", path: "/v1/hooks/ci", host: "localhost", header: map[string]string{"Origin": "http://evil.example"}}, byOrigin},
		{"hooks dir itself", req{method: "POST", path: "/v1/hooks/", host: "localhost"}, byToken},
		{"dot-dot out of hooks", req{path: "/v1/hooks/../calls", host: "localhost"}, byToken},
		{"dot-dot, evil host", req{path: "/v1/hooks/../status", host: "evil.com"}, byOrigin},
		{"hooks look-alike", req{method: "POST", path: "/v1/hooksx/ci", host: "localhost"}, byToken},

		// Forwarded headers are the tunnel's business on TCP.
		{"forwarded over tcp", req{host: "localhost", header: map[string]string{"Authorization": bearer, "Forwarded": "for=1.2.3.4"}}, pass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := check(t, g, c.req, c.want)
			if got := w.Header().Get("WWW-Authenticate") != ""; got != (c.want == byToken) {
				t.Errorf("WWW-Authenticate sent: %v, want %v", got, c.want == byToken)
			}
			if acao := w.Header().Get("Access-Control-Allow-Origin"); acao != "" && acao != c.header["Origin"] {
				t.Errorf("Access-Control-Allow-Origin %q for Origin %q", acao, c.header["Origin"])
			}
			if acao := w.Header().Get("Access-Control-Allow-Origin"); acao == "*" || (c.want == byOrigin && acao != "") {
				t.Errorf("CORS answered a refused origin: %q", acao)
			}
		})
	}
}

func TestUnixGuard(t *testing.T) {
	g, err := Unix(allowed)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req
		want refusal
	}{
		{"curl", req{host: "localhost"}, pass},
		{"any host", req{host: "contextd"}, pass},
		{"no token needed", req{host: "localhost", path: "/v1/calls", method: "POST"}, pass},
		{"allowed origin", req{host: "localhost", header: map[string]string{"Origin": "http://localhost:5173"}}, pass},
		{"foreign origin", req{host: "localhost", header: map[string]string{"Origin": "http://evil.example"}}, byOrigin},
		{"null origin", req{host: "localhost", header: map[string]string{"Origin": "null"}}, byOrigin},
		{"forwarded", req{host: "localhost", header: map[string]string{"Forwarded": "for=1.2.3.4"}}, byOrigin},
		{"x-forwarded-for", req{host: "localhost", header: map[string]string{"X-Forwarded-For": "1.2.3.4"}}, byOrigin},
		{"x-real-ip", req{host: "localhost", header: map[string]string{"X-Real-IP": "1.2.3.4"}}, byOrigin},
		{"hook forwarded", req{method: "POST", path: "/v1/hooks/ci", host: "hooks.example.net", header: map[string]string{"X-Forwarded-For": "1.2.3.4", "Forwarded": "for=1.2.3.4"}}, pass},
		{"dot-dot forwarded", req{method: "POST", path: "/v1/hooks/../calls", header: map[string]string{"X-Real-IP": "1.2.3.4"}}, byOrigin},
		{"hook from a page", req{method: "POST", path: "/v1/hooks/ci", header: map[string]string{"Origin": "http://evil.example"}}, byOrigin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, g, c.req, c.want) })
	}
}

// A browser's preflight for an allowed origin is answered by the guard, with
// that origin only; for any other it is refused like the request would be.
func TestPreflight(t *testing.T) {
	g, err := TCP(testToken, allowed)
	if err != nil {
		t.Fatal(err)
	}
	pre := func(host, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodOptions, "/v1/calls", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		w := httptest.NewRecorder()
		g.Wrap(ok).ServeHTTP(w, r)
		return w
	}
	w := pre("localhost:7777", "https://editor.example:8443")
	h := w.Header()
	if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://editor.example:8443" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") || w.Body.Len() != 0 {
		t.Errorf("allowed preflight: %d %v %q", w.Code, h, w.Body)
	}
	for _, c := range []struct{ host, origin string }{{"localhost", "http://evil.example"}, {"localhost", "null"}, {"evil.example", "https://editor.example:8443"}} {
		w := pre(c.host, c.origin)
		if w.Code == http.StatusNoContent || w.Code == http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s at %s: %d %v", c.origin, c.host, w.Code, w.Header())
		}
	}
}

func TestGuardConfigRefused(t *testing.T) {
	for _, o := range []string{"*", "null", "https://editor.example/", "https://editor.example/app", "HTTPS://Editor.example",
		"ftp://editor.example", "editor.example", "https://user@editor.example", "https://*.example", ""} {
		if _, err := Unix([]string{o}); !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("allowed origin %q: %v, want ErrConfig", o, err)
		}
	}
	for _, o := range []string{"https://editor.example", "http://localhost:5173", "http://[::1]:3000"} {
		if err := CheckOrigin(o); err != nil {
			t.Errorf("origin %q refused: %v", o, err)
		}
	}
	if _, err := TCP("short", nil); !errors.Is(err, catalog.ErrConfig) {
		t.Errorf("short token: %v, want ErrConfig", err)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, good := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:80": true, "[::1]:9": true, "127.0.0.1:0": true,
		"0.0.0.0:8080": false, "[::]:8080": false, "localhost:8080": false, "192.168.1.2:80": false,
		"[::ffff:127.0.0.1]:80": false, "127.0.0.1": false, ":8080": false, "10.0.0.1:1": false,
		"[fe80::1]:80": false, "example.com:80": false,
	} {
		err := CheckLoopback(addr)
		if good != (err == nil) || (err != nil && !errors.Is(err, catalog.ErrConfig)) {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, good)
		}
	}
}
