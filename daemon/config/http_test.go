package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

func TestHTTPValidation(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		want       config.HTTP // when err is ""
		err        string      // a substring of the error
	}{
		{"defaults", "", config.HTTP{AllowedOrigins: []string{}, MaxBodyBytes: 1 << 20}, ""},
		{"all set", "[http]\nsocket = \"/run/user/1/h.sock\"\ntcp = \"127.0.0.1:7070\"\nallowed_origins = [\"https://app.example.com\", \"http://localhost:3000\"]\nmax_body_bytes = \"4MiB\"",
			config.HTTP{Socket: "/run/user/1/h.sock", TCP: "127.0.0.1:7070", AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"}, MaxBodyBytes: 4 << 20}, ""},
		{"ipv6", "[http]\ntcp = \"[::1]:1\"\nmax_body_bytes = 1024",
			config.HTTP{TCP: "[::1]:1", AllowedOrigins: []string{}, MaxBodyBytes: 1024}, ""},
		{"relative socket", "[http]\nsocket = \"h.sock\"", config.HTTP{}, "http.socket"},
		{"no port", "[http]\ntcp = \"127.0.0.1\"", config.HTTP{}, "http.tcp"},
		{"port 0", "[http]\ntcp = \"127.0.0.1:0\"", config.HTTP{}, "http.tcp"},
		{"no host", "[http]\ntcp = \":7070\"", config.HTTP{}, "http.tcp"},
		{"wildcard origin", "[http]\nallowed_origins = [\"*\"]", config.HTTP{}, "http.allowed_origins"},
		{"subdomain wildcard", "[http]\nallowed_origins = [\"https://*.example.com\"]", config.HTTP{}, "no wildcard"},
		{"origin with path", "[http]\nallowed_origins = [\"https://example.com/app\"]", config.HTTP{}, "scheme://host[:port] only"},
		{"origin scheme", "[http]\nallowed_origins = [\"file://x\"]", config.HTTP{}, "http or https"},
		{"origin case", "[http]\nallowed_origins = [\"https://Example.com\"]", config.HTTP{}, "lower case"},
		{"null origin", "[http]\nallowed_origins = [\"null\"]", config.HTTP{}, "http.allowed_origins"},
		{"small body", "[http]\nmax_body_bytes = 1023", config.HTTP{}, "http.max_body_bytes"},
		{"huge body", "[http]\nmax_body_bytes = \"1GiB\"", config.HTTP{}, "http.max_body_bytes"},
		{"unknown key", "[http]\nport = 1", config.HTTP{}, "http.port"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.toml))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.err == "" && !reflect.DeepEqual(c.HTTP, tt.want):
				t.Errorf("[http] = %+v, want %+v", c.HTTP, tt.want)
			case tt.err != "" && (!errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Parse = %v; want %s naming %q", err, catalog.ErrConfig.Code, tt.err)
			}
		})
	}
}

const ciHook = `
[[automations]]
name = "ci"
workspace = "/home/me/proj"
scheme = "github"
secret_file = "~/.config/contextd/hooks/ci.secret"
rate = "3/30s"
tool = "safe_bash"
input = { command = "make test", timeout = 600, opts = { deep = [1, { x = "y" }] } }
env = { REF = "pull_request.head.ref", SHA = "after" }
memory = { title = "CI result", description = "when CI fails" }
`

func TestAutomations(t *testing.T) {
	if a := config.Default().Automations; a == nil || len(a) != 0 {
		t.Errorf("automations default: %#v", a)
	}
	c, err := config.Parse([]byte(ciHook + "[[automations]]\nname = \"std\"\nscheme = \"standard\"\nmax_body_bytes = 2048\nargs = { query = \"issue.title\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Automation{{
		Name: "ci", Workspace: "/home/me/proj", Scheme: "github", SecretFile: "~/.config/contextd/hooks/ci.secret",
		Rate: config.Rate{Count: 3, Per: 30 * time.Second}, MaxBodyBytes: 1 << 20, Tool: "safe_bash",
		Input:  map[string]any{"command": "make test", "timeout": int64(600), "opts": map[string]any{"deep": []any{int64(1), map[string]any{"x": "y"}}}},
		Env:    map[string]string{"REF": "pull_request.head.ref", "SHA": "after"},
		Memory: &config.AutomationMemory{Title: "CI result", Description: "when CI fails"},
	}, {
		Name: "std", Scheme: "standard", Window: config.Duration{config.DefaultHookWindow},
		Rate: config.DefaultHookRate, MaxBodyBytes: 2048, Args: map[string]string{"query": "issue.title"},
	}}
	if !reflect.DeepEqual(c.Automations, want) {
		t.Errorf("automations:\n got %+v\nwant %+v", c.Automations, want)
	}
}

func TestAutomationRefusals(t *testing.T) {
	for _, tt := range []struct{ name, toml, err string }{
		{"inline secret", "[[automations]]\nname = \"x\"\nsecret = \"hunter2\"", "automations.secret: a secret is never written in the configuration"},
		{"duplicate", "[[automations]]\nname = \"x\"\n[[automations]]\nname = \"x\"", "automations.x: the name is used twice"},
		{"window on github", "[[automations]]\nname = \"x\"\nscheme = \"github\"\nwindow = \"1m\"", "automations.x.window"},
		{"short window", "[[automations]]\nname = \"x\"\nscheme = \"standard\"\nwindow = \"500ms\"", "automations.x.window"},
		{"long window", "[[automations]]\nname = \"x\"\nwindow = \"25h\"", "automations.x.window"},
		{"small body", "[[automations]]\nname = \"x\"\nmax_body_bytes = 10", "automations.x.max_body_bytes"},
		{"memory without title", "[[automations]]\nname = \"x\"\nmemory = { description = \"d\" }", "automations.x.memory.title"},
		{"unnamed", "[[automations]]\nwindow = \"1ms\"", "automations[0].window"},
		{"rate", "[[automations]]\nname = \"x\"\nrate = \"10\"", "rate \"10\""},
		{"unknown key", "[[automations]]\nname = \"x\"\ncommand = \"make\"", "automations.command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.toml))
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse = %v; want %s naming %q", err, catalog.ErrConfig.Code, tt.err)
			}
		})
	}
}

func TestRateText(t *testing.T) {
	for in, want := range map[string]config.Rate{
		"10/m": {10, time.Minute}, "1/s": {1, time.Second}, "100/h": {100, time.Hour}, "3/30s": {3, 30 * time.Second},
		"100000/24h": {100000, 24 * time.Hour},
	} {
		var r config.Rate
		if err := r.UnmarshalText([]byte(in)); err != nil || r != want {
			t.Errorf("%q: %+v, %v; want %+v", in, r, err, want)
			continue
		}
		var back config.Rate
		if b, _ := r.MarshalText(); back.UnmarshalText(b) != nil || back != r {
			t.Errorf("%+v marshals to %q, which reads back as %+v", r, b, back)
		}
	}
	for _, in := range []string{"", "10", "/m", "0/m", "-1/m", "100001/m", "1/d", "1/500ms", "1/25h", "x/m", "1/"} {
		var r config.Rate
		if err := r.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q accepted as %+v", in, r)
		}
	}
}
