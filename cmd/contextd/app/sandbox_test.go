package app

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/homemount"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/internal/victim"
)

// The report lists what the daemon would mount, in the daemon's own terms:
// the scratch home at $HOME, the view's paths with what showed them, the
// caches as overlays, the masks; and the deny-listed paths present here.
func TestSandboxShow(t *testing.T) {
	home := t.TempDir()
	victim.WriteFiles(t, home, map[string]string{
		".gitconfig":              "[user]\n\tname = T\n",
		".ssh/id_ed25519":         "k",
		".config/git/credentials": "c",
		".config/git/ignore":      "*.o\n",
		"go/pkg/mod/x":            "m",
		"proj/.git/config":        "[core]\n",
		"proj/go.mod":             "module x\n",
		"proj/.mcp.json":          "{}",
	})
	lm, err := cachelayer.New(&cachelayer.Options{Root: filepath.Join(t.TempDir(), "layers")})
	if err != nil {
		t.Fatal(err)
	}
	setup := &homemount.Setup{Layers: lm, Mode: homemount.Overlay, SystemDirs: []string{"/usr"}}
	root := filepath.Join(home, "proj")
	rootID, err := cachelayer.Identity(root)
	if err != nil {
		t.Fatal(err)
	}
	b := &sandboxenv.Builder{Config: config.Default(), Home: setup, HomeDir: home, NetErr: errors.New("no proxy in this test")}
	rep, err := sandboxShow(b, root, map[string]string{"PATH": "/usr/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Presets, []string{"git", "go"}) || rep.CacheMode != homemount.Overlay {
		t.Errorf("presets %v, mode %s", rep.Presets, rep.CacheMode)
	}
	want := map[string]string{
		"/usr":                             "ro",
		root:                               "rw",
		filepath.Join(root, ".mcp.json"):   "ro",
		filepath.Join(root, ".git/config"): "ro",
		home:                               "rw",
		filepath.Join(home, ".gitconfig"):  "copy",
		filepath.Join(home, "go/pkg/mod"):  "overlay",
	}
	got := map[string]string{}
	for _, e := range rep.Mounts {
		got[e.Path] = e.Mode
		if e.Path == home && e.Source != lm.Planned(cachelayer.Key{Workspace: root, Identity: rootID, Sandbox: "safe_bash"}, homemount.ScratchLayer).Upper {
			t.Errorf("scratch home from %s", e.Source)
		}
	}
	for p, mode := range want {
		if got[p] != mode {
			t.Errorf("%s: %q, want %q", p, got[p], mode)
		}
	}
	if rep.NetworkErr != "no proxy in this test" {
		t.Errorf("network error %q", rep.NetworkErr)
	}
	if !slices.Contains(rep.Denied, filepath.Join(home, ".ssh")) {
		t.Errorf("denied %v lacks ~/.ssh", rep.Denied)
	}
}
