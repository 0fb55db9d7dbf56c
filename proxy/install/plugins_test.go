package install_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/internal/toolstoretest"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/toolspec"
	"github.com/contextd/contextd/toolstore"
)

const (
	helloSchema = `{"type":"object","properties":{"name":{"type":"string"}}}`
	lintSchema  = `{"type":"object","properties":{"path":{"type":"string"}}}`
)

func fakeStore(t *testing.T, root string) toolstore.Store {
	return toolstoretest.Write(t, filepath.Join(filepath.Dir(root), "store"),
		toolstoretest.Tool{Name: "hello", Description: "Say hello", Schema: helloSchema, Doc: "# hello\n"},
		toolstoretest.Tool{Name: "lint", Description: "Lint a file", Schema: lintSchema})
}

// pluginFiles is what the tools directory holds of plugin tools: each
// path below a plugin's directory with its content or link target.
func pluginFiles(t *testing.T, td string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p, v := range snapshot(t, td) {
		top, _, _ := strings.Cut(p, "/")
		if _, builtin := toolspec.Get(top); !builtin && p != install.ManifestName && p != "." {
			out[p] = v
		}
	}
	return out
}

// Install lays out each enabled tool of the store beside the built-ins,
// records it so the proxy takes its name, does nothing on a second run,
// and removes a tool the store no longer has or the project no longer
// enables.
func TestSetupLaysOutPlugins(t *testing.T) {
	root, bin := project(t, nil)
	fakeStore(t, root)
	o := opts(root, bin)
	o.Agent = install.AgentClaude
	td := filepath.Join(root, install.DefaultDir)
	all := map[string]string{
		"hello":             "dir -rwxr-xr-x",
		"hello/hello":       "-> " + bin,
		"hello/schema.json": "-rw-r--r-- " + helloSchema,
		"hello/TOOL.md":     "-rw-r--r-- # hello\n",
		"lint":              "dir -rwxr-xr-x",
		"lint/lint":         "-> " + bin,
		"lint/schema.json":  "-rw-r--r-- " + lintSchema,
	}
	if _, err := install.Setup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "first install", pluginFiles(t, td), all)
	first := snapshot(t, td)
	if _, err := install.Setup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "second install", snapshot(t, td), first)

	laidOut := func(want ...string) {
		t.Helper()
		for _, n := range []string{"hello", "lint", "safe_bash", "nope", "../x"} {
			if got := install.PluginLaidOut(td, n); got != slices.Contains(want, n) {
				t.Errorf("PluginLaidOut(%s) = %v, want laid out: %v", n, got, want)
			}
		}
	}
	laidOut("hello", "lint")

	steps := []struct {
		name   string
		change func(*install.Options, toolstore.Store)
		want   []string // the plugin tools laid out after it
	}{
		{"only hello", func(o *install.Options, _ toolstore.Store) { o.Tools = []string{"hello"} }, []string{"hello"}},
		{"no plugins", func(o *install.Options, _ toolstore.Store) { o.Tools, o.NoPlugins = nil, true }, nil},
		{"all again", func(o *install.Options, _ toolstore.Store) { o.NoPlugins = false }, []string{"hello", "lint"}},
		{"lint removed from the store", func(_ *install.Options, s toolstore.Store) { toolstoretest.Remove(t, s, "lint") }, []string{"hello"}},
	}
	store := toolstore.Store{Root: o.ToolStore}
	e := toolstore.Enablement{Path: filepath.Join(o.StateDir, toolstore.EnabledName)}
	for _, st := range steps {
		st.change(&o, store)
		if _, err := install.Setup(context.Background(), o); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want := map[string]string{}
		for p, v := range all {
			if top, _, _ := strings.Cut(p, "/"); slices.Contains(st.want, top) {
				want[p] = v
			}
		}
		sameTree(t, st.name, pluginFiles(t, td), want)
		laidOut(st.want...)
		c, err := e.Of(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"hello", "lint"} {
			if c.Enables(n) != (o.Tools == nil && !o.NoPlugins || slices.Contains(o.Tools, n)) {
				t.Errorf("%s: the recorded choice %+v is not the options' (%v, %v)", st.name, c, o.Tools, o.NoPlugins)
			}
		}
	}

	// A tool the store does not hold is refused before anything is written.
	before := snapshot(t, root)
	o.Tools = []string{"hello", "gone"}
	if _, err := install.Setup(context.Background(), o); !errors.Is(err, catalog.ErrUsage) || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("--tools naming a tool not installed: %v, want ErrUsage naming it", err)
	}
	sameTree(t, "refused --tools", snapshot(t, root), before)

	// Uninstall takes the plugin tools back with the rest, and the record
	// of the project's choice.
	if _, err := install.Uninstall(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(td); err == nil {
		t.Errorf("%s is still there after uninstall: %v", td, slices.Collect(maps.Keys(snapshot(t, td))))
	}
	if c, err := e.Of(root); err != nil || !c.All {
		t.Errorf("after uninstall the project's choice is %+v (%v), want none recorded", c, err)
	}
}

// A plugin tool named like a built-in is refused, the built-in keeps its
// directory; a plugin file the user changed is kept when the tool goes.
func TestInstallPluginsRefuseAndKeep(t *testing.T) {
	dir, bin := setup(t)
	hello := install.Plugin{Name: "hello", Schema: []byte(helloSchema), Doc: []byte("# hello\n")}
	clash := install.Plugin{Name: "safe_read", Schema: []byte(`{"type":"object"}`), Doc: []byte("mine")}
	rep, err := install.Install(dir, bin, hello, clash)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep)["safe_read"]; !strings.HasPrefix(got, "refused") {
		t.Errorf("a plugin named safe_read: %q, want refused", got)
	}
	checkInstalled(t, dir, bin)
	if !install.PluginLaidOut(dir, "hello") || install.PluginLaidOut(dir, "safe_read") {
		t.Error("the record of plugin tools is wrong")
	}

	// The tool loses its TOOL.md: the file goes.
	hello.Doc = nil
	rep, err = install.Install(dir, bin, hello)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep)["hello/TOOL.md"]; got != "removed" {
		t.Errorf("hello/TOOL.md: %q, want removed", got)
	}

	mine := []byte(`{"type":"object","description":"edited"}`)
	if err := os.WriteFile(filepath.Join(dir, "hello", "schema.json"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = install.Install(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"hello/hello": "removed", "hello/schema.json": "kept (changed since install)"}
	for p, w := range want {
		if got := actions(rep)[p]; got != w {
			t.Errorf("%s: %q, want %q", p, got, w)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "hello", "schema.json")); string(got) != string(mine) {
		t.Errorf("the user's schema.json was changed: %s", got)
	}
	if install.PluginLaidOut(dir, "hello") {
		t.Error("hello is still recorded as laid out")
	}
	// Forgotten: a later install with the tool again does not take the
	// user's file for its own.
	if _, err := install.Install(dir, bin, install.Plugin{Name: "hello", Schema: []byte(helloSchema)}); !errors.Is(err, catalog.ErrConflict) {
		t.Errorf("hello again over the user's schema.json: %v, want ErrConflict", err)
	}
}

func TestParseToolsFlags(t *testing.T) {
	tests := []struct {
		args      []string
		tools     []string
		noPlugins bool
		err       error
	}{
		{nil, nil, false, nil},
		{[]string{"--tools", "a, b,,c"}, []string{"a", "b", "c"}, false, nil},
		{[]string{"--tools=hello"}, []string{"hello"}, false, nil},
		{[]string{"--no-plugins"}, nil, true, nil},
		{[]string{"--tools", ","}, nil, false, catalog.ErrUsage},
		{[]string{"--tools"}, nil, false, catalog.ErrUsage},
		{[]string{"--tools", "Bad/Name"}, nil, false, catalog.ErrUsage},
		{[]string{"--tools", "safe_bash"}, nil, false, catalog.ErrUsage},
		{[]string{"--tools", "a", "--no-plugins"}, nil, false, catalog.ErrUsage},
		{[]string{"--no-plugins=yes"}, nil, false, catalog.ErrUsage},
	}
	for _, tt := range tests {
		o, _, err := install.ParseInstallArgs(tt.args)
		if !errors.Is(err, tt.err) || err == nil && tt.err != nil {
			t.Errorf("%q: %v, want %v", tt.args, err, tt.err)
			continue
		}
		if err == nil && (!slices.Equal(o.Tools, tt.tools) || o.NoPlugins != tt.noPlugins) {
			t.Errorf("%q: tools %q no-plugins %v, want %q %v", tt.args, o.Tools, o.NoPlugins, tt.tools, tt.noPlugins)
		}
	}
	if _, _, err := install.ParseUninstallArgs([]string{"--tools", "a"}); !errors.Is(err, catalog.ErrUsage) {
		t.Errorf("uninstall --tools: %v, want ErrUsage", err)
	}
}
