package homeview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configured list is checked against the deny-list of the daemon's own
// user: $HOME and the toolchain variables of its environment.
func TestCheckConfiguredList(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	xdg := filepath.Join(t.TempDir(), "config")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	for _, tc := range []struct {
		name  string
		paths []string
		want  string // substring of the error; "" when accepted
	}{
		{"none", nil, ""},
		{"plain", []string{"~/src/shared", "/opt/tools"}, ""},
		{"ssh", []string{"~/src", home + "/.ssh"}, ".ssh"},
		{"below", []string{"~/.aws/credentials"}, "lies below"},
		{"contains", []string{"~/.config"}, "contains"},
		{"the environment's XDG_CONFIG_HOME", []string{filepath.Join(xdg, "gh")}, "GitHub CLI"},
	} {
		err := CheckConfiguredList("home.read_only", tc.paths)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "home.read_only: ")):
			t.Errorf("%s: %v, want an error naming home.read_only and %q", tc.name, err, tc.want)
		}
	}
	// Without a home nothing can be checked: a list is refused, no list is
	// fine.
	t.Setenv("HOME", "")
	if _, err := os.UserHomeDir(); err == nil {
		t.Skip("the home directory is known without $HOME")
	}
	if err := CheckConfiguredList("home.read_only", []string{"/opt/tools"}); err == nil || !strings.Contains(err.Error(), "home directory is unknown") {
		t.Errorf("no home: %v", err)
	}
	if err := CheckConfiguredList("home.read_only", nil); err != nil {
		t.Errorf("no home, no list: %v", err)
	}
}

func TestCheckPresetNames(t *testing.T) {
	if err := CheckPresetNames("home.presets_off", []string{"java", "go"}); err != nil {
		t.Errorf("known presets: %v", err)
	}
	err := CheckPresetNames("home.presets_off", []string{"go", "gov"})
	if err == nil || !strings.Contains(err.Error(), `home.presets_off: no preset "gov"`) || !strings.Contains(err.Error(), "go, node") {
		t.Errorf("unknown preset: %v", err)
	}
}
