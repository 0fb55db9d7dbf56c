//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The apt test's own names, apart from the suite's: its user has a user
// manager of its own, and its source and keyring are removed at the end.
const (
	aptUser    = "ctxd-apt"
	aptList    = "/etc/apt/sources.list.d/contextd-e2e.list"
	aptKeyring = "/etc/apt/keyrings/contextd-e2e.gpg"
	aptV1      = "0.0.1~e2e1"
	aptV2      = "0.0.1~e2e2"
	enableLine = "systemctl --user enable --now contextd.socket"
)

// TestApt installs contextd the way a user of the package does: `make deb
// apt-repo` builds the package and a signed flat repository, apt trusts it
// through signed-by= its key, and `apt-get install contextd` installs it. Then,
// as an unprivileged user with a real user manager: enable the socket, install
// the tools into a project, call safe_bash through the symlink. Then a newer
// package is published and installed while that user's daemon runs: the next
// call works (served by the running daemon), and after a restart the daemon is
// the new version. Then remove and purge: the programs and units are gone, the
// user's data and running daemon are not.
func TestApt(t *testing.T) {
	start := time.Now()
	step := func(what string) {
		t.Logf("[%6.1fs] %s", time.Since(start).Seconds(), what)
	}
	aptCleanState(t)

	work, err := os.MkdirTemp("", "contextd-apt-")
	if err != nil {
		t.Fatal(err)
	}
	// apt reads a file: repository as its unprivileged _apt user.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(work, "dist")
	_, apparmorDirBefore := os.Stat("/etc/apparmor.d")
	t.Cleanup(func() { aptCleanup(t, work, dist) })

	step("build " + aptV1 + " and its repository")
	deb1 := aptBuild(t, dist, aptV1)
	if fi, err := os.Stat(deb1); err == nil {
		t.Logf("package %s: %.1f MiB", filepath.Base(deb1), float64(fi.Size())/(1<<20))
	}
	step("lintian")
	lint := aptRoot(t, nil, "lintian", "--fail-on", "error", deb1)
	t.Logf("lintian (exit %d):\n%s", lint.code, lint.stdout+lint.stderr)
	if lint.code != 0 || strings.Contains(lint.stdout, "\nE: ") || strings.HasPrefix(lint.stdout, "E: ") {
		t.Fatalf("lintian reports errors")
	}

	step("add the repository as an apt source, signed-by its key")
	if err := os.MkdirAll(filepath.Dir(aptKeyring), 0o755); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dist, "apt", "contextd-archive-keyring.gpg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(aptKeyring, key, 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf("deb [signed-by=%s] file:%s/apt ./\n", aptKeyring, dist)
	if err := os.WriteFile(aptList, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	aptUpdate(t)

	// The user is logged in (their manager runs) before the package arrives.
	step("boot a user manager for " + aptUser)
	if r := aptRoot(t, nil, "bash", env.usermgr, "up", aptUser); r.code != 0 {
		t.Fatalf("usermgr up %s: %s", aptUser, r)
	}

	step("apt-get install -y contextd")
	r := aptGet(t, "install", "-y", "contextd")
	if r.code != 0 {
		t.Fatalf("apt-get install: %s", r)
	}
	out := r.stdout + r.stderr
	if n := strings.Count(out, enableLine); n != 1 {
		t.Fatalf("the install printed %q %d times, want once:\n%s", enableLine, n, out)
	}
	aptInstalled(t, aptV1+"-1")
	for _, p := range []string{"/usr/bin/contextd", "/usr/bin/contextd-proxy", "/usr/lib/systemd/user/contextd.socket",
		"/usr/lib/systemd/user/contextd.service", "/usr/share/man/man1/contextd.1.gz", "/usr/share/man/man1/contextd-proxy.1.gz",
		"/usr/share/bash-completion/completions/contextd-proxy", "/usr/share/zsh/vendor-completions/_contextd",
		"/usr/share/fish/vendor_completions.d/contextd-proxy.fish", "/usr/share/contextd/profiles/safe_bash.json",
		"/usr/share/doc/contextd/copyright", "/usr/share/doc/contextd/changelog.Debian.gz",
		"/usr/share/doc/contextd/config.example.toml", "/etc/apparmor.d/contextd"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the package did not install %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile("/usr/lib/systemd/user/contextd.service"); !strings.Contains(string(b), "\nExecStart=/usr/bin/contextd serve\n") {
		t.Errorf("packaged contextd.service does not start /usr/bin/contextd:\n%s", b)
	}
	if r := aptRoot(t, nil, "dpkg-query", "-W", "-f=${Conffiles}", "contextd"); !strings.Contains(r.stdout, "/etc/apparmor.d/contextd") {
		t.Errorf("/etc/apparmor.d/contextd is not a conffile: %q", r.stdout)
	}
	// Without an AppArmor parser that reads the profile, the postinst keeps it
	// out of the boot-time load with a link of its own (a relative one).
	if _, err := exec.LookPath("apparmor_parser"); err != nil {
		if l, err := os.Readlink("/etc/apparmor.d/disable/contextd"); err != nil || l != "../contextd" {
			t.Errorf("no apparmor_parser here, so the profile should be disabled by ../contextd: %q, %v", l, err)
		}
	}
	if r := aptRoot(t, []string{"MANPAGER=cat", "MANWIDTH=80"}, "man", "contextd-proxy"); r.code != 0 || !strings.Contains(r.stdout, "safe_bash") {
		t.Errorf("man contextd-proxy: %s", r)
	}
	if t.Failed() {
		t.FailNow()
	}

	step("as " + aptUser + ": enable the socket, install the tools, call safe_bash")
	cfg := "# e2e: the daemon must outlive the package upgrade's build\nidle_timeout = \"30m\"\n"
	setup := "set -e; mkdir -p ~/.config/contextd ~/proj/.git; printf '%s' " + aptQuote(cfg) + " > ~/.config/contextd/config.toml"
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		// No journald here (PID 1 is not systemd): keep the daemon's log in a
		// file for the failure messages below.
		setup += "; mkdir -p ~/.config/systemd/user/contextd.service.d" +
			"; printf '[Service]\\nStandardOutput=append:%%t/contextd-apt.log\\nStandardError=inherit\\n' > ~/.config/systemd/user/contextd.service.d/e2e-log.conf"
	}
	aptMust(t, aptSh(t, "", setup))
	aptMust(t, aptSh(t, "", enableLine))
	if r := aptSh(t, "", "systemctl --user show -p FragmentPath --value contextd.socket; systemctl --user is-enabled contextd.socket; systemctl --user is-active contextd.socket"); r.code != 0 ||
		strings.Fields(r.stdout)[0] != "/usr/lib/systemd/user/contextd.socket" || !strings.Contains(r.stdout, "enabled\nactive") {
		t.Fatalf("contextd.socket is not the packaged unit, enabled and active: %s", r)
	}
	aptMust(t, aptSh(t, "proj", "contextd-proxy install"))
	if r := aptSh(t, "proj", "readlink -f .claude/tools/safe_bash/safe_bash"); strings.TrimSpace(r.stdout) != "/usr/bin/contextd-proxy" {
		t.Fatalf("the safe_bash symlink does not lead to the packaged proxy: %s", r)
	}
	call := func(want string) {
		t.Helper()
		r := aptSh(t, "proj", ".claude/tools/safe_bash/safe_bash 'echo called as $(id -un); contextd --version'")
		if r.code != 0 || !strings.Contains(r.stdout, "called as "+aptUser) || !strings.Contains(r.stdout, "contextd version "+want) {
			t.Fatalf("safe_bash through the symlink: %s\ndaemon log:\n%s", r, aptDaemonLog(t))
		}
	}
	call(aptV1)
	pid1 := aptMainPID(t)
	if pid1 == 0 {
		t.Fatalf("no daemon runs after the first call")
	}

	step("publish " + aptV2 + " and upgrade while the daemon (pid " + strconv.Itoa(pid1) + ") runs")
	aptBuild(t, dist, aptV2)
	aptUpdate(t)
	r = aptGet(t, "install", "-y", "contextd")
	if r.code != 0 {
		t.Fatalf("apt-get install (upgrade): %s", r)
	}
	if out := r.stdout + r.stderr; strings.Contains(out, enableLine) || !strings.Contains(out, "systemctl --user restart contextd.service") {
		t.Errorf("the upgrade should print the restart line, not the enable line:\n%s", out)
	}
	aptInstalled(t, aptV2+"-1")
	if pid := aptMainPID(t); pid != pid1 {
		t.Fatalf("the upgrade touched the running daemon: pid %d, was %d", pid, pid1)
	}
	// The running daemon still has the old binary; it serves the next call,
	// made with the new proxy, and its sandbox shows the new /usr/bin.
	call(aptV2)
	if pid := aptMainPID(t); pid != pid1 {
		t.Fatalf("the call after the upgrade was not served by the running daemon: pid %d, was %d", pid, pid1)
	}
	if v := aptStatusVersion(t); v != aptV1 {
		t.Errorf("contextd status before the restart: daemon version %q, want %q (the old daemon)", v, aptV1)
	}
	if r := aptSh(t, "", "contextd --version"); strings.TrimSpace(r.stdout) != "contextd version "+aptV2 {
		t.Errorf("contextd --version after the upgrade: %s", r)
	}
	aptMust(t, aptSh(t, "", "systemctl --user restart contextd.service"))
	pid2 := aptMainPID(t)
	if pid2 == 0 || pid2 == pid1 {
		t.Fatalf("after the restart the daemon is pid %d (was %d)", pid2, pid1)
	}
	call(aptV2)
	if v := aptStatusVersion(t); v != aptV2 {
		t.Errorf("contextd status after the restart: daemon version %q, want %q", v, aptV2)
	}

	step("apt-get remove -y contextd")
	aptMust(t, aptGet(t, "remove", "-y", "contextd"))
	gone := []string{"/usr/bin/contextd", "/usr/bin/contextd-proxy", "/usr/lib/systemd/user/contextd.socket",
		"/usr/lib/systemd/user/contextd.service", "/usr/share/man/man1/contextd.1.gz", "/usr/share/doc/contextd/copyright"}
	aptGone(t, gone...)
	if _, err := os.Stat("/etc/apparmor.d/contextd"); err != nil {
		t.Errorf("remove (not purge) took the conffile: %v", err)
	}
	userData := "test -s ~/.config/contextd/config.toml && test -d ~/.local/state/contextd/audit && test -L ~/.config/systemd/user/sockets.target.wants/contextd.socket"
	aptMust(t, aptSh(t, "", userData))
	if pid := aptMainPID(t); pid != pid2 {
		t.Errorf("removing the package stopped the user's daemon: pid %d, was %d", pid, pid2)
	}

	step("apt-get purge -y contextd")
	aptMust(t, aptGet(t, "purge", "-y", "contextd"))
	if r := aptRoot(t, nil, "dpkg-query", "-W", "-f=${db:Status-Abbrev}", "contextd"); strings.HasPrefix(r.stdout, "i") || strings.HasPrefix(r.stdout, "rc") {
		t.Errorf("contextd still known to dpkg after purge: %q", r.stdout)
	}
	aptGone(t, append(gone, "/etc/apparmor.d/contextd", "/etc/apparmor.d/disable/contextd")...)
	if _, err := os.Stat("/etc/apparmor.d"); errors.Is(apparmorDirBefore, fs.ErrNotExist) && err == nil {
		t.Errorf("purge left /etc/apparmor.d, which was not there before")
	}
	aptMust(t, aptSh(t, "", userData))
	step("done")
}

// aptCleanState removes what an interrupted run of this test left, and
// refuses to touch a contextd package that this test did not install.
func aptCleanState(t *testing.T) {
	r := aptRoot(t, nil, "dpkg-query", "-W", "-f=${Version} ${db:Status-Abbrev}", "contextd")
	if r.code == 0 && strings.TrimSpace(r.stdout) != "" {
		f := strings.Fields(r.stdout)
		if !strings.Contains(f[0], "~e2e") {
			t.Fatalf("contextd %s is installed on this machine and was not installed by this test; remove it first", f[0])
		}
		aptMust(t, aptPurge(t))
	}
	os.Remove(aptList)
	os.Remove(aptKeyring)
	if _, err := user.Lookup(aptUser); err == nil {
		aptRoot(t, nil, "bash", env.usermgr, "down", aptUser)
		aptRoot(t, nil, "userdel", "-r", aptUser)
	}
}

// aptCleanup runs whatever the test got to: the package, the source and its
// lists, the user and their manager, the build. Nothing of it may stay: the
// rest of the suite runs its own binaries and must not find /usr/bin/contextd.
func aptCleanup(t *testing.T, work, dist string) {
	if r := aptRoot(t, nil, "dpkg-query", "-W", "-f=${db:Status-Abbrev}", "contextd"); r.code == 0 && strings.TrimSpace(r.stdout) != "" {
		if r := aptPurge(t); r.code != 0 {
			t.Errorf("cleanup: purge contextd: %s", r)
		}
	}
	os.Remove(aptList)
	os.Remove(aptKeyring)
	// apt's copies of the repository's index, named after its path.
	escaped := strings.ReplaceAll(strings.TrimPrefix(filepath.Join(dist, "apt"), "/"), "/", "_")
	lists, _ := filepath.Glob("/var/lib/apt/lists/*" + escaped + "*")
	for _, l := range lists {
		os.Remove(l)
	}
	if r := aptRoot(t, nil, "bash", env.usermgr, "down", aptUser); r.code != 0 {
		t.Errorf("cleanup: usermgr down %s: %s", aptUser, r)
	}
	if r := aptRoot(t, nil, "userdel", "-r", aptUser); r.code != 0 && !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("cleanup: userdel %s: %s", aptUser, r)
	}
	os.RemoveAll(work)
	for _, p := range []string{"/usr/bin/contextd", "/usr/bin/contextd-proxy"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("cleanup: %s is still there", p)
		}
	}
}

// aptBuild runs `make deb apt-repo` for version into dist and returns the
// package's path. Lintian runs separately (TestApt), once.
func aptBuild(t *testing.T, dist, version string) string {
	t.Helper()
	r := aptRoot(t, nil, "make", "-C", env.repo, "--no-print-directory", "deb", "apt-repo",
		"DIST="+dist, "DEB_VERSION="+version, "LINTIAN=")
	if r.code != 0 {
		t.Fatalf("make deb apt-repo DEB_VERSION=%s: %s", version, r)
	}
	debs, _ := filepath.Glob(filepath.Join(dist, "contextd_"+version+"-1_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb built %v for %s", debs, version)
	}
	for _, f := range []string{"Packages", "Packages.gz", "Release", "Release.gpg", "InRelease", "contextd-archive-keyring.gpg"} {
		if _, err := os.Stat(filepath.Join(dist, "apt", f)); err != nil {
			t.Fatalf("the repository lacks %s: %v", f, err)
		}
	}
	// The signatures verify with the exported key alone.
	kr := filepath.Join(dist, "apt", "contextd-archive-keyring.gpg")
	for _, args := range [][]string{{"InRelease"}, {"Release.gpg", "Release"}} {
		full := []string{"--keyring", kr}
		for _, a := range args {
			full = append(full, filepath.Join(dist, "apt", a))
		}
		if r := aptRoot(t, nil, "gpgv", full...); r.code != 0 {
			t.Fatalf("gpgv %v: %s", args, r)
		}
	}
	return debs[0]
}

// aptUpdate refreshes the lists of the test's source only (the machine's other
// sources are neither fetched nor forgotten).
func aptUpdate(t *testing.T) {
	t.Helper()
	r := aptGet(t, "update", "-o", "Dir::Etc::sourcelist="+aptList,
		"-o", "Dir::Etc::sourceparts=-", "-o", "APT::Get::List-Cleanup=0")
	out := r.stdout + r.stderr
	if r.code != 0 || strings.Contains(out, "W: ") || strings.Contains(out, "E: ") || strings.Contains(out, "Err:") {
		t.Fatalf("apt-get update of the contextd source: %s", r)
	}
}

func aptInstalled(t *testing.T, version string) {
	t.Helper()
	r := aptRoot(t, nil, "dpkg-query", "-W", "-f=${Version} ${db:Status-Abbrev}", "contextd")
	if got := strings.TrimSpace(r.stdout); got != version+" ii" {
		t.Fatalf("dpkg-query: contextd is %q, want %q installed", got, version)
	}
}

func aptGone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
}

// aptSh runs a shell snippet as aptUser in their manager's world, in ~/dir.
// PATH is the system's own directories: a contextd someone installed by hand
// into /usr/local/bin must not stand in for the packaged one.
func aptSh(t *testing.T, dir, script string) result {
	t.Helper()
	home := "/home/" + aptUser
	if u, err := user.Lookup(aptUser); err == nil {
		home = u.HomeDir
	}
	return execute(t, "", "bash", env.usermgr, "run", aptUser, "-C", filepath.Join(home, dir), "PATH=/usr/bin:/bin",
		"--", "bash", "-c", script)
}

func aptMust(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
}

func aptMainPID(t *testing.T) int {
	t.Helper()
	r := aptSh(t, "", "systemctl --user show -p MainPID --value contextd.service")
	n, _ := strconv.Atoi(strings.TrimSpace(r.stdout))
	return n
}

// aptStatusVersion is the version the running daemon reports to `contextd status`.
func aptStatusVersion(t *testing.T) string {
	t.Helper()
	r := aptSh(t, "", "contextd status --json --no-sandbox-check")
	var rep struct {
		Daemon struct {
			State   string `json:"state"`
			Version string `json:"version"`
		} `json:"daemon"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("contextd status --json: %v\n%s", err, r)
	}
	return rep.Daemon.Version
}

func aptDaemonLog(t *testing.T) string {
	u, err := user.Lookup(aptUser)
	if err != nil {
		return ""
	}
	b, _ := os.ReadFile("/run/user/" + u.Uid + "/contextd-apt.log")
	return string(b)
}

// aptRoot runs a command as root (the test's own identity) with extra environment.
// aptLockWait is how long apt may wait for the package system's locks: on a
// freshly booted machine apt-daily or unattended-upgrades often hold them.
const aptLockWait = 600 * time.Second

// aptGet runs apt-get ARGS as root, non-interactive, waiting for dpkg's lock
// (DPkg::Lock::Timeout) and, as apt-get update does not wait for the lists'
// lock, trying again while another apt holds that.
func aptGet(t *testing.T, args ...string) result {
	t.Helper()
	full := append([]string{"-o", fmt.Sprintf("DPkg::Lock::Timeout=%d", int(aptLockWait.Seconds()))}, args...)
	deadline := time.Now().Add(aptLockWait)
	for {
		r := aptRoot(t, []string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", full...)
		if r.code == 0 || !strings.Contains(r.stderr, "Could not get lock") || time.Now().After(deadline) {
			return r
		}
		t.Logf("apt-get %s: another apt holds a lock; trying again:\n%s", args[0], strings.TrimSpace(r.stderr))
		time.Sleep(5 * time.Second)
	}
}

// aptPurge purges what is left of contextd (by an interrupted run: perhaps
// half installed) with apt-get, which waits for the lock, and if apt-get
// will not (another package of the machine is broken), with dpkg.
func aptPurge(t *testing.T) result {
	t.Helper()
	if r := aptGet(t, "purge", "-y", "contextd"); r.code == 0 {
		return r
	}
	return aptRoot(t, []string{"DEBIAN_FRONTEND=noninteractive"}, "dpkg", "--purge", "contextd")
}

func aptRoot(t *testing.T, vars []string, name string, args ...string) result {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), vars...)
	return finish(t, cmd, "")
}

// aptQuote quotes s for bash.
func aptQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
