package homeview

import (
	"os"
	"path/filepath"
	"strings"
)

// Host is what the view of one call is worked out from: the user's home, the
// environment the command will see, and the workspace.
type Host struct {
	// Home is the user's home directory (absolute).
	Home string
	// Env is the caller's environment as the proxy sent it (PATH, XDG_*,
	// GOPATH, ...). Only the variables of vars and PATH are read.
	Env map[string]string
	// Workspace is the workspace root (absolute).
	Workspace string
}

// vars are the variables a path template may name, each with its default
// when the environment does not set it (relative defaults are below Home, or
// below another variable). They are the locations toolchains themselves
// read, so that the view shows what the tool inside will look for.
var vars = []struct {
	name, def string
}{
	{"XDG_CONFIG_HOME", "~/.config"},
	{"XDG_CACHE_HOME", "~/.cache"},
	{"XDG_DATA_HOME", "~/.local/share"},
	{"XDG_STATE_HOME", "~/.local/state"},
	{"GOPATH", "~/go"}, // first element only: go writes to it
	{"GOMODCACHE", "$GOPATH/pkg/mod"},
	{"GOCACHE", "$XDG_CACHE_HOME/go-build"},
	{"CARGO_HOME", "~/.cargo"},
	{"RUSTUP_HOME", "~/.rustup"},
	{"NVM_DIR", "~/.nvm"},
	{"PYENV_ROOT", "~/.pyenv"},
	{"NODENV_ROOT", "~/.nodenv"},
	{"RBENV_ROOT", "~/.rbenv"},
	{"npm_config_cache", "~/.npm"},
	{"npm_config_userconfig", "~/.npmrc"},
	{"PIP_CACHE_DIR", "$XDG_CACHE_HOME/pip"},
	{"UV_CACHE_DIR", "$XDG_CACHE_HOME/uv"},
	{"POETRY_CACHE_DIR", "$XDG_CACHE_HOME/pypoetry"},
	{"GRADLE_USER_HOME", "~/.gradle"},
	{"SDKMAN_DIR", "~/.sdkman"},
	{"MISE_DATA_DIR", "$XDG_DATA_HOME/mise"},
	{"ASDF_DATA_DIR", "~/.asdf"},
}

// ToolchainVars are the variables of vars a command keeps from the caller's
// environment, so that the toolchain inside looks where the view shows (a
// GOPATH set in the user's shell, say). None of them holds a secret.
func ToolchainVars() []string {
	out := make([]string, 0, len(vars))
	for _, v := range vars {
		out = append(out, v.name)
	}
	return out
}

// expand resolves a path template: a leading "~" is Home, "$NAME" a variable
// of vars (from Env, else its default). ok is false when the result is not
// an absolute path (a relative value in the environment, an unknown
// variable).
func (h *Host) expand(tmpl string) (string, bool) {
	return h.expandDepth(tmpl, 0)
}

func (h *Host) expandDepth(tmpl string, depth int) (string, bool) {
	if depth > 4 {
		return "", false
	}
	s := h.expandTilde(tmpl)
	if rest, ok := strings.CutPrefix(s, "$"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		val, ok := h.lookup(name, depth)
		if !ok {
			return "", false
		}
		s = val
		if tail != "" {
			s = filepath.Join(val, tail)
		}
	}
	if !filepath.IsAbs(s) {
		return "", false
	}
	return filepath.Clean(s), true
}

func (h *Host) lookup(name string, depth int) (string, bool) {
	for _, v := range vars {
		if v.name != name {
			continue
		}
		val := h.Env[name]
		if val == "" && strings.HasPrefix(name, "npm_config_") {
			// npm reads its variables in either case (NPM_CONFIG_USERCONFIG):
			// the view must show the file npm will really read.
			val = h.Env[strings.ToUpper(name)]
		}
		if val != "" {
			if name == "GOPATH" {
				val, _, _ = strings.Cut(val, string(os.PathListSeparator))
			}
			if filepath.IsAbs(val) {
				return filepath.Clean(val), true
			}
		}
		return h.expandDepth(v.def, depth+1)
	}
	return "", false
}

// expandTilde replaces a leading "~" (alone or before "/") with Home.
func (h *Host) expandTilde(p string) string {
	if p == "~" {
		return h.Home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(h.Home, rest)
	}
	return p
}
