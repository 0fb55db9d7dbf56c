//go:build e2e

// Package e2e is contextd's end-to-end suite: as an unprivileged test user with a
// real systemd user manager (the machine's own, or one booted by usermgr.sh where
// PID 1 is not systemd), it installs the units, enables contextd.socket and drives
// the daemon through the real proxy symlinks. It needs root to create the test
// users; run it with `make test` (or `make test-e2e`).
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testUser  = "ctxd-e2e"  // runs the daemon
	otherUser = "ctxd-e2e2" // a second user, who must be refused
)

// env is what TestMain set up, shared by every test.
var env struct {
	repo     string // repository root
	usermgr  string // e2e/usermgr.sh
	bin      string // directory with the built binaries, readable by the test users
	uid      int    // testUser's uid
	otherUID int
	home     string    // testUser's home
	project  string    // a project directory of testUser, with the tools installed
	runtime  string    // testUser's XDG_RUNTIME_DIR
	started  time.Time // when the tests began: the journal before it is earlier runs'
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup failed:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	if os.Geteuid() != 0 {
		return 0, fmt.Errorf("the e2e suite needs root to create its test users and boot their user manager; run `sudo make test-e2e`")
	}
	_, file, _, _ := runtime.Caller(0)
	env.repo = filepath.Dir(filepath.Dir(file))
	env.usermgr = filepath.Join(env.repo, "e2e", "usermgr.sh")

	dir, err := os.MkdirTemp("", "contextd-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	env.bin = filepath.Join(dir, "bin")
	// The test users must reach the binaries: the temp dir is 0700 by default.
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	// Built as `make build` builds them: the proxy static, without cgo.
	for _, b := range []struct {
		cgo  string
		pkgs []string
	}{{"1", []string{"./cmd/contextd"}}, {"0", []string{"./cmd/contextd-proxy", "./cmd/contextd-proxy-mcp", "./bench/roundtrip", "./bench/mcpwrap"}}} {
		build := exec.Command("go", append([]string{"build", "-o", env.bin + "/"}, b.pkgs...)...)
		build.Dir = env.repo
		build.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		if out, err := build.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build %v: %v\n%s", b.pkgs, err, out)
		}
	}

	// A run that was cut short (go test's -timeout, a kill) ran neither its
	// cleanups nor the `down` below: its manager and whatever it started (a
	// tmux server, a `sleep 600`, a wrap session) would still be there, and
	// `up` keeps a running manager. Start from a new one.
	if out, err := exec.Command("bash", env.usermgr, "down", testUser).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("usermgr down %s (what an earlier run left): %v\n%s", testUser, err, out)
	}
	if out, err := exec.Command("bash", env.usermgr, "up", testUser).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("usermgr up %s: %v\n%s", testUser, err, out)
	}
	defer func() {
		if out, err := exec.Command("bash", env.usermgr, "down", testUser).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "usermgr down: %v\n%s", err, out)
		}
	}()
	if _, err := user.Lookup(otherUser); err != nil {
		if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", otherUser).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("useradd %s: %v\n%s", otherUser, err, out)
		}
	}
	u, err := user.Lookup(testUser)
	if err != nil {
		return 0, err
	}
	o, err := user.Lookup(otherUser)
	if err != nil {
		return 0, err
	}
	env.uid, _ = strconv.Atoi(u.Uid)
	env.otherUID, _ = strconv.Atoi(o.Uid)
	env.home = u.HomeDir
	env.runtime = fmt.Sprintf("/run/user/%d", env.uid)

	// A clean slate for the test user: no units, config or projects of earlier
	// runs, and no ~/.npmrc (the tests that want one write their own; one left
	// by an interrupted benchmark would turn the home view's scratch ~/.npmrc
	// into a read-only scrubbed copy).
	userSh(nil, "systemctl --user disable --now contextd.socket contextd-http.socket contextd.service 2>/dev/null; rm -rf ~/.config/contextd ~/.local/state/contextd ~/.local/share/contextd ~/proj-other ~/proj-dense-* ~/.config/systemd/user/contextd.* ~/.config/systemd/user/contextd-http.* $XDG_RUNTIME_DIR/contextd-e2e.log ~/proj ~/.npmrc ~/.npmrc.bench; true")
	// The default idle_timeout (10m): a daemon that exits while a test
	// works between two calls would come back as another process, and a
	// test that compares MainPIDs would see an attack or a crash that was
	// not there. TestIdleExitAndReactivation sets a short one for itself.
	cfg := `# e2e: a short drain so that stops are seen quickly
idle_timeout = "10m"
drain_timeout = "1s"
log_level = "debug"

# e2e: large pages, so that paging through 10 MB takes tens of calls, not
# thousands (the default budget is checked by TestBudgetDefault).
[tools.safe_bash]
max_tokens = 100000
`
	steps := []string{
		"mkdir -p ~/.config/contextd ~/proj/.git ~/proj/sub",
		"cat > ~/.config/contextd/config.toml <<'EOF'\n" + cfg + "EOF",
		env.bin + "/contextd install-units",
		"systemctl --user daemon-reload",
		"systemctl --user enable --now contextd.socket",
		// Only the tools: the agent files of `--agent claude` (the default) have
		// their own test (agent_test.go), in a project of their own.
		"cd ~/proj && " + env.bin + "/contextd-proxy install --agent none",
	}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		// No systemd as PID 1, so no journald: a booted manager would send the
		// daemon's log to /dev/null (StandardOutput=inherit dups stdin). Send it
		// to a file the suite can read instead.
		dropin := "mkdir -p ~/.config/systemd/user/contextd.service.d && printf '[Service]\\nStandardOutput=append:%%t/contextd-e2e.log\\nStandardError=inherit\\n' > ~/.config/systemd/user/contextd.service.d/e2e-log.conf"
		steps = append(steps[:3], append([]string{dropin}, steps[3:]...)...)
	}
	for _, s := range steps {
		if r := userSh(nil, s); r.code != 0 {
			return 0, fmt.Errorf("as %s: %s: exit %d\n%s%s", testUser, s, r.code, r.stdout, r.stderr)
		}
	}
	env.project = filepath.Join(env.home, "proj")
	env.started = time.Now()
	code := m.Run()
	userSh(nil, "cp $XDG_RUNTIME_DIR/contextd-e2e.log /tmp/e2e-daemon.log; systemctl --user disable --now contextd.socket contextd-http.socket contextd.service; true")
	return code, nil
}

// result of a command run as a test user.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runAs runs argv as testUser inside the user manager's world, in dir (default
// the project), with extra environment words ("K=V").
func runAs(t testing.TB, dir string, vars []string, stdin string, argv ...string) result {
	if dir == "" {
		dir = env.project
	}
	args := []string{env.usermgr, "run", testUser, "-C", dir}
	args = append(args, vars...)
	args = append(args, "--")
	args = append(args, argv...)
	return execute(t, stdin, "bash", args...)
}

// userSh runs a shell snippet as testUser (t may be nil during setup).
func userSh(t testing.TB, script string) result {
	return execute(t, "", "bash", env.usermgr, "run", testUser, "--", "bash", "-c", script)
}

// otherAs runs argv as otherUser, a plain login-less user with no manager.
func otherAs(t testing.TB, vars []string, argv ...string) result {
	args := []string{"-u", otherUser, "--", "env", "-i", "PATH=/usr/bin:/bin", "HOME=/home/" + otherUser,
		fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d", env.otherUID)}
	args = append(args, vars...)
	args = append(args, argv...)
	cmd := exec.Command("runuser", args...)
	cmd.Dir = "/tmp"
	return finish(t, cmd, "")
}

func execute(t testing.TB, stdin, name string, args ...string) result {
	cmd := exec.Command(name, args...)
	return finish(t, cmd, stdin)
}

// commandDeadline bounds each command the suite runs and waits for (apt's
// lock wait, 10 min, and a cold `make deb` fit): a command that hangs fails
// its test, whose cleanups then run, and not the whole run at go test's
// -timeout, which runs none.
const commandDeadline = 15 * time.Minute

func finish(t testing.TB, cmd *exec.Cmd, stdin string) result {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	// A killed command's children may hold its output open.
	cmd.WaitDelay = time.Minute
	start := time.Now()
	err := cmd.Start()
	var hung atomic.Bool
	if err == nil {
		timer := time.AfterFunc(commandDeadline, func() {
			hung.Store(true)
			cmd.Process.Kill()
		})
		err = cmd.Wait()
		timer.Stop()
	}
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if hung.Load() {
		r.code = -1
		r.stderr += fmt.Sprintf("\n(e2e: killed after %s: %v)", commandDeadline, err)
		if t != nil {
			// Errorf, not Fatalf: finish may run on a goroutine of the test.
			t.Errorf("%v: no end after %s; killed", cmd.Args, commandDeadline)
		}
		return r
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil {
		// It ended, but something it started kept its output open.
		r.code = cmd.ProcessState.ExitCode()
		if t != nil {
			t.Errorf("%v: ended, but a process it started held its output open for %s more", cmd.Args, cmd.WaitDelay)
		}
	} else if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		if t != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		r.code = -1
		r.stderr += err.Error()
	}
	return r
}

// tool runs a tool through its installed symlink, exactly as an agent would.
func tool(t testing.TB, name string, stdin string, args ...string) result {
	link := filepath.Join(env.project, ".claude", "tools", name, name)
	return runAs(t, "", nil, stdin, append([]string{link}, args...)...)
}

// systemctl runs `systemctl --user ARGS` as testUser.
func systemctl(t testing.TB, args ...string) result {
	return runAs(t, env.home, nil, "", append([]string{"systemctl", "--user"}, args...)...)
}

func serviceState(t testing.TB) string {
	return strings.TrimSpace(systemctl(t, "is-active", "contextd.service").stdout)
}

func mainPID(t testing.TB) int {
	r := systemctl(t, "show", "-p", "MainPID", "--value", "contextd.service")
	n, _ := strconv.Atoi(strings.TrimSpace(r.stdout))
	return n
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s", d, what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// daemonLog returns what the daemon logged in this run: the file of the e2e
// drop-in where there is no journald, else the journal since the tests began.
func daemonLog(t testing.TB) string {
	if b, err := os.ReadFile(filepath.Join(env.runtime, "contextd-e2e.log")); err == nil {
		return string(b)
	}
	// This run's only: the journal keeps earlier runs, whose lines would let a
	// check pass on what an old daemon logged. (The file is new each run.)
	r := execute(t, "", "journalctl", "--no-pager", "-o", "cat", fmt.Sprintf("--since=@%d", env.started.Unix()-1),
		fmt.Sprintf("_UID=%d", env.uid), "SYSLOG_IDENTIFIER=contextd")
	return r.stdout
}

func mustCode(t testing.TB, r result, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("want exit %d, got %s", want, r)
	}
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// swapConfig replaces the test user's configuration with edit(the suite's)
// and stops the daemon, so that the next call starts one that reads it (and
// the user's toolchain files) afresh; the cleanup puts the suite's
// configuration back and stops that daemon too. It returns the suite's.
func swapConfig(t testing.TB, edit func(orig string) string) string {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(env.home, ".config", "contextd", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+string(orig)+"EOF")
		systemctl(t, "stop", "contextd.service")
		systemctl(t, "reset-failed", "contextd.service", "contextd.socket", "contextd-http.socket")
		systemctl(t, "start", "contextd.socket", "contextd-http.socket")
	})
	mustCode(t, userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+edit(string(orig))+"EOF"), 0)
	mustCode(t, systemctl(t, "stop", "contextd.service"), 0)
	return string(orig)
}

// withConfig appends toml to the suite's configuration (swapConfig).
func withConfig(t testing.TB, toml string) {
	t.Helper()
	swapConfig(t, func(orig string) string { return orig + "\n" + toml + "\n" })
}
