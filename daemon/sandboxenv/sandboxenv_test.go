package sandboxenv

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/scrub"
)

// fixture is a home with a token in ~/.gitconfig and a Go cache, and a
// project in it with git, a nested agent configuration and no .vscode.
func fixture(t *testing.T) (b *Builder, root string) {
	t.Helper()
	home := t.TempDir()
	victim.WriteFiles(t, home, map[string]string{
		".gitconfig":                     "[http]\n\textraHeader = Authorization: Bearer ghp_Zq8mR2vL5xK9tW3nB7cY1dF6hJ4pS0aE2gUi\n",
		".ssh/id_ed25519":                "k",
		"go/pkg/mod/x":                   "m",
		"proj/.git/config":               "[core]\n",
		"proj/.git/hooks/x":              "",
		"proj/go.mod":                    "module x\n",
		"proj/sub/.claude/settings.json": "{}",
		"proj/.claude/tools/safe_bash/x": "",
	})
	lm, err := cachelayer.New(&cachelayer.Options{Root: filepath.Join(t.TempDir(), "layers")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Tools.SafeBash.ReadOnly = []string{"/opt"}
	cfg.MCP.Servers = map[string]config.MCPServer{"docs": {ReadWrite: []string{"/srv"}, TasksMax: 7, Env: []string{"DOCS_MODE"}}}
	hs := &homemount.Setup{Layers: lm, Mode: homemount.Overlay, SystemDirs: []string{"/usr"}, CopiesDir: filepath.Join(t.TempDir(), "views")}
	return &Builder{Config: cfg, Home: hs, HomeDir: home, NetErr: errors.New("no proxy here")}, filepath.Join(home, "proj")
}

// Build makes what Plan describes: the same view, path for path and in
// order, but for where a scrubbed copy lies (made per call).
func TestPlanIsBuild(t *testing.T) {
	b, root := fixture(t)
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []Kind{Shell, Writer, Reader, Server} {
		req := Request{Kind: kind, Name: "safe_bash", Workspace: root, CallerEnv: map[string]string{"PATH": "/usr/bin", "DOCS_MODE": "x"},
			Vault: scrub.NewVault(), Scrubber: sc, Launcher: "npx"}
		switch kind {
		case Writer:
			req.Name = "safe_write"
		case Reader:
			req.Name = "safe_read"
		case Server:
			req.Name = "docs"
		}
		plan, err := b.Plan(req)
		if err != nil {
			t.Fatalf("%v: plan: %v", kind, err)
		}
		built, err := b.Build(req)
		if err != nil {
			t.Fatalf("%v: build: %v", kind, err)
		}
		got := built.Spec.View()
		for i, bd := range got.Binds {
			if filepath.Dir(filepath.Dir(bd.Source)) == b.Home.CopiesDir {
				got.Binds[i].Source = homemount.PlannedCopy
			}
		}
		if want := plan.Spec.View(); !reflect.DeepEqual(want, got) {
			t.Errorf("%v: planned\n%+v\nbuilt\n%+v", kind, want, got)
		}
		if !slices.Equal(plan.Vars, built.Vars) && kind != Server {
			t.Errorf("%v: variables planned %v, built %v", kind, plan.Vars, built.Vars)
		}
		built.Release(nil)
		// Released: the placeholder is gone.
		if _, err := os.Lstat(filepath.Join(root, ".vscode")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: .vscode after release: %v", kind, err)
		}
	}
}

// What each kind of sandbox gets, and what it does not.
func TestKinds(t *testing.T) {
	b, root := fixture(t)
	vscode := filepath.Join(root, ".vscode")
	nested := filepath.Join(root, "sub/.claude")
	gitconfig := filepath.Join(b.HomeDir, ".gitconfig")
	for _, tc := range []struct {
		req                  Request
		vscode, nested, home bool
		extra                string // a configured path
		tasks                uint64
		hasVar               string
	}{
		{req: Request{Kind: Shell, Name: "safe_bash"}, vscode: true, nested: true, home: true, extra: "/opt", hasVar: "CONTEXTD_WORKSPACE=" + root},
		{req: Request{Kind: Writer, Name: "safe_write"}, vscode: true},
		// Listed, not created: a missing path is not bound.
		{req: Request{Kind: Reader, Name: "safe_read"}, vscode: true},
		{req: Request{Kind: Server, Name: "docs", Launcher: "npx"}, vscode: true, home: true, extra: "/srv", tasks: 7, hasVar: "DOCS_MODE=x"},
	} {
		tc.req.Workspace, tc.req.CallerEnv = root, map[string]string{"DOCS_MODE": "x"}
		e, err := b.Plan(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		v := e.Spec.View()
		all := append(append(append([]string{}, v.ReadOnly...), v.ReadWrite...), v.Masks...)
		for _, b := range v.Binds {
			all = append(all, b.Target)
		}
		if slices.Contains(v.ReadOnly, vscode) != tc.vscode {
			t.Errorf("%s: .vscode's placeholder %v, want %v", tc.req.Name, slices.Contains(v.ReadOnly, vscode), tc.vscode)
		}
		if slices.Contains(v.ReadOnly, nested) != tc.nested {
			t.Errorf("%s: nested agent configuration read-only %v, want %v", tc.req.Name, !tc.nested, tc.nested)
		}
		if slices.Contains(all, gitconfig) != tc.home || (v.HomeDir != "") != tc.home {
			t.Errorf("%s: home view %v (scratch %q), want %v", tc.req.Name, slices.Contains(all, gitconfig), v.HomeDir, tc.home)
		}
		if tc.extra != "" && !slices.Contains(all, tc.extra) {
			t.Errorf("%s: the configured %s is not shown", tc.req.Name, tc.extra)
		}
		if tc.tasks != 0 && v.Limits.TasksMax != tc.tasks {
			t.Errorf("%s: tasks max %d, want %d", tc.req.Name, v.Limits.TasksMax, tc.tasks)
		}
		if tc.hasVar != "" && !slices.Contains(e.Vars, tc.hasVar) {
			t.Errorf("%s: variables %v lack %s", tc.req.Name, e.Vars, tc.hasVar)
		}
		// No proxy here: a sandbox that would have one says it has none.
		said := slices.ContainsFunc(e.Warnings, func(w string) bool { return len(w) > 15 && w[:15] == "no egress proxy" })
		if said != (tc.req.Kind == Shell || tc.req.Kind == Server) {
			t.Errorf("%s: warnings %q", tc.req.Name, e.Warnings)
		}
		if v.Workspace != root || v.Home != b.HomeDir || v.Network {
			t.Errorf("%s: workspace %s, home %s, host network %v", tc.req.Name, v.Workspace, v.Home, v.Network)
		}
	}
}

// Refusals fail closed, with the class a caller can act on.
func TestRefusals(t *testing.T) {
	b, root := fixture(t)
	for _, tc := range []struct {
		name string
		b    *Builder
		req  Request
		want error
	}{
		{"no builder", nil, Request{Kind: Shell, Name: "safe_bash", Workspace: root}, catalog.ErrSandbox},
		{"host network not allowed", b, Request{Kind: Shell, Name: "safe_bash", Workspace: root, HostNetwork: true}, catalog.ErrPolicy},
		{"the home as workspace", b, Request{Kind: Shell, Name: "safe_bash", Workspace: b.HomeDir}, catalog.ErrPolicy},
		{"a deny-listed workspace", b, Request{Kind: Writer, Name: "safe_write", Workspace: filepath.Join(b.HomeDir, ".ssh")}, catalog.ErrPolicy},
	} {
		e, err := tc.b.Build(tc.req)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		e.Release(nil)
	}
	// Allowed, the host network replaces the proxy.
	b.Config.Tools.SafeBash.AllowNetwork = true
	e, err := b.Plan(Request{Kind: Shell, Name: "safe_bash", Workspace: root, HostNetwork: true})
	if err != nil || !e.Spec.Network || len(e.Spec.Listen) != 0 {
		t.Errorf("host network: %v, network %v, listen %v", err, e.Spec.Network, e.Spec.Listen)
	}
	// A reservation's limits are the server's own; the refusal comes
	// before anything is reserved.
	b.Config.Tools.SafeBash.AllowNetwork = false
	if lim, err := b.Limits(Request{Kind: Server, Name: "docs"}); err != nil || lim != (runner.Limits{TasksMax: 7}) {
		t.Errorf("server limits %+v, %v", lim, err)
	}
	if _, err := b.Limits(Request{Kind: Shell, Name: "safe_bash", HostNetwork: true}); !errors.Is(err, catalog.ErrPolicy) {
		t.Errorf("limits of a host-network call where it is off: %v, want a policy refusal", err)
	}
	var none *Builder
	if _, err := none.Limits(Request{Kind: Shell, Name: "safe_bash"}); !errors.Is(err, catalog.ErrSandbox) {
		t.Errorf("limits without a builder: %v", err)
	}
}

// An automation's variables reach the command from HookEnv only: a caller
// that sends one, even one the configuration lists, does not get it there.
func TestCommandEnvHook(t *testing.T) {
	caller := map[string]string{"LANG": "C", "CONTEXTD_HOOK_REF": "forged"}
	extra := []string{"CONTEXTD_HOOK_REF"}
	cases := []struct {
		name string
		hook map[string]string
		want string // CONTEXTD_HOOK_REF's entry; "" none
	}{
		{"proxy call", nil, ""},
		{"hook call", map[string]string{"CONTEXTD_HOOK_REF": "main"}, "CONTEXTD_HOOK_REF=main"},
		{"outside the prefix", map[string]string{"OTHER": "x"}, ""},
		{"a credential", map[string]string{"CONTEXTD_HOOK_REF": "ghp_0123456789abcdef"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := CommandEnv(caller, tc.hook, extra, "s", "/w")
			var got string
			for _, v := range vars {
				if strings.HasPrefix(v, "CONTEXTD_HOOK_REF=") {
					got = v
				}
				if strings.HasPrefix(v, "OTHER=") {
					t.Errorf("%q passed", v)
				}
			}
			if got != tc.want {
				t.Errorf("CONTEXTD_HOOK_REF: got %q, want %q (all: %q)", got, tc.want, vars)
			}
			if !slices.Contains(vars, "LANG=C") {
				t.Errorf("the caller's LANG is missing: %q", vars)
			}
		})
	}
}
