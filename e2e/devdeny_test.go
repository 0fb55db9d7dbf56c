//go:build e2e

package e2e

// The credential deny-list (issue 16, "Done when"): every deny-listed path
// holds a planted secret, and none can be read from inside, even where a
// preset, a PATH entry, a toolchain variable or a configuration entry asks
// for it. The list comes from daemon/homeview itself, so that an entry added
// there is planted and probed here without a change to this file.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/homeview"
)

// plantedSecret is one deny-listed path that holds a secret of this run.
type plantedSecret struct {
	rule   string // the deny-list's template ("~/.ssh")
	path   string // the deny-listed path
	file   string // the file holding the marker: path itself, or a file below it
	marker string
}

// deniedFileNames are the deny-list's entries that name a file rather than a
// directory, when the path does not exist yet (an existing one is planted as
// what it is).
func deniedIsFile(p string) bool {
	base := filepath.Base(p)
	switch {
	case strings.Contains(strings.TrimPrefix(base, "."), "."): // config.json, .my.cnf, settings-security.xml
		return true
	case strings.HasSuffix(base, "credentials"), strings.HasSuffix(base, "history"):
		return true
	}
	switch base {
	case ".netrc", ".pgpass", ".pypirc", ".s3cfg", ".vault-token":
		return true
	}
	return false
}

// devPlant writes content to p as the test user's file and undoes it at
// cleanup: an existing file gets its content and mode back; a new one is
// removed with the directories made for it, as far as they are empty.
func devPlant(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if fi, err := os.Lstat(p); err == nil {
		if !fi.Mode().IsRegular() {
			t.Fatalf("%s exists and is not a regular file (%v): cannot plant a secret in it", p, fi.Mode())
		}
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := devWriteFile(p, string(orig), fi.Mode().Perm()); err != nil {
				t.Errorf("restoring %s: %v", p, err)
			}
		})
		if err := devWriteFile(p, content, mode); err != nil {
			t.Fatal(err)
		}
		return
	}
	top, err := devMkdirAll(filepath.Dir(p))
	t.Cleanup(func() {
		os.Remove(p)
		if top == "" {
			return
		}
		for d := filepath.Dir(p); d != filepath.Dir(top); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty: something else lives there now
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := devWriteFile(p, content, mode); err != nil {
		t.Fatal(err)
	}
}

// plantDenyList puts a secret of its own in every path of homeview's
// deny-list for the test user: the path itself where it names a file, a
// file below it where it names a directory.
func plantDenyList(t *testing.T, prefix string) []plantedSecret {
	t.Helper()
	list := homeview.DenyList(&homeview.Host{Home: env.home, Env: map[string]string{}, Workspace: env.project})
	if len(list) < 20 {
		t.Fatalf("homeview.DenyList has %d entries for %s: %+v", len(list), env.home, list)
	}
	var out []plantedSecret
	for i, d := range list {
		s := plantedSecret{rule: d.Rule, path: d.Path, file: d.Path, marker: fmt.Sprintf("%s%02dx%s", prefix, i, devTag(12))}
		fi, err := os.Lstat(d.Path)
		if (err == nil && fi.IsDir()) || (err != nil && !deniedIsFile(d.Path)) {
			s.file = filepath.Join(d.Path, "planted-"+devTag(6))
		}
		devPlant(t, s.file, "secret="+s.marker+"\n", 0o600)
		out = append(out, s)
	}
	return out
}

// denyProbe is a script that tries to read every planted secret (each file,
// each directory's listing and entries), runs extra, then searches every tree
// a sandboxed command may see for the run's prefix. The prefix is written so
// that the script's own text does not match it. Everything the script sees
// goes to the workspace file out, not to the call's output: the output is
// scrubbed, and a planted secret redacted there would pass for one the
// sandbox never held. The test reads out on the host's disk.
func denyProbe(secrets []plantedSecret, prefix, extra, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exec >%s 2>&1\n", shq(out))
	for _, s := range secrets {
		fmt.Fprintf(&b, "cat -- %s\n", shq(s.file))
		if s.file != s.path {
			fmt.Fprintf(&b, "ls -la -- %s; cat -- %s/* %s/.[!.]*\n", shq(s.path), shq(s.path), shq(s.path))
		}
	}
	b.WriteString(extra + "\n")
	pattern := prefix[:len(prefix)-1] + "[" + prefix[len(prefix)-1:] + "]"
	fmt.Fprintf(&b, `for d in /home "$HOME" /tmp /var/tmp /run /mnt /media /srv /opt /root /etc; do
  [ -d "$d" ] || continue
  if [ "$d" = "$HOME" ]; then case $HOME in /home/*) continue;; esac; fi
  grep -rIl -e %s "$d" 2>/dev/null | sed 's/^/GREPHIT /'
done
echo PROBE-DONE
`, shq(pattern))
	return b.String()
}

// probeOut is a fresh name for a probe's record in workspace ws: what the
// sandboxed script saw, written by it and read here from the host's disk.
func probeOut(t *testing.T, ws string) string {
	t.Helper()
	p := filepath.Join(ws, "probe-"+devTag(8)+".out")
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// probeSaw is the record the probe of call r wrote at p (denyProbe), as the
// host reads it: unscrubbed, so a secret the sandbox held is there as it is.
func probeSaw(t *testing.T, r result, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the probe left no record at %s: %v; the call: %s", p, err, r)
	}
	return string(b)
}

// noSecretSeen fails t for every planted secret out (the probe's record, as
// probeSaw read it) holds, and for every file the search found but control,
// a file of the workspace that holds the prefix too: the search must find it,
// or it proves nothing.
func noSecretSeen(t *testing.T, what string, out string, secrets []plantedSecret, prefix, control string) {
	t.Helper()
	if !strings.Contains(out, "PROBE-DONE") {
		t.Errorf("%s: the probe did not run to its end: %s", what, tailOf(out, 4000))
	}
	if !strings.Contains(out, "GREPHIT "+control+"\n") {
		t.Errorf("%s: the search inside did not find the control %s, which holds the prefix in plain sight", what, control)
	}
	leaked := 0
	for _, s := range secrets {
		if strings.Contains(out, s.marker) {
			leaked++
			t.Errorf("%s: the secret planted in %s (deny-list rule %s) was read from inside", what, s.file, s.rule)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^GREPHIT (.*)$`).FindAllStringSubmatch(out, -1) {
		if m[1] == control {
			continue
		}
		t.Errorf("%s: a planted secret is readable inside at %s", what, m[1])
	}
	if leaked == 0 && strings.Contains(out, prefix) {
		t.Errorf("%s: part of a planted secret is in the output", what)
	}
	if t.Failed() {
		t.Logf("%s: the probe's output:\n%s", what, tailOf(out, 20000))
	}
}

// denyWorkspace makes a workspace that selects every preset, with symbolic
// links into deny-listed paths, and returns it.
func denyWorkspace(t *testing.T, s *devState, secrets []plantedSecret) string {
	t.Helper()
	dir := filepath.Join(s.root, "deny-"+devTag(6))
	markers := map[string]string{
		"go.mod":         "module example.com/denyprobe\n\ngo 1.22\n",
		"package.json":   "{\"name\": \"denyprobe\", \"version\": \"1.0.0\", \"private\": true}\n",
		"pyproject.toml": "[project]\nname = \"denyprobe\"\nversion = \"0.1.0\"\n",
		"Cargo.toml":     "[package]\nname = \"denyprobe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"pom.xml":        "<project><modelVersion>4.0.0</modelVersion><groupId>e</groupId><artifactId>denyprobe</artifactId><version>1</version></project>\n",
	}
	for name, content := range markers {
		if err := devWriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var links strings.Builder
	for i, sec := range secrets {
		fmt.Fprintf(&links, "ln -s %s link-%02d\n", shq(sec.path), i)
	}
	mustCode(t, devBare(t, dir, nil, "set -e; git init -q\n"+links.String()), 0)
	return dir
}

// Every deny-listed path holds a secret; none is read from inside with the
// default view (every preset selected, the git preset showing
// $XDG_CONFIG_HOME/git, which holds a credentials file), through symbolic
// links in the workspace, through PATH entries that point into, at, or
// around deny-listed directories, or through toolchain variables that point
// a preset's configuration or cache at one.
func TestDevDenyList(t *testing.T) {
	s := devSetup(t)
	devGitConfig(t, s)
	prefix := "ctxdsecret" + devTag(8)
	secrets := plantDenyList(t, prefix)
	ws := denyWorkspace(t, s, secrets)
	control := filepath.Join(ws, "control.txt")
	if err := devWriteFile(control, "not a secret: "+prefix+"control\n", 0o644); err != nil {
		t.Fatal(err)
	}
	var linkReads strings.Builder
	for i := range secrets {
		fmt.Fprintf(&linkReads, "cat link-%02d link-%02d/* 2>&1 | head -c 4096\n", i, i)
	}

	t.Run("presets", func(t *testing.T) {
		// Controls: the git preset shows $XDG_CONFIG_HOME/git (an alias from
		// its config works) and the go preset the module cache, so what is
		// masked is masked inside something shown.
		extra := linkReads.String() +
			`echo "CONTROL-ALIAS $(git config --show-origin --get alias.ctxdshort)"
test -d "$(go env GOMODCACHE)/github.com/spf13" && echo CONTROL-GOMOD`
		out := probeOut(t, ws)
		r := devBox(t, ws, nil, denyProbe(secrets, prefix, extra, out))
		saw := probeSaw(t, r, out)
		noSecretSeen(t, "every preset", saw, secrets, prefix, control)
		mustContain(t, "the controls' output", saw, "CONTROL-ALIAS file:"+filepath.Join(env.home, ".config", "git", "config")+"\tlog --oneline\n", "CONTROL-GOMOD\n")
	})

	t.Run("PATH", func(t *testing.T) {
		// Tools that print a secret of their own, in deny-listed
		// directories: one in a bin directory below one (~/.ssh/bin), one
		// in a deny-listed directory named on PATH itself (~/.aws), one
		// reached by a symbolic link from a PATH directory that is shown
		// (~/.local/bin -> ~/.gnupg/bin). PATH also names ~/.config, which
		// holds deny-listed directories, and the home itself. A tool in a
		// directory of the user's own is the control.
		tools := []struct{ dir, name string }{
			{filepath.Join(env.home, ".ssh", "bin"), "ctxd-leak-ssh"},
			{filepath.Join(env.home, ".aws"), "ctxd-leak-aws"},
			{filepath.Join(env.home, ".gnupg", "bin"), "ctxd-leak-gpg"},
		}
		leaks := append([]plantedSecret{}, secrets...)
		for _, tl := range tools {
			p := filepath.Join(tl.dir, tl.name)
			m := prefix + "tool" + devTag(12)
			devPlant(t, p, "#!/bin/sh\necho "+m+"\n", 0o755)
			leaks = append(leaks, plantedSecret{rule: "PATH tool", path: p, file: p, marker: m})
		}
		link := filepath.Join(env.home, ".local", "bin", "ctxd-leak-gpg")
		if _, err := os.Lstat(link); err == nil {
			t.Fatalf("%s exists already", link)
		}
		top, err := devMkdirAll(filepath.Dir(link))
		t.Cleanup(func() {
			os.Remove(link)
			if top != "" {
				os.Remove(top)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(env.home, ".gnupg", "bin", "ctxd-leak-gpg"), link); err != nil {
			t.Fatal(err)
		}
		os.Lchown(link, env.uid, env.uid)
		okTool := filepath.Join(s.root, "tools", "bin", "ctxd-ok")
		if err := devWriteFile(okTool, "#!/bin/sh\necho tool-ok\n", 0o755); err != nil {
			t.Fatal(err)
		}
		path := strings.Join([]string{
			filepath.Join(env.home, ".ssh", "bin"),
			filepath.Join(env.home, ".aws"),
			filepath.Join(env.home, ".local", "bin"),
			filepath.Join(env.home, ".config"),
			env.home,
			filepath.Dir(okTool),
			"/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin",
		}, ":")
		extra := `for tl in ctxd-leak-ssh ctxd-leak-aws ctxd-leak-gpg; do "$tl"; done
echo "CONTROL-TOOL $(ctxd-ok)"`
		out := probeOut(t, ws)
		r := devBox(t, ws, []string{"PATH=" + path}, denyProbe(leaks, prefix, extra, out))
		saw := probeSaw(t, r, out)
		noSecretSeen(t, "PATH into deny-listed directories", saw, leaks, prefix, control)
		mustContain(t, "the control's output", saw, "CONTROL-TOOL tool-ok\n")
	})

	t.Run("toolchain variables", func(t *testing.T) {
		// Each variable points a preset's configuration, toolchain or
		// cache at a deny-listed path (or, for the npm cache, at a
		// directory that holds one).
		h := func(rel string) string { return filepath.Join(env.home, rel) }
		vars := []string{
			"RUSTUP_HOME=" + h(".aws"),
			"CARGO_HOME=" + h(".password-store"),
			"GOMODCACHE=" + h(".ssh"),
			"GOCACHE=" + h(".gnupg"),
			"npm_config_userconfig=" + h(".netrc"),
			"npm_config_cache=" + h(".docker"),
			"PIP_CACHE_DIR=" + h(".kube"),
			"GRADLE_USER_HOME=" + h(".azure"),
		}
		out := probeOut(t, ws)
		r := devBox(t, ws, vars, denyProbe(secrets, prefix, "", out))
		noSecretSeen(t, "toolchain variables", probeSaw(t, r, out), secrets, prefix, control)
	})
}

// A configuration entry that would show a deny-listed path is refused when
// the configuration loads, with an error naming the entry and the rule:
// `contextd serve` exits with CTXD-E060, and a daemon started by the socket
// with it in the user's configuration serves no call.
func TestDevDenyListConfigRefused(t *testing.T) {
	s := devSetup(t)
	gnupg := filepath.Join(env.home, ".gnupg")
	top, err := devMkdirAll(gnupg)
	if top != "" {
		t.Cleanup(func() { os.Remove(top) })
	}
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(s.root, "keys-"+devTag(6))
	if err := os.Symlink(gnupg, alias); err != nil {
		t.Fatal(err)
	}
	os.Lchown(alias, env.uid, env.uid)

	cases := []struct{ key, entry string }{
		{"home.read_only", "~/.ssh"},
		{"home.read_only", "~/.aws/credentials"},
		{"home.read_only", "~/.config"},
		{"home.read_only", "~/.local/share"},
		{"home.read_only", alias},
		{"tools.safe_bash.read_only", filepath.Join(env.home, ".kube")},
		{"tools.safe_bash.read_write", filepath.Join(env.home, ".docker")},
	}
	sock := filepath.Join(env.runtime, "ctxd-cfgcheck-"+devTag(6)+".sock")
	for i, c := range cases {
		table, key, _ := strings.Cut(c.key, ".")
		if table == "tools" {
			tool, k, _ := strings.Cut(key, ".")
			table, key = "tools."+tool, k
		}
		cfg := filepath.Join(s.root, fmt.Sprintf("refused-%d.toml", i))
		if err := devWriteFile(cfg, fmt.Sprintf("[%s]\n%s = [%q]\n", table, key, c.entry), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runAs(t, s.root, nil, "", "timeout", "30", env.bin+"/contextd", "serve", "--config", cfg, "--socket", sock)
		if r.code != 78 || !strings.Contains(r.stderr, "CTXD-E060") || !strings.Contains(r.stderr, c.key) ||
			!strings.Contains(r.stderr, fmt.Sprintf("%q", c.entry)) || !strings.Contains(r.stderr, "deny-list") {
			t.Errorf("%s = [%q]: want exit 78 with CTXD-E060 naming the key, the entry and the deny-list; got %s", c.key, c.entry, r)
		}
	}
	st := runAs(t, s.root, nil, "", env.bin+"/contextd", "status", "--no-sandbox-check", "--config", filepath.Join(s.root, "refused-0.toml"))
	if st.code != 78 || !strings.Contains(st.stdout+st.stderr, `"~/.ssh"`) {
		t.Errorf("contextd status with home.read_only = [\"~/.ssh\"]: want exit 78 naming the entry; got %s", st)
	}

	// The user's own configuration asks for ~/.ssh: the socket-activated
	// daemon does not start, and the call that asked for it gets nothing.
	marker := "ctxdsecret" + devTag(12)
	devPlant(t, filepath.Join(env.home, ".ssh", "planted-"+devTag(6)), marker+"\n", 0o600)
	cfgPath := filepath.Join(env.home, ".config", "contextd", "config.toml")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(orig), "[home]") {
		t.Fatalf("the suite's configuration has a [home] table already:\n%s", orig)
	}
	t.Cleanup(func() {
		userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+string(orig)+"EOF")
		systemctl(t, "reset-failed", "contextd.service", "contextd.socket")
		systemctl(t, "start", "contextd.socket")
	})
	mustCode(t, userSh(t, "cat >> ~/.config/contextd/config.toml <<'EOF'\n\n[home]\nread_only = [\"~/.ssh\"]\nEOF"), 0)
	mustCode(t, systemctl(t, "stop", "contextd.service"), 0)
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	r := runAs(t, s.root, nil, "", "timeout", "120", link, "cat ~/.ssh/planted-*; echo reached")
	if r.code == 0 || strings.Contains(r.stdout, "reached") || strings.Contains(r.stdout+r.stderr, marker) {
		t.Fatalf("a call with home.read_only = [\"~/.ssh\"] in the configuration ran: %s", r)
	}
	t.Logf("the call, with the refused configuration: %s", r)
	waitFor(t, 20*time.Second, "the daemon's refusal in its log", func() bool {
		return strings.Contains(daemonLog(t), `home.read_only: "~/.ssh"`)
	})

	// Restored, calls work again.
	mustCode(t, userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+string(orig)+"EOF"), 0)
	systemctl(t, "reset-failed", "contextd.service", "contextd.socket")
	mustCode(t, systemctl(t, "start", "contextd.socket"), 0)
	mustCode(t, tool(t, "safe_bash", "", "true"), 0)
}
