package homemount

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/homeview"
	"github.com/contextd/contextd/scrub"
)

func setupFor(t *testing.T, mode CacheMode) (*Setup, string, string) {
	t.Helper()
	home := t.TempDir()
	for name, content := range map[string]string{
		".gitconfig":              "[user]\n\tname = T\n",
		".npmrc":                  "//registry.npmjs.org/:_authToken=plainword\n",
		"go/pkg/mod/x":            "m",
		".cache/go-build/00/a":    "o",
		"proj/go.mod":             "module x\n",
		"proj/web/package.json":   "{}",
		".config/git/credentials": "https://u:pw@h\n",
	} {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
	m, release, err := s.Prepare(Call{Home: home, Workspace: ws, Vault: scrub.NewVault(), Scrubber: sc,
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
	if len(m.Binds) != 1 || m.Binds[0].Target != filepath.Join(home, ".npmrc") || m.Secrets != 1 {
		t.Fatalf("binds %+v (%d secrets)", m.Binds, m.Secrets)
	}
	b, err := os.ReadFile(m.Binds[0].Source)
	if err != nil || strings.Contains(string(b), "plainword") {
		t.Errorf("copy %q %v", b, err)
	}
	if !slices.Contains(m.Masks, filepath.Join(home, ".config/git/credentials")) {
		t.Errorf("masks %v", m.Masks)
	}
	if want := []string{"GOPATH=" + filepath.Join(home, "go")}; !slices.Equal(m.Env, want) {
		t.Errorf("env %v, want %v (relative values are dropped)", m.Env, want)
	}
	// A second call while the first holds the layers gets throwaway ones
	// and says so.
	m2, release2, err := s.Prepare(Call{Home: home, Workspace: ws, Vault: scrub.NewVault(), Scrubber: sc})
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
// fills its cache in the scratch home.
func TestPreparePrivate(t *testing.T) {
	s, home, ws := setupFor(t, Private)
	sc, _ := scrub.New(nil)
	m, release, err := s.Prepare(Call{Home: home, Workspace: ws, Vault: scrub.NewVault(), Scrubber: sc,
		Options: homeview.Options{PresetsOff: []string{"node"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if len(m.Overlays) != 0 || m.HomeDir == "" || len(m.Binds) != 0 {
		t.Errorf("private mode: %+v", m)
	}
	for _, p := range m.ReadOnly {
		if strings.HasPrefix(p, filepath.Join(home, "go")) || strings.HasPrefix(p, filepath.Join(home, ".cache")) {
			t.Errorf("a cache is shown in private mode: %s", p)
		}
	}
}
