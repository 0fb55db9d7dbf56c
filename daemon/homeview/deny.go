package homeview

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Denied is one entry of the credential deny-list: a path that no call sees,
// whatever a preset or the configuration asks. Path is a template (see
// expand); it may end in "/*" to deny every entry of a directory that matches
// Glob instead of the directory itself.
type Denied struct {
	Path string
	Why  string
}

// denyList is the credential deny-list, reviewed in one place. Each entry is
// what an attacker who runs a command as the user would take first. A path
// is denied with everything below it; a configured path that is one of
// these, lies below one, or contains one is refused when the configuration
// loads (CheckConfigured), and the sandbox masks each one that exists, so
// that a parent shown for another reason (a toolchain root, a preset) never
// shows it either.
var denyList = []Denied{
	{"~/.ssh", "ssh private keys, agent sockets and known hosts"},
	{"~/.gnupg", "gpg private keys and the agent socket"},
	{"~/.aws", "AWS access keys (credentials, config with sso sessions)"},
	{"~/.azure", "Azure CLI tokens"},
	{"$XDG_CONFIG_HOME/gcloud", "Google Cloud SDK credentials and access tokens"},
	{"~/.kube", "Kubernetes cluster credentials (kubeconfig)"},
	{"~/.docker/config.json", "container registry credentials"},
	{"~/.git-credentials", "git's credential store (plain-text HTTPS passwords)"},
	{"$XDG_CONFIG_HOME/git/credentials", "git's credential store, XDG location"},
	{"~/.netrc", "logins for curl, git, ftp and pip"},
	{"$XDG_CONFIG_HOME/gh", "GitHub CLI OAuth tokens"},
	{"$XDG_CONFIG_HOME/hub", "hub's GitHub token"},
	{"$XDG_CONFIG_HOME/glab-cli", "GitLab CLI tokens"},
	{"~/.password-store", "pass, the password manager"},
	{"$XDG_DATA_HOME/keyrings", "GNOME keyring files"},
	{"~/.local/share/kwalletd", "KDE wallet files"},
	{"~/.pki", "NSS certificate and key databases (browsers)"},
	{"~/.mozilla", "Firefox profiles: cookies, saved passwords, session tokens"},
	{"$XDG_CONFIG_HOME/google-chrome", "Chrome profiles: cookies, saved passwords"},
	{"$XDG_CONFIG_HOME/chromium", "Chromium profiles: cookies, saved passwords"},
	{"$XDG_CONFIG_HOME/BraveSoftware", "Brave profiles"},
	{"$XDG_CONFIG_HOME/microsoft-edge", "Edge profiles"},
	{"~/snap/firefox", "Firefox (snap) profiles"},
	{"~/snap/chromium", "Chromium (snap) profiles"},
	{"$XDG_CONFIG_HOME/op", "1Password CLI configuration and session"},
	{"~/.vault-token", "HashiCorp Vault token"},
	{"~/.terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"},
	{"~/.pypirc", "PyPI upload credentials (publishing, not building)"},
	{"~/.gem/credentials", "RubyGems push key"},
	{"~/.m2/settings-security.xml", "Maven's master password"},
	{"~/.config/rclone", "rclone remotes with their tokens"},
	{"~/.s3cfg", "s3cmd keys"},
	{"$XDG_CONFIG_HOME/doctl", "DigitalOcean tokens"},
	{"~/.oci", "Oracle Cloud keys"},
	{"~/.bash_history", "shell history: commands typed with secrets in them"},
	{"~/.zsh_history", "shell history"},
	{"$XDG_DATA_HOME/fish/fish_history", "shell history"},
	{"~/.python_history", "interpreter history"},
	{"~/.node_repl_history", "interpreter history"},
	{"~/.psql_history", "database client history"},
	{"~/.mysql_history", "database client history"},
	{"~/.pgpass", "PostgreSQL passwords"},
	{"~/.my.cnf", "MySQL client passwords"},
	{"$XDG_CONFIG_HOME/contextd", "contextd's own configuration: the sandbox must not change its own policy"},
	{"$XDG_STATE_HOME/contextd", "contextd's audit log and state"},
	{"$XDG_DATA_HOME/contextd", "contextd's memories, checkpoints and MCP records"},
	{"$XDG_CACHE_HOME/contextd", "contextd's cache layers and scratch homes (each is mounted where it belongs, never at its own path)"},
	{"$XDG_CONFIG_HOME/claude", "the agent's own credentials and settings"},
	{"~/.claude", "Claude Code's credentials, settings and hooks (run on the host)"},
	{"~/.claude.json", "Claude Code's account and project settings"},
	{"~/.codex", "Codex CLI's credentials and configuration"},
	{"~/.gemini", "Gemini CLI's credentials and settings"},
	{"$XDG_CONFIG_HOME/opencode", "OpenCode's configuration"},
	{"$XDG_DATA_HOME/opencode", "OpenCode's credentials (auth.json)"},
}

// DenyList returns the deny-list entries expanded for h, in table order.
// An entry under a variable ($XDG_CONFIG_HOME/gh) is expanded twice: with
// the caller's value and with the default (~/.config/gh), since tools find
// their files in either, and a caller's environment must not move the
// list away from where the secrets are. Entries whose template cannot be
// expanded are left out.
func DenyList(h *Host) []DeniedPath {
	var out []DeniedPath
	defaults := &Host{Home: h.Home, Workspace: h.Workspace}
	for _, d := range denyList {
		for i, host := range []*Host{h, defaults} {
			p, ok := host.expand(d.Path)
			if !ok || i == 1 && slices.ContainsFunc(out, func(x DeniedPath) bool { return x.Path == p }) {
				continue
			}
			out = append(out, DeniedPath{Path: p, Rule: d.Path, Why: d.Why})
		}
	}
	return out
}

// DeniedPath is a deny-list entry expanded for one user.
type DeniedPath struct {
	Path string // absolute, clean
	Rule string // the table's template, for messages
	Why  string
}

// Within reports whether p is dir or lies below it (both clean and
// absolute).
func Within(p, dir string) bool { return within(p, dir) }

// within reports whether p is dir or lies below it (both clean and absolute).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// denied returns the deny-list entry p touches: p is one, lies below one, or
// contains one. ok is false when p touches none.
func denied(p string, list []DeniedPath) (DeniedPath, bool) {
	for _, d := range list {
		if within(p, d.Path) || within(d.Path, p) {
			return d, true
		}
	}
	return DeniedPath{}, false
}

// CheckConfigured refuses a configured path (key names the configuration
// key, for the message) that would show a deny-listed path: it is one, lies
// below one, or contains one. Both the path as written and its canonical
// form (symlinks resolved, when it exists) are checked. The error names the
// entry and the rule; the configuration's loader wraps it as
// catalog.ErrConfig.
func CheckConfigured(h *Host, key, p string) error {
	list := DenyList(h)
	forms := []string{filepath.Clean(h.expandTilde(p))}
	if c, err := filepath.EvalSymlinks(forms[0]); err == nil && c != forms[0] {
		forms = append(forms, c)
	}
	for _, f := range forms {
		if d, ok := denied(f, list); ok {
			how := "is"
			switch {
			case f != d.Path && within(f, d.Path):
				how = "lies below"
			case f != d.Path:
				how = "contains"
			}
			return fmt.Errorf("%s: %q %s %s, on the credential deny-list (%s: %s); remove the entry, or name a directory that holds no credentials",
				key, p, how, d.Path, d.Rule, d.Why)
		}
	}
	return nil
}

// CheckConfiguredList runs CheckConfigured on each path of a configured
// list, for the daemon's own user: its home, and the toolchain variables of
// its own environment. An empty list needs no home.
func CheckConfiguredList(key string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("%s: the home directory is unknown, so the deny-list cannot be checked: %v", key, err)
	}
	h := &Host{Home: home, Env: map[string]string{}}
	for _, v := range ToolchainVars() {
		h.Env[v] = os.Getenv(v)
	}
	for _, p := range paths {
		if err := CheckConfigured(h, key, p); err != nil {
			return err
		}
	}
	return nil
}
