package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/plugins/pluginpolicy"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

func TestPolicyFromConfig(t *testing.T) {
	for ws, want := range map[string]toolmanifest.Access{"none": toolmanifest.AccessNone, "read-only": toolmanifest.AccessReadOnly, "read-write": toolmanifest.AccessReadWrite} {
		p := config.Default().Plugins
		p.Workspace = ws
		p.AllowEgress = []string{"*.example.com"}
		pol := pluginpolicy.Of(&p)
		if pol.MaxWorkspace != want || pol.AllowEgress[0] != "*.example.com" || pol.MaxMemory != uint64(p.MaxMemory) || pol.MaxTimeout != p.MaxTimeout.Duration {
			t.Errorf("%s: %+v", ws, pol)
		}
	}
	// The defaults give no network: a manifest asking for a host is refused.
	m, err := toolmanifest.Parse([]byte("name = \"x\"\ndescription = \"d\"\nschema = '{\"type\":\"object\"}'\n[run]\ncommand = [\"x\"]\n[permissions]\negress = [\"api.example.com:443\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default().Plugins
	if err := pluginpolicy.Of(&def).Check(m); !errors.Is(err, catalog.ErrPolicy) {
		t.Errorf("egress under the default policy: %v, want ErrPolicy", err)
	}
}

func TestCompileEgress(t *testing.T) {
	rules, err := pluginpolicy.CompileEgress("x", []string{"api.example.com:443 GET", "*.example.org"})
	if err != nil || len(rules) != 2 || rules[0].Host != "api.example.com" {
		t.Fatalf("%+v %v", rules, err)
	}
	if _, err := pluginpolicy.CompileEgress("x", []string{"http://bad/"}); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("a URL as a rule: %v, want ErrBadInput", err)
	}
}

// store lays out one tool as install does, with schema.
func store(t *testing.T, schema string) toolstore.Store {
	t.Helper()
	s := toolstore.Store{Root: t.TempDir()}
	dir := filepath.Join("echo", "v1")
	if err := os.MkdirAll(filepath.Join(s.Root, dir, toolstore.TreeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := toolmanifest.Parse([]byte("name = \"echo\"\ndescription = \"d\"\nschema = '" + schema + "'\n[run]\ncommand = [\"bin/echo\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := toolmanifest.Encode(m)
	os.WriteFile(filepath.Join(s.Root, dir, toolstore.ApprovedName), enc, 0o644)
	os.WriteFile(filepath.Join(s.Root, dir, toolstore.SchemaName), m.Schema.Inline, 0o644)
	err = s.Update(func(l *toolstore.Lock) error {
		l.Tools["echo"] = &toolstore.Tool{Name: "echo", Source: "t", Resolved: "tree:x", Checksum: "sha256:x", Dir: dir, Installed: time.Now()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Decode checks the input against the tool's schema.json before anything
// starts; the lock is read again when it changes.
func TestDecode(t *testing.T) {
	s := store(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`)
	rt := New(Options{Store: s, Config: config.Default()})
	for in, ok := range map[string]bool{`{"n":3}`: true, `{"n":0}`: false, `{}`: false, `{"n":1,"x":2}`: false, `[1]`: false, `{"n":`: false, ``: false} {
		_, err := rt.Decode("echo", []byte(in))
		if ok && err != nil {
			t.Errorf("%s: %v", in, err)
		}
		if !ok && !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", in, err)
		}
	}
	if _, err := rt.Decode("gone", []byte(`{}`)); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Errorf("unknown: %v", err)
	}
	if err := s.Update(func(l *toolstore.Lock) error { delete(l.Tools, "echo"); return nil }); err != nil {
		t.Fatal(err)
	}
	if rt.Has("echo") {
		t.Error("a removed tool is still served")
	}
}

// Inspect tells a tool that would start from one whose tree changed since
// install or whose approval the configuration no longer covers.
func TestInspect(t *testing.T) {
	s := store(t, `{"type":"object"}`)
	err := s.Update(func(l *toolstore.Lock) error {
		sum, err := toolstore.TreeHash(s.Tree(l.Tools["echo"]))
		l.Tools["echo"].Checksum = sum
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	hs, err := Inspect(s, cfg)
	if err != nil || len(hs) != 1 || !hs[0].OK || len(hs[0].Permissions) == 0 {
		t.Fatalf("a sound tool: %+v %v", hs, err)
	}
	cfg.Plugins.MaxMemory = 128 << 20
	if hs, _ := Inspect(s, cfg); hs[0].OK {
		t.Errorf("a tool approved for 256 MiB under max_memory = 128MiB: %+v", hs[0])
	}
	cfg = config.Default()
	l, _ := s.Load()
	if err := os.WriteFile(filepath.Join(s.Tree(l.Tools["echo"]), "planted"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if hs, _ := Inspect(s, cfg); hs[0].OK || !errors.Is(s.Verify(l.Tools["echo"]), catalog.ErrPolicy) {
		t.Errorf("a changed tree: %+v", hs[0])
	}
}

// A project that enables other tools gets this one refused, whatever its
// own tools directory says.
func TestEnabled(t *testing.T) {
	en := toolstore.Enablement{Path: filepath.Join(t.TempDir(), "contextd", toolstore.EnabledName)}
	rt := New(Options{Store: store(t, `{"type":"object"}`), Config: config.Default(), Enablement: &en})
	if err := rt.Enabled("echo", "/p"); err != nil {
		t.Errorf("a project with no record: %v", err)
	}
	if err := en.Set("/p", toolstore.Choice{Tools: []string{"other"}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Enabled("echo", "/p"); !errors.Is(err, catalog.ErrPolicy) {
		t.Errorf("a project enabling other tools: %v, want ErrPolicy", err)
	}
	if err := rt.Enabled("echo", "/q"); err != nil {
		t.Errorf("another project: %v", err)
	}
}
