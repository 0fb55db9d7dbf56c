package homeview

import (
	"fmt"
	"slices"
	"strings"
)

// Preset is one group of paths under $HOME that development with a toolchain
// needs. Paths are templates (Host.expand): "~/x", "$VAR/x". Every path is
// shown only if it exists, and never if it touches the deny-list.
type Preset struct {
	Name string
	// Markers are file names at the workspace root, or in a directory
	// directly below it, that select the preset ("go.mod"); a trailing "*"
	// matches any rest ("requirements*"). No markers: every call. Markers
	// select the whole preset, its caches included.
	Markers []string
	// Programs are the names of the toolchain's commands. One of them on
	// the caller's PATH applies the preset's configuration (Show and
	// Scrubbed, not Caches) whatever the workspace holds: the user's
	// ~/.npmrc is what npm reads wherever it runs, in a Go repository as in
	// a node project. A wrapped MCP server launched as one of them gets the
	// whole preset (LauncherPresets).
	Programs []string
	// Show are paths shown read-only: configuration the toolchain reads.
	Show []string
	// Scrubbed are configuration files that may hold credentials: shown
	// read-only as a copy with every secret replaced by its session
	// placeholder, never the file itself.
	Scrubbed []string
	// Caches are the toolchain's caches: shown as the read-only lower layer
	// of an overlay whose upper layer contextd owns, so that a warm run
	// reuses them and no sandboxed write reaches them.
	Caches []Cache
}

// Cache is one toolchain cache directory.
type Cache struct {
	Name string // its name in `contextd cache list` and below the layers' root
	Path string // template
}

// Presets is the table of what each preset shows, in the order they apply.
// docs/sandbox.md reproduces it; the configuration turns presets off
// ([home] presets_off) and adds paths ([home] read_only).
var Presets = []Preset{
	{
		// Identity, aliases, ignore and attribute rules, so that commit,
		// log and diff behave as outside. Both config files may hold
		// credentials (http.extraHeader, a remote or insteadOf URL with a
		// token in it): they show as copies. The credential stores are on
		// the deny-list; a credential.helper named here finds nothing to
		// use.
		Name:     "git",
		Show:     []string{"$XDG_CONFIG_HOME/git/ignore", "$XDG_CONFIG_HOME/git/attributes"},
		Scrubbed: []string{"~/.gitconfig", "$XDG_CONFIG_HOME/git/config"},
	},
	{
		// `go env -w` settings (GOPROXY, GOPRIVATE, GOFLAGS); GOPROXY may
		// hold a user and password.
		Name:     "go",
		Markers:  []string{"go.mod", "go.work"},
		Programs: []string{"go"},
		Scrubbed: []string{"$XDG_CONFIG_HOME/go/env"},
		Caches: []Cache{
			{Name: "go-mod", Path: "$GOMODCACHE"},
			{Name: "go-build", Path: "$GOCACHE"},
		},
	},
	{
		// npm's and pnpm's user config hold registry auth tokens
		// (_authToken, _auth, _password); yarn v1's too, yarn berry's
		// npmAuthToken.
		Name:     "node",
		Markers:  []string{"package.json"},
		Programs: []string{"npx", "npm", "node", "pnpm", "pnpx", "yarn", "bunx", "bun"},
		Scrubbed: []string{"$npm_config_userconfig", "$XDG_CONFIG_HOME/pnpm/rc", "~/.yarnrc", "~/.yarnrc.yml"},
		Caches: []Cache{
			{Name: "npm", Path: "$npm_config_cache"},
			{Name: "yarn", Path: "$XDG_CACHE_HOME/yarn"},
			{Name: "yarn-berry", Path: "~/.yarn/berry/cache"},
			{Name: "pnpm", Path: "$XDG_DATA_HOME/pnpm/store"},
		},
	},
	{
		// pip's config may name an index URL with a password in it.
		Name:     "python",
		Markers:  []string{"pyproject.toml", "setup.py", "setup.cfg", "requirements*", "Pipfile", "tox.ini"},
		Programs: []string{"uvx", "uv", "pipx", "python", "python3", "pip", "pip3"},
		Scrubbed: []string{"$XDG_CONFIG_HOME/pip/pip.conf", "~/.pip/pip.conf", "$XDG_CONFIG_HOME/uv/uv.toml", "$XDG_CONFIG_HOME/pypoetry/config.toml"},
		Caches: []Cache{
			{Name: "pip", Path: "$PIP_CACHE_DIR"},
			{Name: "uv", Path: "$UV_CACHE_DIR"},
			{Name: "poetry", Path: "$POETRY_CACHE_DIR"},
		},
	},
	{
		// Registry tokens live in credentials.toml (and, in older setups,
		// in config.toml's [registries] tables).
		Name:     "rust",
		Markers:  []string{"Cargo.toml"},
		Programs: []string{"cargo"},
		Show:     []string{"$RUSTUP_HOME"},
		Scrubbed: []string{"$CARGO_HOME/config.toml", "$CARGO_HOME/config", "$CARGO_HOME/credentials.toml", "$CARGO_HOME/credentials"},
		Caches: []Cache{
			{Name: "cargo-registry", Path: "$CARGO_HOME/registry"},
			{Name: "cargo-git", Path: "$CARGO_HOME/git"},
		},
	},
	{
		// settings.xml holds <server> passwords; gradle.properties often
		// holds repository credentials.
		Name:     "java",
		Markers:  []string{"pom.xml", "mvnw", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradlew"},
		Programs: []string{"java", "mvn", "gradle", "jbang"},
		Scrubbed: []string{"~/.m2/settings.xml", "$GRADLE_USER_HOME/gradle.properties"},
		Caches: []Cache{
			{Name: "maven", Path: "~/.m2/repository"},
			{Name: "gradle-caches", Path: "$GRADLE_USER_HOME/caches"},
			{Name: "gradle-wrapper", Path: "$GRADLE_USER_HOME/wrapper"},
		},
	},
}

// impliedRoots are what a toolchain directory on PATH needs besides itself:
// rustup's proxies in ~/.cargo/bin run the toolchains in $RUSTUP_HOME.
var impliedRoots = []struct{ pathDir, root string }{
	{"$CARGO_HOME/bin", "$RUSTUP_HOME"},
}

// installRoots are directories below the home that a toolchain manager
// owns whole: a PATH directory in one shows the install prefix it belongs
// to (its parent), which holds the toolchain's libraries. Some are git
// clones (pyenv, asdf); prefixSecrets shows their .git/config as a copy.
var installRoots = []string{
	"$CARGO_HOME",    // cargo's bin and its config (scrubbed by the rust preset)
	"$RUSTUP_HOME",   // rustup's toolchains
	"$PYENV_ROOT",    // pyenv's shims and Pythons
	"$NVM_DIR",       // nvm's node versions
	"$SDKMAN_DIR",    // sdkman's candidates (java, gradle, maven)
	"$ASDF_DATA_DIR", // asdf's shims and installs
	"$MISE_DATA_DIR", // mise's installs
	"$NODENV_ROOT",   // nodenv's node versions (a git clone, like pyenv)
	"$RBENV_ROOT",    // rbenv's rubies (a git clone)
	"~/.volta",       // volta's shims and node images
	"~/.bun",         // bun
	"~/.deno",        // deno
}

// installMarkers make any other directory an install prefix: what a
// package manager lays out, never a checkout. A directory holding one is
// shown whole unless it, or a directory above it below the home, holds a
// .git (a source tree that happens to look like one, a monorepo's package).
var installMarkers = []string{
	"pyvenv.cfg",       // a Python virtual environment: pipx's and uv's tools, any venv
	"lib/python3*",     // a Python installation (uv's, mise's, a hand-built one)
	"lib/node_modules", // an npm prefix (npm config prefix, nvm's, fnm's node)
}

// prefixSecrets are the files below a shown directory (a PATH directory,
// an install prefix) that may hold credentials: each that exists shows as
// a scrubbed copy, never as itself. Patterns are relative, with globs.
var prefixSecrets = []string{
	"etc/npmrc",                        // npm's global config of a prefix (~/.npm-global, an nvm node)
	"versions/node/*/etc/npmrc",        // the same below $NVM_DIR
	"tools/image/node/*/etc/npmrc",     // the same below ~/.volta
	"installs/nodejs/*/etc/npmrc",      // the same below asdf
	"installs/node/*/etc/npmrc",        // the same below mise
	".npmrc", ".yarnrc", ".yarnrc.yml", // a prefix's own rc files
	"pip.conf",    // a virtual environment's own pip config (index-url with a password)
	".git/config", // a tool installed as a clone (pyenv, asdf) remembers its remote's URL
	// Clones below a shown prefix, which remember theirs too: the plugins
	// pyenv-installer, asdf and mise clone (~/.pyenv/plugins/pyenv-virtualenv),
	// and pip's editable VCS installs in a venv ($VIRTUAL_ENV/src/<name>).
	"plugins/*/.git/config",
	"src/*/.git/config",
	// Their submodules keep a remote URL each as well.
	".git/modules/*/config",
	"plugins/*/.git/modules/*/config",
	"src/*/.git/modules/*/config",
	".env*", // environment files: KEY=value secrets
}

// broadDirs are never shown whole as the install prefix of a PATH directory:
// ~/.local/bin's parent is ~/.local, which holds every application's data.
var broadDirs = []string{"~", "~/.local", "$XDG_DATA_HOME", "$XDG_CONFIG_HOME", "$XDG_CACHE_HOME", "$XDG_STATE_HOME"}

// LauncherPresets name the preset a program needs by the program's name
// (Preset.Programs), for a command that runs outside any project of its
// language: a wrapped MCP server launched as `npx -y PACKAGE` fetches and
// caches the package with npm, `uvx PACKAGE` with uv.
var LauncherPresets = launcherPresets()

func launcherPresets() map[string]string {
	m := map[string]string{}
	for _, p := range Presets {
		for _, prog := range p.Programs {
			m[prog] = p.Name
		}
	}
	return m
}

// CheckPresetNames refuses a name that is no preset's: the configuration
// turns presets off by name ([home] presets_off), and a misspelt one would
// leave its preset on. key names the configuration key, for the message;
// the configuration's loader wraps the error as catalog.ErrConfig.
func CheckPresetNames(key string, names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(Presets, func(p Preset) bool { return p.Name == n }) {
			all := make([]string, 0, len(Presets))
			for _, p := range Presets {
				all = append(all, p.Name)
			}
			return fmt.Errorf("%s: no preset %q (the presets: %s)", key, n, strings.Join(all, ", "))
		}
	}
	return nil
}
