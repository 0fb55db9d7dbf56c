package automation_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/automation"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/webhook"
)

// base is a valid automation in a fresh workspace with a 0600 secret.
func base(t testing.TB) config.Automation {
	dir := t.TempDir()
	ws := filepath.Join(dir, "proj")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "ci.secret")
	if err := os.WriteFile(secret, []byte("It's a Secret to Everybody\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return config.Automation{
		Name: "ci", Workspace: ws, Scheme: "github", SecretFile: secret,
		Rate: config.Rate{Count: 2, Per: time.Minute}, MaxBodyBytes: 1 << 20,
		Tool: "safe_bash", Input: map[string]any{"command": `echo "$CONTEXTD_HOOK_REF"`, "timeout": int64(60)},
		Env: map[string]string{"REF": "pull_request.head.ref"},
	}
}

func TestCompile(t *testing.T) {
	a := base(t)
	c, err := automation.Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "ci" || c.Workspace != a.Workspace || c.Tool != "safe_bash" || c.MaxBodyBytes != 1<<20 || c.Limiter == nil {
		t.Errorf("compiled %+v", c)
	}
	// The secret is the file's content without its final newline.
	g, ok := c.Verifier.(webhook.GitHub)
	if !ok || string(g.Secret) != "It's a Secret to Everybody" {
		t.Errorf("verifier %#v", c.Verifier)
	}
	env := c.FixedEnv(webhook.Delivery{ID: "d-1", Event: "push"})
	if len(env) != 3 || env["CONTEXTD_HOOK_NAME"] != "ci" || env["CONTEXTD_HOOK_DELIVERY"] != "d-1" || env["CONTEXTD_HOOK_EVENT"] != "push" {
		t.Errorf("FixedEnv = %v", env)
	}

	// A Standard Webhooks secret is decoded; the window is the entry's.
	a.Scheme, a.Window = "standard", config.Duration{Duration: time.Minute}
	if err := os.WriteFile(a.SecretFile, []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = automation.Compile(a)
	if s, ok := c.Verifier.(webhook.Standard); err != nil || !ok || len(s.Secret) != 24 || s.Window != time.Minute {
		t.Errorf("standard: %#v, %v", c.Verifier, err)
	}

	// A workspace through a symlink is kept as its real path.
	a = base(t)
	real, err := filepath.EvalSymlinks(a.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	a.Workspace = filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, a.Workspace); err != nil {
		t.Fatal(err)
	}
	if c, err := automation.Compile(a); err != nil || c.Workspace != real {
		t.Errorf("workspace through a link: %+v, %v; want %s", c, err, real)
	}

	// Plugin tools are taken by name; built-in ones get their schema checked.
	a = base(t)
	a.Tool, a.Env, a.Args, a.Input = "wordcount", map[string]string{"X": "a"}, map[string]string{"text": "issue.body"}, nil
	if _, err := automation.Compile(a); err != nil {
		t.Errorf("plugin tool: %v", err)
	}
	a = base(t)
	a.Tool, a.Env, a.Input, a.Args = "memory_search", nil, nil, map[string]string{"query": "issue.title"}
	if _, err := automation.Compile(a); err != nil {
		t.Errorf("memory_search with args: %v", err)
	}
}

// Each refusal names its key and wraps the configuration error.
func TestCompileRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, a *config.Automation)
		wants string
	}{
		{"name", func(t *testing.T, a *config.Automation) { a.Name = "CI" }, `automations.name "CI"`},
		{"long name", func(t *testing.T, a *config.Automation) { a.Name = strings.Repeat("a", 41) }, "automations.name"},
		{"relative workspace", func(t *testing.T, a *config.Automation) { a.Workspace = "proj" }, "automations.ci.workspace"},
		{"missing workspace", func(t *testing.T, a *config.Automation) { a.Workspace += "/nope" }, "automations.ci.workspace"},
		{"file workspace", func(t *testing.T, a *config.Automation) { a.Workspace = a.SecretFile }, "is not a directory"},
		{"root workspace", func(t *testing.T, a *config.Automation) { a.Workspace = "/" }, "never a workspace"},
		{"no secret file", func(t *testing.T, a *config.Automation) { a.SecretFile = "" }, "automations.ci.secret_file: required"},
		{"relative secret", func(t *testing.T, a *config.Automation) { a.SecretFile = "ci.secret" }, "must be absolute or start with ~/"},
		{"missing secret", func(t *testing.T, a *config.Automation) { a.SecretFile += ".gone" }, "automations.ci.secret_file"},
		{"secret mode", func(t *testing.T, a *config.Automation) { chmod(t, a.SecretFile, 0o640) }, "mode 0640"},
		{"secret world", func(t *testing.T, a *config.Automation) { chmod(t, a.SecretFile, 0o604) }, "chmod 600"},
		{"secret owner", func(t *testing.T, a *config.Automation) {
			if err := os.Chown(a.SecretFile, os.Getuid()+1, -1); err != nil {
				t.Skipf("cannot give the file away: %v", err)
			}
		}, "is not yours"},
		{"secret symlink", func(t *testing.T, a *config.Automation) {
			link := a.SecretFile + ".link"
			if err := os.Symlink(a.SecretFile, link); err != nil {
				t.Fatal(err)
			}
			a.SecretFile = link
		}, "is a symlink"},
		{"secret dir", func(t *testing.T, a *config.Automation) { a.SecretFile = a.Workspace }, "not a regular file"},
		{"empty secret", func(t *testing.T, a *config.Automation) { write(t, a.SecretFile, "\n") }, "is empty"},
		{"huge secret", func(t *testing.T, a *config.Automation) { write(t, a.SecretFile, strings.Repeat("s", 4097)) }, "over 4096 bytes"},
		{"standard secret", func(t *testing.T, a *config.Automation) { a.Scheme = "standard" }, "whsec_"},
		{"scheme", func(t *testing.T, a *config.Automation) { a.Scheme = "gitlab" }, "automations.ci.scheme"},
		{"rate", func(t *testing.T, a *config.Automation) { a.Rate = config.Rate{} }, "automations.ci.rate"},
		{"no tool", func(t *testing.T, a *config.Automation) { a.Tool = "" }, "automations.ci.tool"},
		{"bad tool", func(t *testing.T, a *config.Automation) { a.Tool = "Safe Bash" }, "automations.ci.tool"},
		{"branch", func(t *testing.T, a *config.Automation) { a.Tool, a.Env = "branch", nil }, "no session"},
		{"args on safe_bash", func(t *testing.T, a *config.Automation) { a.Args = map[string]string{"command": "head_commit.message"} }, "automations.ci.args: safe_bash's input is a shell line"},
		{"env on safe_read", func(t *testing.T, a *config.Automation) {
			a.Tool, a.Input = "safe_read", map[string]any{"path": "README.md"}
		}, "automations.ci.env: safe_read runs no command"},
		{"env name", func(t *testing.T, a *config.Automation) { a.Env = map[string]string{"ref": "ref"} }, "automations.ci.env.ref"},
		{"reserved env", func(t *testing.T, a *config.Automation) { a.Env = map[string]string{"DELIVERY": "id"} }, "always set"},
		{"credential env", func(t *testing.T, a *config.Automation) { a.Env = map[string]string{"API_TOKEN": "token"} }, "named like a credential"},
		{"bad path", func(t *testing.T, a *config.Automation) { a.Env = map[string]string{"REF": "a..b"} }, "automations.ci.env.REF: path"},
		{"bad index", func(t *testing.T, a *config.Automation) { a.Env = map[string]string{"REF": "a[x]"} }, "not an index"},
		{"unknown field", func(t *testing.T, a *config.Automation) { a.Input["cmd"] = "x" }, `safe_bash has no field "cmd"`},
		{"required field", func(t *testing.T, a *config.Automation) { delete(a.Input, "command") }, `safe_bash needs "command"`},
		{"args field", func(t *testing.T, a *config.Automation) {
			a.Tool, a.Env, a.Input, a.Args = "memory_search", nil, nil, map[string]string{"q": "issue.title"}
		}, `memory_search has no field "q"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base(t)
			tc.edit(t, &a)
			c, err := automation.Compile(a)
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tc.wants) || c != nil {
				t.Fatalf("Compile = %v, %v; want %s naming %q", c, err, catalog.ErrConfig.Code, tc.wants)
			}
		})
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The limiter holds Count at once, then one more each Per/Count of the
// injected clock, and says how long until the next.
func TestLimiter(t *testing.T) {
	l := automation.NewLimiter(config.Rate{Count: 3, Per: 30 * time.Second})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		if ok, _ := l.Allow(t0); !ok {
			t.Fatalf("call %d of the burst refused", i)
		}
	}
	for _, tc := range []struct {
		at    time.Duration
		ok    bool
		retry time.Duration
	}{
		{0, false, 10 * time.Second},
		{4 * time.Second, false, 6 * time.Second},
		{10 * time.Second, true, 0},
		{10 * time.Second, false, 10 * time.Second},
		{5 * time.Second, false, 10 * time.Second}, // the clock went back: nothing refilled
		{time.Hour, true, 0},                       // refilled to 3, not more
		{time.Hour, true, 0},
		{time.Hour, true, 0},
		{time.Hour, false, 10 * time.Second},
	} {
		ok, retry := l.Allow(t0.Add(tc.at))
		if ok != tc.ok || retry != tc.retry {
			t.Errorf("at +%s: %v, retry %s; want %v, %s", tc.at, ok, retry, tc.ok, tc.retry)
		}
	}
}
