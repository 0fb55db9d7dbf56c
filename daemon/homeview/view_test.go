package homeview

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

// fakeHome builds a home with a bit of everything: toolchains on PATH,
// configuration with and without credentials, caches, and deny-listed
// secrets, some below directories that are shown.
func fakeHome(t *testing.T) (home, ws string) {
	t.Helper()
	home = t.TempDir()
	files := map[string]string{
		".gitconfig":                               "[user]\n\tname = T\n",
		".config/git/ignore":                       "*.o\n",
		".config/git/credentials":                  "https://u:pw@example.com\n",
		".ssh/id_ed25519":                          "PRIVATE",
		".aws/credentials":                         "[default]\n",
		"go/bin/gopls":                             "bin",
		"go/pkg/mod/cache/download/x":              "mod",
		".cache/go-build/00/a":                     "obj",
		".cargo/bin/cargo":                         "bin",
		".cargo/credentials.toml":                  "[registry]\ntoken = \"x\"\n",
		".rustup/toolchains/stable/bin":            "rustc",
		".local/share/pipx/venvs/black/bin/black":  "py",
		".local/share/pipx/venvs/black/pyvenv.cfg": "home = /usr/bin\n",
		".local/share/keyrings/login.keyring":      "k",
		".npmrc":                                   "//registry.npmjs.org/:_authToken=npm_x\n",
		".npm/_cacache/index":                      "i",
		".m2/settings.xml":                         "<settings/>",
		"ws/go.mod":                                "module x\n",
		"ws/web/package.json":                      "{}",
	}
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The system's programs are this test's own, not the machine's: which
	// toolchains are on PATH decides which configuration is shown.
	if err := os.MkdirAll(filepath.Join(sysDir(home), "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sysDir(home), "bin", "sh"), []byte("ELF"), 0o755)
	os.MkdirAll(filepath.Join(home, ".local/bin"), 0o755)
	if err := os.Symlink(filepath.Join(home, ".local/share/pipx/venvs/black/bin/black"), filepath.Join(home, ".local/bin/black")); err != nil {
		t.Fatal(err)
	}
	return home, filepath.Join(home, "ws")
}

// sysDir is fakeHome's stand-in for /usr, beside the home in the test's
// temporary directory.
func sysDir(home string) string { return home + "-usr" }

func hostFor(home, ws string) *Host {
	path := strings.Join([]string{
		filepath.Join(home, "go/bin"), filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".local/bin"),
		filepath.Join(home, ".ssh"), filepath.Join(sysDir(home), "bin"), ".",
	}, ":")
	return &Host{Home: home, Workspace: ws, Env: map[string]string{"PATH": path}}
}

func TestResolve(t *testing.T) {
	home, ws := fakeHome(t)
	v, err := Resolve(hostFor(home, ws), Options{SystemDirs: []string{sysDir(home)}})
	if err != nil {
		t.Fatal(err)
	}
	h := func(p string) string { return filepath.Join(home, p) }
	if got := strings.Join(v.Presets, ","); got != "git,go,node" {
		t.Errorf("presets %s, want git,go,node (go.mod at the root, package.json one level down)", got)
	}
	if got := strings.Join(v.ConfigOnly, ","); got != "rust" {
		t.Errorf("configuration-only presets %s, want rust (cargo on PATH; nothing of python's or java's)", got)
	}
	wantRO := []string{
		h(".config/git/ignore"),                    // git
		h("go/bin"),                                // PATH; ~/go, with its sources, is no install prefix
		h(".cargo/bin"), h(".cargo"), h(".rustup"), // PATH, prefix, implied root
		h(".local/bin"), h(".local/share/pipx/venvs/black"), // PATH and a link's prefix
	}
	for _, p := range wantRO {
		if !slices.Contains(v.ReadOnly, p) {
			t.Errorf("%s not shown; read-only: %v", p, v.ReadOnly)
		}
	}
	for _, p := range []string{home, h(".local"), h(".ssh"), filepath.Join(sysDir(home), "bin"), h(".config"), h("go"), h(".config/git"), h(".gitconfig")} {
		if slices.Contains(v.ReadOnly, p) {
			t.Errorf("%s shown: %v", p, v.ReadOnly)
		}
	}
	// ~/.gitconfig, ~/.npmrc: the git and node presets'; ~/.cargo/credentials.toml:
	// rust's configuration, cargo being on PATH (and ~/.cargo is shown);
	// ~/.m2/settings.xml: java is off, none of its programs is on PATH, and
	// nothing shows it.
	if want := []string{h(".cargo/credentials.toml"), h(".gitconfig"), h(".npmrc")}; !slices.Equal(v.Scrubbed, want) {
		t.Errorf("scrubbed %v, want %v", v.Scrubbed, want)
	}
	var caches []string
	for _, c := range v.Caches {
		caches = append(caches, c.Name+"="+c.Path)
	}
	if want := []string{"go-mod=" + h("go/pkg/mod"), "go-build=" + h(".cache/go-build"), "npm=" + h(".npm")}; !slices.Equal(caches, want) {
		t.Errorf("caches %v, want %v", caches, want)
	}
	// Only ~/.config/git/ignore is shown of git's directory, so its
	// credentials need no mask; nor do ~/.ssh and ~/.aws, below nothing
	// shown.
	if len(v.Masks) != 0 {
		t.Errorf("masks %v, want none", v.Masks)
	}
	if !slices.ContainsFunc(v.Skipped, func(s string) bool { return strings.HasPrefix(s, h(".ssh")+":") }) {
		t.Errorf("~/.ssh on PATH not reported as skipped: %v", v.Skipped)
	}
}

func TestResolveOptions(t *testing.T) {
	home, ws := fakeHome(t)
	os.MkdirAll(filepath.Join(home, "shared"), 0o755)
	v, err := Resolve(hostFor(home, ws), Options{PresetsOff: []string{"git", "node", "rust"}, ReadOnly: []string{"~/shared"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(v.ReadOnly, filepath.Join(home, ".gitconfig")) || slices.Contains(v.Scrubbed, filepath.Join(home, ".npmrc")) ||
		slices.Contains(v.ConfigOnly, "rust") {
		t.Errorf("presets turned off still apply: %+v", v)
	}
	// rust is off, but ~/.cargo is shown as the prefix of ~/.cargo/bin: its
	// credentials show as their scrubbed copy all the same.
	if !slices.Contains(v.Scrubbed, filepath.Join(home, ".cargo/credentials.toml")) {
		t.Errorf("~/.cargo/credentials.toml below a shown ~/.cargo is not a copy: %v", v.Scrubbed)
	}
	if !slices.Contains(v.ReadOnly, filepath.Join(home, "shared")) {
		t.Errorf("configured path not shown: %v", v.ReadOnly)
	}
	for _, bad := range []string{"~/.ssh", "~/.ssh/config", "~", "relative"} {
		if _, err := Resolve(hostFor(home, ws), Options{ReadOnly: []string{bad}}); !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("read_only %q: %v, want a configuration error", bad, err)
		}
	}
}

// A deny-listed path is never shown, whether a configured entry is it, lies
// below it, contains it, or reaches it through a symbolic link.
func TestCheckConfigured(t *testing.T) {
	home, _ := fakeHome(t)
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "keys"))
	os.MkdirAll(filepath.Join(home, "src"), 0o755)
	h := &Host{Home: home, Env: map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "cfg")}}
	tests := []struct {
		path string
		want string // "" = allowed; else a word of the message
	}{
		{"~/src", ""},
		{"/opt/tools", ""},
		{"~/.ssh", " is "},
		{"~/.ssh/config", "lies below"},
		{"~", "contains"},
		{"/", "contains"},
		{"~/keys", " is "},       // a symlink to ~/.ssh: its canonical path is ~/.ssh
		{"~/cfg/gh", " is "},     // XDG_CONFIG_HOME from the environment
		{"~/.config/gh", " is "}, // the default place stays denied with XDG_CONFIG_HOME elsewhere
		{"~/cfg/contextd/config.toml", "lies below"},
	}
	for _, tt := range tests {
		err := CheckConfigured(h, "tools.safe_bash.read_only", tt.path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.path, err)
		case tt.want != "" && err == nil:
			t.Errorf("%s: allowed, want refused", tt.path)
		case tt.want != "" && (!strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "tools.safe_bash.read_only")):
			t.Errorf("%s: %q does not say %q and name the key", tt.path, err, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	h := &Host{Home: "/home/u", Env: map[string]string{"GOPATH": "/srv/go:/other", "XDG_CACHE_HOME": "rel"}}
	tests := map[string]string{
		"~":                   "/home/u",
		"~/.gitconfig":        "/home/u/.gitconfig",
		"$GOMODCACHE":         "/srv/go/pkg/mod",         // the first GOPATH element
		"$GOCACHE":            "/home/u/.cache/go-build", // a relative XDG_CACHE_HOME is ignored, as go does
		"$XDG_CONFIG_HOME/gh": "/home/u/.config/gh",
		"$NOPE/x":             "",
		"relative":            "",
	}
	for in, want := range tests {
		got, ok := h.expand(in)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

// docs/sandbox.md reproduces the presets and the deny-list: every path of
// the tables must appear there, so that the two cannot drift apart.
func TestDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, d := range denyList {
		if !strings.Contains(doc, "`"+d.Path+"`") {
			t.Errorf("deny-list entry %s is not in docs/sandbox.md", d.Path)
		}
	}
	for _, p := range Presets {
		if !strings.Contains(doc, "| `"+p.Name+"` |") {
			t.Errorf("preset %s has no row in docs/sandbox.md", p.Name)
		}
		for _, prog := range p.Programs {
			if !strings.Contains(doc, "`"+prog+"`") {
				t.Errorf("preset %s: program %s not in docs/sandbox.md", p.Name, prog)
			}
		}
		for _, c := range p.Caches {
			if !strings.Contains(doc, c.Path) && !strings.Contains(doc, strings.TrimPrefix(c.Path, "$npm_config_cache")) {
				t.Errorf("preset %s: cache %s not in docs/sandbox.md", p.Name, c.Path)
			}
		}
	}
}

// A caller's XDG_CONFIG_HOME elsewhere does not move the deny-list away
// from the default places: ~/.config/gh stays denied, and masked when
// ~/.config is shown.
func TestDenyListKeepsDefaults(t *testing.T) {
	home, ws := fakeHome(t)
	os.MkdirAll(filepath.Join(home, ".config/gh"), 0o700)
	os.WriteFile(filepath.Join(home, ".config/gh/hosts.yml"), []byte("oauth_token: x"), 0o600)
	h := hostFor(home, ws)
	h.Env["XDG_CONFIG_HOME"] = filepath.Join(home, "xdg")
	h.Env["PATH"] = filepath.Join(home, ".config") + ":/usr/bin"
	var paths []string
	for _, d := range DenyList(h) {
		paths = append(paths, d.Path)
	}
	for _, want := range []string{filepath.Join(home, "xdg/gh"), filepath.Join(home, ".config/gh")} {
		if !slices.Contains(paths, want) {
			t.Errorf("deny-list lacks %s", want)
		}
	}
	if err := CheckConfigured(h, "home.read_only", "~/.config/gh"); err == nil {
		t.Error("~/.config/gh allowed with XDG_CONFIG_HOME elsewhere")
	}
	v, err := Resolve(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(v.ReadOnly, filepath.Join(home, ".config")) || !slices.Contains(v.Masks, filepath.Join(home, ".config/gh")) {
		t.Errorf("~/.config on PATH: shown %v, masks %v", v.ReadOnly, v.Masks)
	}
}

// npm reads NPM_CONFIG_USERCONFIG in upper case too: the view shows the
// scrubbed copy of the file it names, not of ~/.npmrc, and a wrapped npx
// gets the node preset without a package.json (Options.Presets).
func TestNpmUserconfigUpperCase(t *testing.T) {
	home, ws := fakeHome(t)
	custom := filepath.Join(home, "custom.npmrc")
	os.WriteFile(custom, []byte("//r.example/:_authToken=abc\n"), 0o600)
	h := hostFor(home, ws)
	h.Env["NPM_CONFIG_USERCONFIG"] = custom
	v, err := Resolve(h, Options{SystemDirs: []string{sysDir(home)}, Presets: []string{"node"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(v.Scrubbed, custom) || !slices.Contains(v.Presets, "node") {
		t.Fatalf("scrubbed %v, presets %v: want %s and node", v.Scrubbed, v.Presets, custom)
	}
}
