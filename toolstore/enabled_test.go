package toolstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolstore"
)

func TestEnablement(t *testing.T) {
	e := toolstore.Enablement{Path: filepath.Join(t.TempDir(), "state", toolstore.EnabledName)}
	// Never recorded: every installed tool, and forgetting it writes nothing.
	if c, err := e.Of("/p"); err != nil || !c.All {
		t.Fatalf("unrecorded project: %+v %v, want All", c, err)
	}
	if err := e.Forget("/p"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(e.Path); err == nil {
		t.Fatal("Forget of nothing wrote the file")
	}
	// Concurrent projects each keep their choice.
	var wg sync.WaitGroup
	for i, root := range []string{"/a", "/b", "/c", "/d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := toolstore.Choice{Tools: []string{"zeta", "alpha", "zeta"}}
			if i == 0 {
				c = toolstore.Choice{}
			}
			if err := e.Set(root, c); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	tests := []struct {
		root string
		tool string
		want bool
	}{
		{"/a", "alpha", false}, // an empty choice enables nothing
		{"/b", "alpha", true},
		{"/b", "zeta", true},
		{"/b", "beta", false},
		{"/elsewhere", "beta", true},
	}
	for _, tt := range tests {
		c, err := e.Of(tt.root)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Enables(tt.tool); got != tt.want {
			t.Errorf("%s enables %s: %v, want %v (%+v)", tt.root, tt.tool, got, tt.want, c)
		}
	}
	if c, _ := e.Of("/c"); !slices.Equal(c.Tools, []string{"alpha", "zeta"}) {
		t.Errorf("recorded %v, want sorted without repeats", c.Tools)
	}
	if err := e.Forget("/b"); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.Of("/b"); !c.All {
		t.Errorf("forgotten project: %+v, want All", c)
	}
	if c, _ := e.Of("/c"); c.All || len(c.Tools) != 2 {
		t.Errorf("forgetting /b changed /c: %+v", c)
	}
}

func TestEnablementRefuses(t *testing.T) {
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged.json")
	if err := os.WriteFile(damaged, []byte(`{"version":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(damaged, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want error
	}{
		{damaged, catalog.ErrConfig},
		{link, catalog.ErrIO},
	}
	for _, tt := range tests {
		_, err := toolstore.Enablement{Path: tt.path}.Of("/p")
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", filepath.Base(tt.path), err, tt.want)
		}
	}
}

func TestDefaultEnablement(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/st")
	if e, err := toolstore.DefaultEnablement(); err != nil || e.Path != "/st/contextd/"+toolstore.EnabledName {
		t.Errorf("with XDG_STATE_HOME: %+v %v", e, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/h")
	if e, err := toolstore.DefaultEnablement(); err != nil || e.Path != "/h/.local/state/contextd/"+toolstore.EnabledName {
		t.Errorf("with a relative XDG_STATE_HOME: %+v %v", e, err)
	}
}

// A project named through a symbolic link, or a repository made inside it,
// has the project's choice: the daemon (which resolves) and the installer
// (which names it as the user does) read the same record.
func TestEnablementResolvesAndInherits(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := toolstore.Enablement{Path: filepath.Join(base, "state", toolstore.EnabledName)}
	if err := e.Set(link, toolstore.Choice{Tools: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{real, link, filepath.Join(real, "sub")} {
		c, err := e.Of(root)
		if err != nil || c.All || !c.Enables("a") || c.Enables("b") {
			t.Errorf("Of(%s) = %+v, %v; want only a", root, c, err)
		}
	}
	if c, _ := e.Of(base); !c.All {
		t.Errorf("an unrecorded project: %+v, want every tool", c)
	}
}
