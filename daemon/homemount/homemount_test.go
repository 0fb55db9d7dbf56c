package homemount

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/scrub"
)

func setupFor(t *testing.T, mode CacheMode) (*Setup, string, string) {
	t.Helper()
	home := t.TempDir()
	victim.WriteFiles(t, home, map[string]string{
		".gitconfig":              "[user]\n\tname = T\n",
		".npmrc":                  "//registry.npmjs.org/:_authToken=plainword\n",
		"go/pkg/mod/x":            "m",
		".cache/go-build/00/a":    "o",
		"proj/go.mod":             "module x\n",
		"proj/web/package.json":   "{}",
		".config/git/credentials": "https://u:pw@h\n",
	})
	os.MkdirAll(filepath.Join(home, ".npm"), 0o755)
	lm, err := cachelayer.New(&cachelayer.Options{Root: filepath.Join(t.TempDir(), "layers")})
	if err != nil {
		t.Fatal(err)
	}
	return &Setup{Layers: lm, Mode: mode, SystemDirs: []string{"/usr"}, CopiesDir: filepath.Join(t.TempDir(), "views")},
		home, filepath.Join(home, "proj")
}

func TestPrepare(t *testing.T) {
	s, home, ws := setupFor(t, Overlay)
	sc, err := scrub.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	m, release, err := s.Prepare(Call{Home: home, Workspace: ws, Sandbox: "safe_bash", Vault: scrub.NewVault(), Scrubber: sc,
		CallerEnv: map[string]string{"PATH": "/usr/bin", "GOPATH": filepath.Join(home, "go"), "CARGO_HOME": "relative"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.HomeDir, s.Layers.Root()+"/") {
		t.Errorf("scratch home %s is not a layer of %s", m.HomeDir, s.Layers.Root())
	}
	var lowers []string
	for _, o := range m.Overlays {
		lowers = append(lowers, o.Lower)
		if !strings.HasPrefix(o.Upper, s.Layers.Root()+"/") || !strings.HasPrefix(o.Work, s.Layers.Root()+"/") {
			t.Errorf("overlay %+v: layers outside the root", o)
		}
	}
	if want := []string{filepath.Join(home, "go/pkg/mod"), filepath.Join(home, ".cache/go-build"), filepath.Join(home, ".npm")}; !slices.Equal(lowers, want) {
		t.Errorf("overlays %v, want %v", lowers, want)
	}
	if len(m.Binds) != 2 || m.Binds[0].Target != filepath.Join(home, ".gitconfig") || m.Binds[1].Target != filepath.Join(home, ".npmrc") || m.Secrets != 1 {
		t.Fatalf("binds %+v (%d secrets)", m.Binds, m.Secrets)
	}
	b, err := os.ReadFile(m.Binds[1].Source)
	if err != nil || strings.Contains(string(b), "plainword") {
		t.Errorf("copy %q %v", b, err)
	}
	// git's credential store is neither shown nor below anything shown.
	for _, r := range m.ReadOnly {
		if homeview.Within(filepath.Join(home, ".config/git/credentials"), r) {
			t.Errorf("git's credentials are shown by %s (masks %v)", r, m.Masks)
		}
	}
	if want := []string{"GOPATH=" + filepath.Join(home, "go")}; !slices.Equal(m.Env, want) {
		t.Errorf("env %v, want %v (relative values are dropped)", m.Env, want)
	}
	// A second call while the first holds the layers gets throwaway ones
	// and says so.
	m2, release2, err := s.Prepare(Call{Home: home, Workspace: ws, Sandbox: "safe_bash", Vault: scrub.NewVault(), Scrubber: sc})
	if err != nil {
		t.Fatal(err)
	}
	if m2.HomeDir == m.HomeDir || len(m2.Warnings) != 1 || m2.Warnings[0] != cachelayer.BusyWarning {
		t.Errorf("concurrent call: scratch %s (first %s), warnings %v", m2.HomeDir, m.HomeDir, m2.Warnings)
	}
	release2()
	release()
	if _, err := os.Stat(m.Binds[0].Source); !os.IsNotExist(err) {
		t.Errorf("scrubbed copy left after release: %v", err)
	}
	if _, err := os.Stat(m.HomeDir); err != nil {
		t.Errorf("the scratch home does not outlive the call: %v", err)
	}
}

// Without overlayfs the user's caches are not shown at all: the toolchain
// fills its cache in the scratch home. The check is on every mount the
// call gets, with caches below directories that are shown for another
// reason (~/.cargo, the install prefix of ~/.cargo/bin on PATH).
func TestPreparePrivate(t *testing.T) {
	s, home, ws := setupFor(t, Private)
	caches := []string{filepath.Join(home, "go/pkg/mod"), filepath.Join(home, ".cache/go-build"), filepath.Join(home, ".npm"),
		filepath.Join(home, ".cargo/registry")}
	for _, p := range []string{"go/bin/gopls", ".cargo/bin/cargo", ".cargo/registry/index/x", "proj/Cargo.toml"} {
		os.MkdirAll(filepath.Join(home, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(home, p), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc, _ := scrub.New(nil)
	m, release, err := s.Prepare(Call{Home: home, Workspace: ws, Sandbox: "safe_bash", Vault: scrub.NewVault(), Scrubber: sc,
		CallerEnv: map[string]string{"PATH": filepath.Join(home, "go/bin") + ":" + filepath.Join(home, ".cargo/bin") + ":/usr/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if m.HomeDir == "" {
		t.Fatal("no scratch home")
	}
	if !slices.Contains(m.ReadOnly, filepath.Join(home, ".cargo")) {
		t.Fatalf("~/.cargo not shown (%v): the check below could not fail", m.ReadOnly)
	}
	masked := func(p string) bool {
		return slices.ContainsFunc(m.Masks, func(k string) bool { return homeview.Within(p, k) })
	}
	for _, c := range caches {
		for _, r := range m.ReadOnly {
			if (homeview.Within(c, r) || homeview.Within(r, c)) && !masked(c) {
				t.Errorf("cache %s is shown by the read-only %s", c, r)
			}
		}
		for _, o := range m.Overlays {
			if homeview.Within(c, o.Lower) || homeview.Within(o.Lower, c) {
				t.Errorf("cache %s is shown by an overlay of %s", c, o.Lower)
			}
		}
		for _, b := range m.Binds {
			if homeview.Within(b.Source, c) {
				t.Errorf("cache %s is shown by a bind of %s", c, b.Source)
			}
		}
	}
}

// Each sandbox has its own scratch home, and a workspace made again at its
// path gets a new one.
func TestPrepareScratchPerSandbox(t *testing.T) {
	s, home, ws := setupFor(t, Overlay)
	sc, _ := scrub.New(nil)
	scratch := func(sandbox string) string {
		t.Helper()
		m, release, err := s.Prepare(Call{Home: home, Workspace: ws, Sandbox: sandbox, Vault: scrub.NewVault(), Scrubber: sc})
		if err != nil {
			t.Fatal(err)
		}
		release()
		return m.HomeDir
	}
	bash := scratch("safe_bash")
	if again := scratch("safe_bash"); again != bash {
		t.Fatalf("safe_bash's scratch home moved: %s, then %s", bash, again)
	}
	if srv := scratch("mcp:srv"); srv == bash {
		t.Errorf("a wrapped server shares safe_bash's scratch home %s", bash)
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(ws, 0o755)
	if renewed := scratch("safe_bash"); renewed == bash {
		t.Errorf("a workspace made again at %s gets the old scratch home", ws)
	}
	if _, _, err := s.Prepare(Call{Home: home, Workspace: ws, Vault: scrub.NewVault(), Scrubber: sc}); err == nil {
		t.Error("a call without a sandbox name got layers")
	}
}
