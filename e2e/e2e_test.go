//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The first call through a symlink starts the daemon by socket activation: the
// service is inactive before it, active after it, and reports it was activated.
func TestSocketActivationOnFirstCall(t *testing.T) {
	systemctl(t, "stop", "contextd.service")
	waitFor(t, 20*time.Second, "contextd.service to stop", func() bool { return serviceState(t) != "active" })
	mustContain(t, "socket state", systemctl(t, "is-active", "contextd.socket").stdout, "active")

	r := tool(t, "safe_bash", "", "echo $((6*7)) from $(id -un)")
	mustCode(t, r, 0)
	mustContain(t, "output", r.stdout, "42 from "+testUser)
	if s := serviceState(t); s != "active" {
		t.Fatalf("after the first call contextd.service is %q, want active", s)
	}
	st := runAs(t, "", nil, "", env.bin+"/contextd", "status")
	mustCode(t, st, 0)
	mustContain(t, "contextd status", st.stdout, fmt.Sprintf("daemon:   active, pid %d,", mainPID(t)), ", socket-activated")
}

func TestSafeBashRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout []string
	}{
		{"exit status passes through", []string{"echo out; echo err >&2; exit 3"}, "", 3, []string{"out\n", "err\n"}},
		{"argv form after --", []string{"--", "printf", "%s|", "a b", "$HOME"}, "", 0, []string{"a b|$HOME|"}},
		{"cwd inside the workspace", []string{"--cwd", "sub", "--", "pwd"}, "", 0, []string{filepath.Join(env.project, "sub") + "\n"}},
		{"script on stdin", nil, "x=5\necho $((x+1))\n", 0, []string{"6\n"}},
		{"json input", []string{"--json", `{"command":"echo via json"}`}, "", 0, []string{"via json\n"}},
		// The command is PID 1 of its PID namespace, which ignores signals it has
		// no handler for; a process below it dies of them as usual.
		{"signal is 128+N", []string{"sh -c 'kill -TERM $$'; exit $?"}, "", 143, nil},
		{"no credentials in the environment", []string{"env | cut -d= -f1 | sort | tr '\\n' ' '"}, "", 0, []string{"CONTEXTD_SESSION", "PATH"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tool(t, "safe_bash", c.stdin, c.args...)
			mustCode(t, r, c.code)
			mustContain(t, "stdout", r.stdout, c.stdout...)
		})
	}
	t.Run("timeout kills the command and reports 124", func(t *testing.T) {
		// Durations of this call's own, to tell its sleeps from any other.
		r := tool(t, "safe_bash", "", "--timeout", "1", "echo begun; sleep 60.417 & sleep 60.418")
		mustCode(t, r, 124)
		mustContain(t, "stdout", r.stdout, "begun")
		mustContain(t, "stderr", r.stderr, "CTXD-E030")
		if r.elapsed > 15*time.Second {
			t.Fatalf("timeout took %s", r.elapsed)
		}
		waitFor(t, 10*time.Second, "the call's sleeps to die with it", func() bool {
			return strings.TrimSpace(userSh(t, "pgrep -u "+testUser+` -f '^sleep 60\.41[78]$' || true`).stdout) == ""
		})
	})
	t.Run("format json envelope", func(t *testing.T) {
		r := tool(t, "safe_bash", "", "--format", "json", "echo hi; exit 2")
		mustCode(t, r, 2)
		var env struct {
			Data       string   `json:"data"`
			Refs       []string `json:"refs"`
			TokensUsed *int     `json:"tokens_used"`
			HasMore    *bool    `json:"has_more"`
			Truncated  *bool    `json:"truncated"`
			ExitCode   int      `json:"exit_code"`
			Session    string   `json:"session"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &env); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		if env.Data != "hi\n" || env.ExitCode != 2 || env.Refs == nil || env.TokensUsed == nil || env.HasMore == nil || env.Truncated == nil || env.Session == "" {
			t.Fatalf("bad envelope: %s", r.stdout)
		}
	})
	t.Run("session from CONTEXTD_SESSION", func(t *testing.T) {
		link := filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash")
		r := runAs(t, "", []string{"CONTEXTD_SESSION=e2e-fixed"}, "", link, "--format", "json", "echo $CONTEXTD_SESSION")
		mustCode(t, r, 0)
		mustContain(t, "envelope", r.stdout, `"session":"e2e-fixed"`, `"data":"e2e-fixed\n"`)
	})
	t.Run("usage error is 64 with a code", func(t *testing.T) {
		r := tool(t, "safe_bash", "", "--bogus", "x")
		mustCode(t, r, 64)
		mustContain(t, "stderr", r.stderr, "CTXD-E001")
	})
}

func TestFileToolsRoundTrip(t *testing.T) {
	content := "first line\n\tsecond 'quoted' $line\nüñíçødé third\nno newline at end"
	// A name of this run's own: safe_write says "created" only for a new file.
	name := "notes/round-" + randomFrom(t, "abcdefghij", 8) + ".txt"
	t.Cleanup(func() { os.Remove(filepath.Join(env.project, name)) })
	w := tool(t, "safe_write", content, name)
	mustCode(t, w, 0)
	mustContain(t, "safe_write output", w.stdout, "created "+name, fmt.Sprintf("%d bytes", len(content)))

	// Byte-exact on disk, owned by the user, mode 0644.
	st := userSh(t, "cd ~/proj && stat -c '%U %a' "+name+" && cat "+name)
	mustCode(t, st, 0)
	if want := testUser + " 644\n" + content; st.stdout != want {
		t.Fatalf("on disk:\n%q\nwant\n%q", st.stdout, want)
	}

	r := tool(t, "safe_read", "", name)
	mustCode(t, r, 0)
	want := "     1\tfirst line\n     2\t\tsecond 'quoted' $line\n     3\tüñíçødé third\n     4\tno newline at end\n"
	if r.stdout != want {
		t.Fatalf("safe_read:\n%q\nwant\n%q", r.stdout, want)
	}
	r = tool(t, "safe_read", "", name, "--offset", "2", "--limit", "2")
	mustCode(t, r, 0)
	if r.stdout != "     2\t\tsecond 'quoted' $line\n     3\tüñíçødé third\n" {
		t.Fatalf("offset/limit: %q", r.stdout)
	}

	// Replace keeps the mode and writes atomically.
	mustCode(t, userSh(t, "chmod 0750 ~/proj/"+name), 0)
	w = tool(t, "safe_write", "", name, "--content", "replaced\n")
	mustCode(t, w, 0)
	mustContain(t, "safe_write output", w.stdout, "replaced "+name, "mode 0750")
	st = userSh(t, "cd ~/proj && stat -c '%a' "+name+" && ls -a notes")
	mustContain(t, "after replace", st.stdout, "750\n")
	if strings.Contains(st.stdout, ".tmp") {
		t.Fatalf("temporary file left behind: %s", st.stdout)
	}

	t.Run("confined to the workspace", func(t *testing.T) {
		mustCode(t, userSh(t, "cd ~/proj && ln -sfn /etc sub/etc-link && ln -sfn ../../.bashrc sub/rc-link"), 0)
		for _, p := range []string{"../.bashrc", "/etc/passwd", "sub/etc-link/passwd", "sub/rc-link", "sub/../../.profile"} {
			r := tool(t, "safe_read", "", p)
			mustCode(t, r, 77)
			mustContain(t, "stderr of safe_read "+p, r.stderr, "CTXD-E020")
			w := tool(t, "safe_write", "", p, "--content", "pwned")
			mustCode(t, w, 77)
		}
		if c := userSh(t, "cat ~/.bashrc | grep -c pwned || true"); strings.TrimSpace(c.stdout) != "0" {
			t.Fatalf("a write escaped the workspace")
		}
	})
	t.Run("missing file is 66", func(t *testing.T) {
		r := tool(t, "safe_read", "", "does/not/exist")
		mustCode(t, r, 66)
		mustContain(t, "stderr", r.stderr, "CTXD-E021")
	})
}

// The daemon exits after idle_timeout and the next call brings it back through
// the socket. The suite's daemon keeps the default (10 min); this test gives
// one daemon 4 s.
func TestIdleExitAndReactivation(t *testing.T) {
	cfgPath := filepath.Join(env.home, ".config", "contextd", "config.toml")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+string(orig)+"EOF")
	}
	t.Cleanup(func() {
		restore()
		systemctl(t, "stop", "contextd.service") // the next call starts a daemon with the suite's config
	})
	idleLine := regexp.MustCompile(`(?m)^idle_timeout\s*=.*$`)
	if !idleLine.Match(orig) {
		t.Fatalf("the suite's config sets no idle_timeout:\n%s", orig)
	}
	short := idleLine.ReplaceAllString(string(orig), `idle_timeout = "4s"`)
	mustCode(t, userSh(t, "cat > ~/.config/contextd/config.toml <<'EOF'\n"+short+"EOF"), 0)
	mustCode(t, systemctl(t, "stop", "contextd.service"), 0) // the next call starts a daemon with this config
	idleBefore := strings.Count(daemonLog(t), "reason=idle")

	// MainPID is read while a call is in flight, which the idle timer waits
	// for: a slow harness cannot lose the daemon before it is seen.
	flag := ".idle-go-" + randomFrom(t, "abcdefghij", 8)
	t.Cleanup(func() { os.Remove(filepath.Join(env.project, flag)) })
	cmd, lines, stderr := startedCall(t, "echo started; for i in $(seq 1200); do [ -e "+flag+" ] && break; sleep 0.1; done; echo released")
	first := mainPID(t)
	mustCode(t, userSh(t, "touch ~/proj/"+flag), 0)
	for lines.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the call that held the daemon: %v\n%s", err, stderr)
	}
	if first == 0 {
		t.Fatal("no MainPID during a call")
	}
	idleStart := time.Now()
	waitFor(t, 60*time.Second, "the idle daemon to exit", func() bool {
		s := serviceState(t)
		return s == "inactive" || s == "failed"
	})
	t.Logf("the daemon exited %s after its last call ended (idle_timeout 4s)", time.Since(idleStart).Round(100*time.Millisecond))
	if r := systemctl(t, "show", "-p", "Result", "--value", "contextd.service"); strings.TrimSpace(r.stdout) != "success" {
		t.Fatalf("idle exit was not clean: Result=%s", r.stdout)
	}
	if n := strings.Count(daemonLog(t), "reason=idle"); n <= idleBefore {
		t.Fatalf("the daemon log has no new reason=idle (%d before, %d now):\n%s", idleBefore, n, tailLines(daemonLog(t), 20))
	}

	// Back to the suite's idle_timeout before the next daemon starts, so that
	// it outlives the reads below.
	restore()
	r := tool(t, "safe_bash", "", "echo back")
	mustCode(t, r, 0)
	mustContain(t, "stdout", r.stdout, "back")
	if second := mainPID(t); second == 0 || second == first {
		t.Fatalf("expected a new daemon, MainPID %d -> %d", first, second)
	}
}

// Another user cannot use the daemon: the socket directory keeps them out, and if
// its permissions are opened the peer check closes their connection (and logs it).
func TestSecondUserRefused(t *testing.T) {
	sock := filepath.Join(env.runtime, "contextd", "contextd.sock")
	proxy := env.bin + "/contextd-proxy"
	mustCode(t, tool(t, "safe_bash", "", "true"), 0) // the socket exists

	r := otherAs(t, []string{"CONTEXTD_SOCKET=" + sock}, proxy, "safe_bash", "id")
	mustCode(t, r, 69)
	mustContain(t, "stderr", r.stderr, "CTXD-E011", sock)

	// Open the path, as a careless chmod would; the peer check must still refuse.
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{env.runtime, 0o711}, {filepath.Dir(sock), 0o711}, {sock, 0o666}} {
		fi, err := os.Stat(p.path)
		if err != nil {
			t.Fatal(err)
		}
		orig := fi.Mode().Perm()
		if err := os.Chmod(p.path, p.mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p.path, orig) })
	}

	// The proxy refuses to talk to a daemon of another uid by default...
	r = otherAs(t, []string{"CONTEXTD_SOCKET=" + sock}, proxy, "safe_bash", "id")
	mustCode(t, r, 77)
	mustContain(t, "stderr", r.stderr, "CTXD-E015")
	// ...and when told to, the daemon's peer check closes the connection.
	r = otherAs(t, []string{"CONTEXTD_SOCKET=" + sock, fmt.Sprintf("CONTEXTD_DAEMON_UID=%d", env.uid)}, proxy, "safe_bash", "id")
	mustCode(t, r, 77)
	mustContain(t, "stderr", r.stderr, "CTXD-E012")
	if strings.Contains(r.stdout, "uid=") {
		t.Fatalf("the command ran for the other user: %s", r.stdout)
	}
	waitFor(t, 5*time.Second, "the refusal in the daemon log", func() bool {
		return strings.Contains(daemonLog(t), fmt.Sprintf("peer_uid=%d", env.otherUID))
	})
	mustContain(t, "daemon log", daemonLog(t), "refused peer", "peer_pid=")
}

// A daemon stopped in the middle of a call (systemctl stop: SIGTERM, drain, cancel)
// reports the call cleanly, kills its command, and the next call works.
func TestStopMidCall(t *testing.T) {
	cmd, lines, stderr := startedCall(t, "echo started; sleep 30.417; echo finished")
	stopStart := time.Now()
	mustCode(t, systemctl(t, "stop", "contextd.service"), 0)
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != 75 {
		t.Fatalf("proxy exit %d (%v), want 75; stderr:\n%s", code, err, stderr.String())
	}
	mustContain(t, "proxy stderr", stderr.String(), "CTXD-E014")
	if strings.Contains(rest.String(), "finished") {
		t.Fatal("the command ran to its end although the daemon was stopped")
	}
	if d := time.Since(stopStart); d > 15*time.Second {
		t.Fatalf("stop took %s with drain_timeout 1s", d)
	}
	waitFor(t, 10*time.Second, "the command to die with the daemon", func() bool {
		return strings.TrimSpace(userSh(t, "pgrep -u "+testUser+` -f '^sleep 30\.417$' || true`).stdout) == ""
	})
	r := tool(t, "safe_bash", "", "echo after stop")
	mustCode(t, r, 0)
	mustContain(t, "stdout", r.stdout, "after stop")
}

// A daemon killed outright mid-call (no drain) is reported as a lost connection,
// and its command dies with it.
func TestKilledMidCall(t *testing.T) {
	cmd, lines, stderr := startedCall(t, "echo started; sleep 31.417; echo finished")
	mustCode(t, systemctl(t, "kill", "--kill-whom=main", "--signal=SIGKILL", "contextd.service"), 0)
	for lines.Scan() {
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("proxy exit %d, want 75; stderr:\n%s", code, stderr.String())
	}
	mustContain(t, "proxy stderr", stderr.String(), "CTXD-E013")
	waitFor(t, 10*time.Second, "the orphaned command to die", func() bool {
		return strings.TrimSpace(userSh(t, "pgrep -u "+testUser+` -f '^sleep 31\.417$' || true`).stdout) == ""
	})
	waitFor(t, 20*time.Second, "contextd.service to leave the failed/restart state", func() bool {
		s := serviceState(t)
		return s == "inactive" || s == "active" || s == "failed"
	})
	systemctl(t, "reset-failed", "contextd.service")
	r := tool(t, "safe_bash", "", "echo after kill")
	mustCode(t, r, 0)
	mustContain(t, "stdout", r.stdout, "after kill")
}

// With the socket unit stopped, a call says exactly that, and how to fix it.
func TestDaemonUnavailable(t *testing.T) {
	mustCode(t, systemctl(t, "stop", "contextd.socket", "contextd.service"), 0)
	t.Cleanup(func() { systemctl(t, "start", "contextd.socket") })
	r := tool(t, "safe_bash", "", "true")
	mustCode(t, r, 69)
	mustContain(t, "stderr", r.stderr, "CTXD-E010", filepath.Join(env.runtime, "contextd", "contextd.sock"), "systemctl --user start contextd.socket")
	mustCode(t, systemctl(t, "start", "contextd.socket"), 0)
	mustCode(t, tool(t, "safe_bash", "", "true"), 0)
}

// Run by hand while the socket unit holds the path, a second daemon is refused; run
// as root it refuses without --allow-root.
func TestSecondDaemonAndRootRefused(t *testing.T) {
	mustCode(t, tool(t, "safe_bash", "", "true"), 0)
	r := runAs(t, "", nil, "", env.bin+"/contextd", "serve")
	mustCode(t, r, 75)
	mustContain(t, "stderr", r.stderr, "CTXD-E053")

	root := execute(t, "", env.bin+"/contextd", "serve", "--socket", filepath.Join(t.TempDir(), "s.sock"))
	mustCode(t, root, 77)
	mustContain(t, "stderr", root.stderr, "CTXD-E052")
}

// startedCall runs safe_bash script through the symlink in the background and
// returns once the script printed its first line, "started".
func startedCall(t *testing.T, script string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	link := filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash")
	cmd := exec.Command("bash", env.usermgr, "run", testUser, "-C", env.project, "--", link, script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "started" {
		t.Fatalf("call did not start: %q %s", lines.Text(), stderr.String())
	}
	return cmd, lines, stderr
}
