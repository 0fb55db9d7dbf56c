package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/seccomp"
)

func TestTools(t *testing.T) {
	want := []string{"mcp-server", "no_exec", "plugin", "safe_bash", "safe_read", "safe_write", "tool_build", "tool_fetch"}
	if got := Tools(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Tools() = %v, want %v", got, want)
	}
	for _, tool := range want {
		if _, err := Embedded(tool); err != nil {
			t.Errorf("%s: %v", tool, err)
		}
	}
}

// setup points the search at fresh directories and returns the user's and
// the system's profile directories (not created).
func setup(t *testing.T) (user, system string) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	old := systemDir
	systemDir = filepath.Join(dir, "etc", "contextd", "profiles")
	t.Cleanup(func() { systemDir = old })
	return filepath.Join(dir, "xdg", "contextd", "profiles"), systemDir
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// profileWith is a valid profile whose comment identifies it.
func profileWith(comment string) string {
	return `{"comment": "` + comment + `", "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
		{"comment": "c", "names": ["ptrace"], "action": "SCMP_ACT_ERRNO"}]}`
}

func TestLoadPrecedence(t *testing.T) {
	user, system := setup(t)

	p, src, err := Load("safe_bash")
	if err != nil || src != "embedded:safe_bash.json" || p.DefaultAction != seccomp.ActAllow {
		t.Fatalf("no files: %v %q %v", p, src, err)
	}

	sys := write(t, system, "safe_bash.json", profileWith("system"))
	if p, src, err := Load("safe_bash"); err != nil || src != sys || p.Comment != "system" {
		t.Fatalf("system file: %q %q %v", p.Comment, src, err)
	}
	// Other tools still come from the binary.
	if _, src, err := Load("safe_read"); err != nil || src != "embedded:safe_read.json" {
		t.Fatalf("safe_read with only safe_bash overridden: %q %v", src, err)
	}

	usr := write(t, user, "safe_bash.json", profileWith("user"))
	if p, src, err := Load("safe_bash"); err != nil || src != usr || p.Comment != "user" {
		t.Fatalf("user file wins: %q %q %v", p.Comment, src, err)
	}

	// Without XDG_CONFIG_HOME, or with a relative one, ~/.config is used.
	home := os.Getenv("HOME")
	homeFile := write(t, filepath.Join(home, ".config", "contextd", "profiles"), "safe_bash.json", profileWith("home"))
	for _, xdg := range []string{"", "relative/dir"} {
		t.Setenv("XDG_CONFIG_HOME", xdg)
		if p, src, err := Load("safe_bash"); err != nil || src != homeFile || p.Comment != "home" {
			t.Fatalf("XDG_CONFIG_HOME=%q: %q %q %v", xdg, p.Comment, src, err)
		}
	}
	if d := Dirs(); len(d) != 2 || d[0] != filepath.Dir(homeFile) || d[1] != system {
		t.Errorf("Dirs() = %v", d)
	}
}

// A file that exists but is broken or unreadable is an error: never a
// silent fall back to the next file or the embedded profile.
func TestLoadFailsClosed(t *testing.T) {
	user, system := setup(t)
	write(t, system, "safe_bash.json", profileWith("system"))

	broken := write(t, user, "safe_bash.json", `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["ptrace"], "action": "SCMP_ACT_ERRNO"}]}`)
	p, src, err := Load("safe_bash")
	if !errors.Is(err, seccomp.ErrInvalidProfile) || p != nil || src != broken || !strings.Contains(err.Error(), broken) {
		t.Fatalf("broken user file: %v %q %v", p, src, err)
	}

	os.Remove(broken)
	if err := os.Mkdir(broken, 0o755); err != nil { // exists, cannot be read as a file
		t.Fatal(err)
	}
	if p, _, err := Load("safe_bash"); err == nil || errors.Is(err, ErrNoProfile) {
		t.Fatalf("unreadable user file: %v %v", p, err)
	}

	os.Remove(broken)
	write(t, system, "safe_read.json", `not json`)
	if _, _, err := Load("safe_read"); !errors.Is(err, seccomp.ErrInvalidProfile) {
		t.Fatalf("broken system file: %v", err)
	}
}

func TestLoadToolNames(t *testing.T) {
	user, _ := setup(t)
	for _, tool := range []string{"", "../safe_bash", "safe_bash.json", "Safe_Bash", "a/b"} {
		if _, _, err := Load(tool); !errors.Is(err, ErrNoProfile) {
			t.Errorf("Load(%q): %v, want ErrNoProfile", tool, err)
		}
	}
	if _, _, err := Load("future-tool"); !errors.Is(err, ErrNoProfile) {
		t.Errorf("tool without a profile: %v", err)
	}
	// A tool without an embedded profile can still get one from a file.
	f := write(t, user, "future-tool.json", profileWith("mine"))
	if p, src, err := Load("future-tool"); err != nil || src != f || p.Comment != "mine" {
		t.Errorf("user profile for a new tool: %v %q %v", p, src, err)
	}
}

// The cache follows the override files: one that appears, changes or goes away
// takes effect on the next call.
func TestCacheFollowsOverrides(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	var c Cache
	_, src, err := c.JSON("safe_bash")
	if err != nil || src != "embedded:safe_bash.json" {
		t.Fatalf("first: %q %v", src, err)
	}
	dir := filepath.Join(cfg, "contextd", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "safe_bash.json")
	write := func(s string, mtime time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, mtime, mtime)
	}
	write(`{"comment":"a","defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`, time.Unix(1000, 0))
	data, src, err := c.JSON("safe_bash")
	if err != nil || src != path || !strings.Contains(string(data), `"a"`) {
		t.Fatalf("override: %q %s %v", src, data, err)
	}
	write(`{"comment":"b","defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`, time.Unix(2000, 0))
	if data, _, _ = c.JSON("safe_bash"); !strings.Contains(string(data), `"b"`) {
		t.Fatalf("changed override not picked up: %s", data)
	}
	write(`{broken`, time.Unix(3000, 0))
	if _, _, err := c.JSON("safe_bash"); err == nil {
		t.Fatal("a broken override was not an error (fail closed)")
	}
	os.Remove(path)
	if _, src, err := c.JSON("safe_bash"); err != nil || src != "embedded:safe_bash.json" {
		t.Fatalf("after removal: %q %v", src, err)
	}
}
