//go:build e2e

package e2e

// The escape suite (issue 3, point 4) and the check of the sandbox layers from
// outside (its first "Done when" bullet).
//
// Every hostile command runs through the real safe_bash symlink as the
// unprivileged test user, against the real user manager. Each test asserts that
// the attack fails in the way that shows which layer stopped it (the errno the
// seccomp profile returns, EROFS of the read-only binds, ECONNREFUSED/ENETUNREACH
// of the private network namespace, ESRCH of the PID namespace, the kill by
// MemoryMax, the pids.events counter of TasksMax, ...), and afterwards that the
// daemon is still healthy: a follow-up call works and MainPID is unchanged.
//
// Where it matters, the same attack is made unsandboxed by the same user as a
// control: an attack that works on the host and fails in the sandbox failed
// because of the sandbox, not because of the kernel's own permission checks.
// System calls are made by escprobe, a small static Go program built from the
// source below and placed in the workspace, so that the suite needs nothing the
// machine may lack (python3, strace, keyutils, iproute2).

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------
// helpers

// escDaemon makes sure the daemon runs and returns its MainPID.
func escDaemon(t *testing.T) int {
	t.Helper()
	escPanicsBefore(t)
	mustCode(t, tool(t, "safe_bash", "", "true"), 0)
	pid := mainPID(t)
	if pid == 0 {
		t.Fatal("no MainPID after a call")
	}
	return pid
}

// escHealthy checks that the daemon still serves calls, is still the process pid
// (0: any), and has not panicked.
func escHealthy(t *testing.T, pid int) {
	t.Helper()
	r := tool(t, "safe_bash", "", "echo healthy")
	if r.code != 0 || r.stdout != "healthy\n" {
		t.Fatalf("the daemon is not healthy after the attack: %s", r)
	}
	if pid != 0 {
		if now := mainPID(t); now != pid {
			t.Fatalf("the daemon was replaced during the attack: MainPID %d -> %d", pid, now)
		}
	}
	if n := strings.Count(daemonLog(t), "panic"); n > escPanicsBefore(t) {
		t.Fatalf("the daemon log shows a new panic:\n%s", daemonLog(t))
	}
}

var escPanics struct {
	once sync.Once
	n    int
}

// escPanicsBefore is how often "panic" was in the daemon's log before the first
// escape test (the journal of a systemd host keeps earlier runs).
func escPanicsBefore(t *testing.T) int {
	escPanics.once.Do(func() { escPanics.n = strings.Count(daemonLog(t), "panic") })
	return escPanics.n
}

// escSh runs script through the safe_bash symlink (stderr is merged into stdout
// by safe_bash).
func escSh(t *testing.T, script string, args ...string) result {
	t.Helper()
	return tool(t, "safe_bash", "", append(args, script)...)
}

// escKV parses "key=value" lines (later keys win).
func escKV(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

func escRandom() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func escSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func escIDs(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(testUser)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// escProc is a process of the test user, seen from the host.
type escProc struct {
	pid     int
	comm    string
	cmdline string // arguments joined by spaces
	cgroup  string // /proc/PID/cgroup, whole
}

// escUserProcs lists the test user's processes, read from the host's /proc as root.
func escUserProcs() []escProc {
	ents, _ := os.ReadDir("/proc")
	var out []escProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fi, err := os.Stat("/proc/" + e.Name())
		if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != env.uid {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		out = append(out, escProc{pid: pid, comm: strings.TrimSpace(string(comm)),
			cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")), cgroup: string(cg)})
	}
	return out
}

// escFind waits for a process of the test user whose command line is cmdline.
func escFind(t *testing.T, cmdline string) escProc {
	t.Helper()
	var found escProc
	waitFor(t, 10*time.Second, "process "+cmdline, func() bool {
		for _, p := range escUserProcs() {
			if p.cmdline == cmdline {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

// escGone waits until no process of the test user has one of the command lines.
func escGone(t *testing.T, what string, cmdlines ...string) {
	t.Helper()
	var left []string
	ctxDeadline := time.Now().Add(10 * time.Second)
	for {
		left = left[:0]
		for _, p := range escUserProcs() {
			for _, c := range cmdlines {
				if p.cmdline == c {
					left = append(left, fmt.Sprintf("%d %q (%s)", p.pid, p.cmdline, strings.TrimSpace(p.cgroup)))
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(ctxDeadline) {
			t.Fatalf("%s: still running on the host: %v", what, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var escScopeRE = regexp.MustCompile(`contextd-[a-z_]+-[0-9-]+\.scope`)

// escScopeOf returns the scope unit named in a /proc/PID/cgroup text.
func escScopeOf(cgroup string) string { return escScopeRE.FindString(cgroup) }

// escStatus parses /proc/PID/status.
func escStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("status of %d: %v", pid, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// escShow returns properties of a user unit.
func escShow(t *testing.T, unit string, props ...string) map[string]string {
	t.Helper()
	args := []string{"show", unit}
	for _, p := range props {
		args = append(args, "-p", p)
	}
	r := systemctl(t, args...)
	mustCode(t, r, 0)
	return escKV(r.stdout)
}

// escCgroupFile is file in the cgroup ControlGroup (a unit's ControlGroup
// property) of controller: the v1 hierarchy of that controller where there is
// one (hybrid hosts), else the unified hierarchy.
func escCgroupFile(controller, cg, file string) string {
	for _, p := range []string{
		filepath.Join("/sys/fs/cgroup", controller, cg, file),
		filepath.Join("/sys/fs/cgroup", cg, file),
	} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join("/sys/fs/cgroup", cg, file)
}

func escReadTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "ERR " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

// escCall is a tool call running in the background, started as the test user.
type escCall struct {
	cmd    *exec.Cmd
	lines  chan string
	out    strings.Builder
	stderr strings.Builder
	start  time.Time
	mu     sync.Mutex
}

func escStart(t *testing.T, name string, args ...string) *escCall {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", name, name)
	c := &escCall{lines: make(chan string, 4096)}
	c.cmd = exec.Command("bash", append([]string{env.usermgr, "run", testUser, "-C", env.project, "--", link}, args...)...)
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = &c.stderr
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.out.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// waitLine waits for a line of output equal to want.
func (c *escCall) waitLine(t *testing.T, want string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the call ended before printing %q: %s\nstderr: %s", want, c.output(), c.stderr.String())
			}
			if l == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q from the call after %s: %s", want, d, c.output())
		}
	}
}

func (c *escCall) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// wait waits (at most d) for the call to end and returns its result.
func (c *escCall) wait(t *testing.T, d time.Duration) result {
	t.Helper()
	done := make(chan struct{})
	go func() {
		for range c.lines {
		}
		c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		c.cmd.Process.Kill()
		<-done
		t.Fatalf("the call did not end within %s: %s", d, c.output())
	}
	return result{stdout: c.output(), stderr: c.stderr.String(), code: c.cmd.ProcessState.ExitCode(), elapsed: time.Since(c.start)}
}

// ---------------------------------------------------------------------------
// escprobe

const escProbeRel = ".escape/probe"

var escProbeBuild struct {
	once sync.Once
	err  error
}

// escProbe builds escprobe (once) into the workspace, owned by the test user, and
// returns its path relative to the workspace (the sandbox's working directory).
func escProbe(t *testing.T) string {
	t.Helper()
	escProbeBuild.once.Do(func() { escProbeBuild.err = escBuildProbe(t) })
	if escProbeBuild.err != nil {
		t.Fatalf("build the escape probe: %v", escProbeBuild.err)
	}
	return "./" + escProbeRel
}

func escBuildProbe(t *testing.T) error {
	dir, err := os.MkdirTemp("", "contextd-escprobe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module escprobe\n\ngo 1.22\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(escProbeSource), 0o644); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "probe"), ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "probe"))
	if err != nil {
		return err
	}
	uid, gid := escIDs(t)
	dest := filepath.Join(env.project, escProbeRel)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := os.Chown(filepath.Dir(dest), uid, gid); err != nil {
		return err
	}
	if err := os.WriteFile(dest, bin, 0o755); err != nil {
		return err
	}
	return os.Chown(dest, uid, gid)
}

// escHost runs the probe unsandboxed, as the test user (the control).
func escHost(t *testing.T, args ...string) result {
	t.Helper()
	escProbe(t)
	return runAs(t, "", nil, "", append([]string{filepath.Join(env.project, escProbeRel)}, args...)...)
}

// ---------------------------------------------------------------------------
// The layers, checked from outside

// TestLayers: during a call, the sandboxed processes sit in their own transient
// scope in contextd.slice with the configured limits (as systemd and as the
// kernel's cgroup files say), under seccomp with no_new_privs and no
// capabilities, in namespaces of their own; a proxy that goes away stops the
// scope. Every tool's result names its layers.
func TestLayers(t *testing.T) {
	daemon := escDaemon(t)
	c := escStart(t, "safe_bash", "--timeout", "30", "echo ready; sleep 23; echo finished")
	c.waitLine(t, "ready", 15*time.Second)
	sleeper := escFind(t, "sleep 23")

	unit := escScopeOf(sleeper.cgroup)
	if !strings.HasPrefix(unit, "contextd-safe_bash-") {
		t.Fatalf("the sandboxed process is in no contextd-safe_bash-*.scope:\n%s", sleeper.cgroup)
	}
	list := systemctl(t, "list-units", "--no-legend", "--plain", "contextd-*.scope")
	mustContain(t, "systemctl --user list-units contextd-*.scope", list.stdout, unit)
	props := escShow(t, unit, "Slice", "ControlGroup", "MemoryMax", "TasksMax", "RuntimeMaxUSec", "ActiveState")
	for k, want := range map[string]string{
		"Slice": "contextd.slice", "MemoryMax": "1073741824", "TasksMax": "512",
		"RuntimeMaxUSec": "31s", // --timeout 30 + the 1 s margin
		"ActiveState":    "active",
	} {
		if props[k] != want {
			t.Errorf("%s: %s=%q, want %q", unit, k, props[k], want)
		}
	}
	cg := props["ControlGroup"]
	if !strings.HasSuffix(cg, "/contextd.slice/"+unit) || !strings.Contains(sleeper.cgroup, cg) {
		t.Errorf("ControlGroup %q is not below contextd.slice or not the process's cgroup:\n%s", cg, sleeper.cgroup)
	}
	// The kernel's view of the limits: the cgroup files the scope got.
	if v := escReadTrim(escCgroupFile("memory", cg, "memory.limit_in_bytes")); v != "1073741824" {
		if v2 := escReadTrim(escCgroupFile("memory", cg, "memory.max")); v2 != "1073741824" {
			t.Errorf("memory limit of %s in the kernel: %q / %q, want 1073741824", cg, v, v2)
		}
	}
	if v := escReadTrim(escCgroupFile("pids", cg, "pids.max")); v != "512" {
		t.Errorf("pids.max of %s in the kernel: %q, want 512", cg, v)
	}

	// The sandbox's PID 1 is contextd's sandbox init, which runs the shell
	// as its child and scrubs its output; the shell and its child.
	shell, _ := strconv.Atoi(escStatus(t, sleeper.pid)["PPid"])
	init, _ := strconv.Atoi(escStatus(t, shell)["PPid"])
	if st := escStatus(t, init); st["Name"] != "contextd-init" || !strings.HasSuffix(st["NSpid"], "\t1") {
		t.Errorf("the shell's parent (pid %d, %q) is not the sandbox init, PID 1 of its own PID namespace: NSpid %q", init, st["Name"], st["NSpid"])
	}
	if f := strings.Fields(escStatus(t, shell)["NSpid"]); len(f) != 2 || f[1] == "1" {
		t.Errorf("the sandbox's shell (pid %d): NSpid %v, want two levels, not PID 1", shell, f)
	}
	for _, pid := range []int{init, shell, sleeper.pid} {
		st := escStatus(t, pid)
		for k, want := range map[string]string{
			"Seccomp": "2", "NoNewPrivs": "1",
			"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000",
			"CapInh": "0000000000000000", "CapAmb": "0000000000000000",
		} {
			if st[k] != want {
				t.Errorf("pid %d (%s): %s: %q, want %q", pid, st["Name"], k, st[k], want)
			}
		}
		if n, _ := strconv.Atoi(st["Seccomp_filters"]); n < 1 {
			t.Errorf("pid %d: Seccomp_filters %q", pid, st["Seccomp_filters"])
		}
		if cgPid, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); !strings.Contains(string(cgPid), unit) {
			t.Errorf("pid %d is not in %s:\n%s", pid, unit, cgPid)
		}
		for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
			mine, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
			theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", daemon, ns))
			if err1 != nil || err2 != nil || mine == theirs {
				t.Errorf("pid %d shares the daemon's %s namespace (%s / %s, %v %v)", pid, ns, mine, theirs, err1, err2)
			}
		}
	}
	t.Logf("scope %s (%s): MemoryMax=%s TasksMax=%s RuntimeMaxUSec=%s; init %d, shell %d and sleep %d: Seccomp 2, NoNewPrivs 1, no capabilities, 7 namespaces of their own",
		unit, cg, props["MemoryMax"], props["TasksMax"], props["RuntimeMaxUSec"], init, shell, sleeper.pid)

	// The agent goes away mid-call: the scope is stopped and its processes die.
	c.cmd.Process.Kill()
	c.wait(t, 10*time.Second)
	waitFor(t, 10*time.Second, unit+" to stop after the proxy disconnected", func() bool {
		return strings.TrimSpace(systemctl(t, "is-active", unit).stdout) != "active"
	})
	escGone(t, "after the proxy disconnected", "sleep 23")
	if strings.Contains(c.output(), "finished") {
		t.Fatal("the command ran to its end although its caller went away")
	}
	escHealthy(t, daemon)

	t.Run("result envelope names the layers", func(t *testing.T) {
		type sandbox struct {
			Namespaces bool   `json:"namespaces"`
			Seccomp    string `json:"seccomp"`
			Scope      string `json:"scope"`
			ScopeNote  string `json:"scope_note"`
			Network    bool   `json:"network"`
		}
		for _, c := range []struct {
			tool string
			args []string
		}{
			{"safe_write", []string{"--format", "json", "notes/layers.txt", "--content", "layers\n"}},
			{"safe_read", []string{"--format", "json", "notes/layers.txt"}},
			{"safe_bash", []string{"--format", "json", "true"}},
		} {
			r := tool(t, c.tool, "", c.args...)
			mustCode(t, r, 0)
			var envl struct {
				Sandbox *sandbox `json:"sandbox"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &envl); err != nil || envl.Sandbox == nil {
				t.Fatalf("%s: no sandbox in the envelope (%v): %s", c.tool, err, r.stdout)
			}
			sb := envl.Sandbox
			if !sb.Namespaces || sb.Seccomp == "" || !escScopeRE.MatchString(sb.Scope) ||
				!strings.HasPrefix(sb.Scope, "contextd-"+c.tool+"-") || sb.ScopeNote != "" || sb.Network {
				t.Errorf("%s: layers %+v, want namespaces, a seccomp profile and a contextd-%s-*.scope, no network", c.tool, *sb, c.tool)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Files outside the workspace

// TestEscapeReadHostFiles: the secrets of the real home, other users' homes,
// /root and the daemon's runtime directory are readable by the user on the host
// (the control) and do not exist in the sandbox.
func TestEscapeReadHostFiles(t *testing.T) {
	daemon := escDaemon(t)
	marker := "ctxd-escape-ssh-" + escRandom()
	otherMarker := "ctxd-escape-other-" + escRandom()
	mustCode(t, userSh(t, fmt.Sprintf("mkdir -p -m 0700 ~/.ssh && printf '%%s\\n' %s > ~/.ssh/id_rsa && chmod 600 ~/.ssh/id_rsa", marker)), 0)
	otherFile := fmt.Sprintf("/home/%s/escape-marker", otherUser)
	if err := os.WriteFile(otherFile, []byte(otherMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(otherFile) })
	sock := filepath.Join(env.runtime, "contextd", "contextd.sock")

	// Control: unsandboxed, the same user reads all of it.
	host := userSh(t, fmt.Sprintf("cat ~/.ssh/id_rsa %s; ls %s", otherFile, filepath.Dir(sock)))
	mustCode(t, host, 0)
	mustContain(t, "the host control", host.stdout, marker, otherMarker, "contextd.sock")

	paths := map[string]string{
		"ssh":       "~/.ssh/id_rsa",
		"ssh_abs":   env.home + "/.ssh/id_rsa",
		"ssh_dir":   "~/.ssh",
		"bashrc":    "~/.bashrc",
		"other":     otherFile,
		"otherhome": "/home/" + otherUser,
		"root":      "/root",
		"run":       "/run",
		"runtime":   env.runtime,
		"socket":    sock,
		"bus":       env.runtime + "/bus",
		"var":       "/var",
		"sys":       "/sys/fs/cgroup",
		"daemonbin": env.bin + "/contextd",
	}
	var script strings.Builder
	for k, p := range paths {
		fmt.Fprintf(&script, "if [ -e %s ]; then echo %s=present; else echo %s=absent; fi\n", p, k, k)
	}
	// The grep looks for this run's planted markers only: other files of the
	// workspace (escprobe's binary) hold the "ctxd-escape-" prefix.
	fmt.Fprintf(&script, `cat ~/.ssh/id_rsa; echo "cat_rc=$?"
echo "home=$(ls -A ~ | tr '\n' ' ')"
echo "homes=$(ls -A /home | tr '\n' ' ')"
cat /etc/shadow >/dev/null; echo "shadow_rc=$?"
grep -rlsE '%s|%s' /home /tmp /etc 2>/dev/null | sed 's/^/found=/'
`, marker, otherMarker)
	r := escSh(t, script.String())
	kv := escKV(r.stdout)
	for k, p := range paths {
		if kv[k] != "absent" {
			t.Errorf("%s (%s) is visible in the sandbox: %q", k, p, kv[k])
		}
	}
	if strings.Contains(r.stdout, marker) || strings.Contains(r.stdout, otherMarker) || kv["found"] != "" {
		t.Errorf("a planted secret came out of the sandbox:\n%s", r.stdout)
	}
	mustContain(t, "cat ~/.ssh/id_rsa", r.stdout, "No such file or directory")
	if kv["cat_rc"] != "1" {
		t.Errorf("cat ~/.ssh/id_rsa: exit %q", kv["cat_rc"])
	}
	// $HOME is the workspace's scratch home with the workspace and what the
	// home view shows on top: nothing else of the real home (its dotfiles)
	// shows through. /home holds only $HOME.
	inHome := strings.Fields(kv["home"])
	if !slices.Contains(inHome, filepath.Base(env.project)) {
		t.Errorf("$HOME in the sandbox holds %q, without the workspace %q", kv["home"], filepath.Base(env.project))
	}
	for _, real := range []string{".bashrc", ".profile", ".ssh", ".bash_logout"} {
		if slices.Contains(inHome, real) {
			t.Errorf("the real home's %s shows in the sandbox's $HOME (%q)", real, kv["home"])
		}
	}
	if kv["homes"] != testUser {
		t.Errorf("/home in the sandbox holds %q, want only %q", kv["homes"], testUser)
	}
	// /etc is visible read-only by design; /etc/shadow stays the file permissions' job.
	mustContain(t, "cat /etc/shadow", r.stdout, "/etc/shadow: Permission denied")
	escHealthy(t, daemon)
}

// TestEscapeWriteOutside: writes to $HOME land in the workspace's scratch
// home and writes to /tmp in the sandbox's own tmpfs, never in the real home
// or the host's /tmp; the system paths are read-only mounts
// (EROFS, where the host says EACCES); a symlink planted in the workspace
// cannot redirect a write to the real home.
func TestEscapeWriteOutside(t *testing.T) {
	daemon := escDaemon(t)
	tag := "ctxd-escape-pwned-" + escRandom()
	rcBefore := escSHA(t, env.home+"/.bashrc")
	profBefore := escSHA(t, env.home+"/.profile")

	// Control: the host refuses /usr and /etc by permissions, not as read-only.
	host := userSh(t, "touch /usr/"+tag+" /etc/"+tag+" 2>&1; true")
	mustContain(t, "host touch /usr", host.stdout, "Permission denied")

	script := fmt.Sprintf(`echo x > ~/%[1]s && echo home_write=ok
echo x > /tmp/%[1]s && echo tmp_write=ok
for d in /usr/ /etc/ /bin/ /lib/ / /dev/ /home/ /home/%[2]s/; do touch ${d}%[1]s 2>&1; done
mkdir /home/%[3]s 2>&1
ln -s %[4]s/.bashrc rc-link && echo pwned-%[1]s >> rc-link; echo "rc_link_rc=$?"
ln -s ../.profile prof-link && echo pwned-%[1]s >> prof-link; echo "prof_link_rc=$?"
rm -f rc-link prof-link
`, tag, otherUser, "ctxd-escape-newhome", env.home)
	r := escSh(t, script)
	kv := escKV(r.stdout)
	// Inside, $HOME and /tmp are writable scratch space...
	if kv["home_write"] != "ok" || kv["tmp_write"] != "ok" {
		t.Errorf("$HOME or /tmp not writable in the sandbox:\n%s", r.stdout)
	}
	// ...and everything else is a read-only mount.
	for _, d := range []string{"/usr/", "/etc/", "/bin/", "/lib/", "/", "/dev/", "/home/"} {
		mustContain(t, "touch under "+d, r.stdout, fmt.Sprintf("touch: cannot touch '%s%s': Read-only file system", d, tag))
	}
	mustContain(t, "mkdir in /home", r.stdout, "Read-only file system")
	// Nothing reached the host.
	for _, p := range []string{env.home + "/" + tag, "/tmp/" + tag, "/usr/" + tag, "/etc/" + tag, "/" + tag,
		"/home/" + otherUser + "/" + tag, "/home/ctxd-escape-newhome"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
	if escSHA(t, env.home+"/.bashrc") != rcBefore || escSHA(t, env.home+"/.profile") != profBefore {
		t.Errorf("a symlink in the workspace redirected a write into the real home")
	}
	escHealthy(t, daemon)
}

// ---------------------------------------------------------------------------
// Network

// TestEscapeNetwork: listeners the test opens on the host (TCP on 127.0.0.1 and
// ::1, TCP on the host's own address, an abstract unix socket, which no file
// permission protects) are reachable by the user on the host and not from the
// sandbox; nothing but lo exists inside, there is no route out (DNS included),
// and raw, packet and netlink sockets are refused.
func TestEscapeNetwork(t *testing.T) {
	probe := escProbe(t)
	daemon := escDaemon(t)

	var accepted atomic.Int64
	listen := func(network, addr string) net.Listener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listen %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		return ln
	}
	targets := [][2]string{ // probe network, address
		{"tcp", listen("tcp4", "127.0.0.1:0").Addr().String()},
		{"unix", listen("unix", "@ctxd-escape-"+escRandom()).Addr().String()},
	}
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln6.Close()
		targets = append(targets, [2]string{"tcp", listen("tcp6", "[::1]:0").Addr().String()})
	}
	// The host's own (non-loopback) address.
	hostIP := ""
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				hostIP = ipn.IP.String()
				break
			}
		}
	}
	if hostIP != "" {
		all := listen("tcp4", "0.0.0.0:0")
		targets = append(targets, [2]string{"tcp", net.JoinHostPort(hostIP, strconv.Itoa(all.Addr().(*net.TCPAddr).Port))})
	}
	// A UDP "connect" to the resolver only needs a route (a resolver on the
	// host's loopback, as systemd-resolved's, is replaced by a TEST-NET address).
	ns := "192.0.2.53"
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if m := regexp.MustCompile(`(?m)^nameserver\s+([0-9.]+)\s*$`).FindStringSubmatch(string(b)); m != nil && !net.ParseIP(m[1]).IsLoopback() {
			ns = m[1]
		}
	}
	udpTarget := net.JoinHostPort(ns, "53")
	hostRoute := regexp.MustCompile(`(?m)^\S+\s+00000000\s`).MatchString(escReadTrim("/proc/net/route"))

	// In the sandbox.
	var script strings.Builder
	for i, tg := range targets {
		fmt.Fprintf(&script, "echo t%d=$(%s %s %s | cut -d= -f2)\n", i, probe, tg[0], tg[1])
	}
	fmt.Fprintf(&script, "echo udp=$(%s udp %s | cut -d= -f2)\n", probe, udpTarget)
	fmt.Fprintf(&script, "echo self=$(%s self | cut -d= -f2)\n", probe)
	port := targets[0][1][strings.LastIndex(targets[0][1], ":")+1:]
	fmt.Fprintf(&script, "(exec 3<>/dev/tcp/127.0.0.1/%s) 2>&1; echo devtcp_rc=$?\n", port)
	script.WriteString(`getent hosts example.com; echo "dns_rc=$?"
getent hosts localhost >/dev/null; echo "localhost_rc=$?"
echo "ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "route=$(tail -n +2 /proc/net/route | wc -l)"
`)
	r := escSh(t, script.String())
	kv := escKV(r.stdout)
	for i, tg := range targets {
		want := "ECONNREFUSED" // the namespace's own lo has no listener there
		if hostIP != "" && strings.HasPrefix(tg[1], hostIP+":") {
			want = "ENETUNREACH" // no interface but lo, no route
		}
		if got := kv[fmt.Sprintf("t%d", i)]; got != want {
			t.Errorf("sandbox %s %s: %q, want %s", tg[0], tg[1], got, want)
		}
	}
	if kv["udp"] != "ENETUNREACH" {
		t.Errorf("sandbox udp %s: %q, want ENETUNREACH", udpTarget, kv["udp"])
	}
	if kv["self"] != "OK" {
		t.Errorf("the sandbox's own loopback does not work (%q): the refusals above prove nothing", kv["self"])
	}
	mustContain(t, "bash /dev/tcp", r.stdout, "Connection refused")
	if kv["dns_rc"] != "2" || kv["localhost_rc"] != "0" {
		t.Errorf("getent: example.com exit %q (want 2: not found), localhost exit %q (want 0)", kv["dns_rc"], kv["localhost_rc"])
	}
	if kv["ifaces"] != "lo" || kv["route"] != "0" {
		t.Errorf("interfaces in the sandbox %q (want only lo), %s IPv4 routes (want 0)", kv["ifaces"], kv["route"])
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the host's listeners accepted %d connection(s) from the sandbox", n)
	}

	// Control: unsandboxed, the same user reaches every one of them.
	for _, tg := range targets {
		h := escHost(t, tg[0], tg[1])
		mustContain(t, "host control "+tg[0]+" "+tg[1], h.stdout, tg[0]+"=OK")
	}
	if hostRoute {
		mustContain(t, "host control udp", escHost(t, "udp", udpTarget).stdout, "udp=OK")
	} else {
		t.Logf("note: the host has no default route either; the UDP check shows only the sandbox's answer")
	}
	waitFor(t, 5*time.Second, "the host control's connections to be accepted", func() bool {
		return accepted.Load() == int64(len(targets))
	})
	escHealthy(t, daemon)
}

// ---------------------------------------------------------------------------
// System calls

// TestEscapeSyscalls makes each system call the safe_bash profile denies, in the
// sandbox and (the control) unsandboxed as the same user. The sandbox must get
// exactly the profile's answer. Where the host answers differently, the
// refusal is the sandbox's own doing; the rows marked control must differ (on a
// Debian kernel the call works there, or fails later, on its arguments).
func TestEscapeSyscalls(t *testing.T) {
	probe := escProbe(t)
	daemon := escDaemon(t)
	type row struct {
		name    string
		want    string
		control bool // the host must answer differently
	}
	rows := []row{
		{"io_uring_setup", "ENOSYS", true},
		{"io_uring_enter", "ENOSYS", true},
		{"io_uring_register", "ENOSYS", true},
		{"keyctl", "ENOSYS", true},
		{"add_key", "ENOSYS", true},
		{"request_key", "ENOSYS", true},
		{"bpf", "EPERM", true},
		{"perf_event_open", "EPERM", true},
		{"userfaultfd", "EPERM", true},
		{"ptrace_traceme", "EPERM", true},
		{"ptrace_attach_pid1", "EPERM", false},
		{"ptrace_attach_child", "EPERM", true},
		{"process_vm_readv", "EPERM", true},
		{"process_vm_writev", "EPERM", true},
		{"kcmp", "EPERM", true},
		{"pidfd_open", "OK", false},
		{"pidfd_getfd", "EPERM", true},
		{"process_madvise", "EPERM", false},
		{"init_module", "EPERM", false},
		{"finit_module", "EPERM", false},
		{"delete_module", "EPERM", false},
		{"kexec_load", "EPERM", false},
		{"kexec_file_load", "EPERM", false},
		{"reboot", "EPERM", false},
		{"swapon", "EPERM", false},
		{"acct", "EPERM", false},
		{"syslog", "EPERM", false},
		{"settimeofday", "EPERM", false},
		{"clock_settime", "EPERM", true},
		{"adjtimex", "EPERM", true},
		{"mount_tmpfs", "EPERM", false},
		{"mount_badptr", "EPERM", true},
		{"umount2_badptr", "EPERM", true},
		{"pivot_root", "EPERM", false},
		{"open_tree", "EPERM", true},
		{"fsopen", "EPERM", false},
		{"fspick", "EPERM", false},
		{"move_mount", "EPERM", false},
		{"mount_setattr", "EPERM", true},
		{"name_to_handle_at", "ENOSYS", true},
		{"open_by_handle_at", "EPERM", false},
		{"unshare_none", "EPERM", true},
		{"unshare_newuser", "EPERM", true},
		{"setns", "EPERM", true},
		{"clone3", "ENOSYS", true},
		{"clone_newuser", "EPERM", true},
		{"clone_newuser_newnet", "EPERM", true},
		{"clone_newns", "EPERM", false},
		{"clone_newnet", "EPERM", false},
		{"clone_newpid", "EPERM", false},
		{"clone_newipc", "EPERM", false},
		{"clone_newuts", "EPERM", false},
		{"clone_newcgroup", "EPERM", false},
		{"socket_unix", "OK", false},
		{"socket_inet", "OK", false},
		{"socket_inet6", "OK", false},
		{"socket_netlink", "EPERM", true},
		{"socket_packet", "EPERM", false},
		{"socket_packet_badtype", "EPERM", true},
		{"socket_raw_icmp", "EPERM", false},
		{"socket_raw_badproto", "EPERM", true},
		{"socket_inet_sockpacket", "EPERM", false},
		{"socket_vsock", "EPERM", true},
		{"socket_alg", "EPERM", true},
		{"socket_unspec", "EPERM", true},
		{"personality_no_aslr", "EPERM", true},
		{"personality_linux", "OK", false},
	}
	if runtime.GOARCH == "amd64" {
		rows = append(rows,
			row{"iopl", "EPERM", false},
			row{"modify_ldt", "EPERM", true},
			// A call through the x32 ABI is not in the filter's
			// architectures: the process is killed, whatever the kernel
			// would have said.
			row{"x32_getpid", "SIGSYS", true},
		)
	}
	r := escSh(t, probe+" sys")
	mustCode(t, r, 0)
	h := escHost(t, "sys")
	mustCode(t, h, 0)
	in, out := escKV(r.stdout), escKV(h.stdout)
	var same []string
	for _, row := range rows {
		got, ok := in[row.name]
		switch {
		case !ok:
			t.Errorf("%s: no answer from the probe in the sandbox:\n%s", row.name, r.stdout)
		case got != row.want:
			t.Errorf("%s in the sandbox: %s, want %s (host: %s)", row.name, got, row.want, out[row.name])
		case row.control && out[row.name] == got:
			t.Errorf("%s: the host answers %s too, so this does not show the sandbox refused it", row.name, got)
		case out[row.name] == got && got != "OK":
			same = append(same, row.name+"="+got)
		}
	}
	t.Logf("refused unsandboxed too (kernel permission checks; the profile is a second layer): %s", strings.Join(same, " "))
	// The profile allows the query (0xffffffff) and PER_LINUX32 (8), but the
	// daemon's unit has LockPersonality=yes, whose filter every sandbox inherits:
	// it refuses every value but the current one.
	t.Logf("personality(0xffffffff) %s, personality(PER_LINUX32) %s in the sandbox (LockPersonality=yes of contextd.service)", in["personality_query"], in["personality_linux32"])

	// The same attacks with the everyday tools.
	tools := escSh(t, `unshare -U true 2>&1; echo "unshare_U=$?"
unshare -r id 2>&1; echo "unshare_r=$?"
unshare -m true 2>&1; echo "unshare_m=$?"
nsenter -t 1 -U -m true 2>&1; echo "nsenter=$?"
mkdir -p /tmp/m && mount -t tmpfs x /tmp/m 2>&1; echo "mount=$?"
hostname evil 2>&1; echo "hostname=$?"
`)
	kv := escKV(tools.stdout)
	for _, k := range []string{"unshare_U", "unshare_r", "unshare_m", "nsenter", "mount", "hostname"} {
		if kv[k] == "0" || kv[k] == "" {
			t.Errorf("%s worked in the sandbox (exit %q):\n%s", k, kv[k], tools.stdout)
		}
	}
	mustContain(t, "unshare in the sandbox", tools.stdout, "unshare failed: Operation not permitted")
	if strings.Contains(tools.stdout, "uid=0") {
		t.Errorf("unshare -r gave root in the sandbox:\n%s", tools.stdout)
	}
	// Control: on the host the user may create user namespaces.
	hc := userSh(t, "unshare -U true && unshare -r id -u")
	mustCode(t, hc, 0)
	if hc.stdout != "0\n" {
		t.Errorf("host control: unshare -r id -u printed %q, want 0", hc.stdout)
	}
	escHealthy(t, daemon)
}

// ---------------------------------------------------------------------------
// Processes

// TestEscapeHostProcesses: the sandbox sees only its own processes; the
// daemon's and the user manager's PIDs do not exist inside, so killing them (or
// everything, kill -1) fails there, while the host shows them to the same user.
func TestEscapeHostProcesses(t *testing.T) {
	daemon := escDaemon(t)
	mgr, err := exec.Command("bash", env.usermgr, "status", testUser).Output()
	if err != nil {
		t.Fatalf("usermgr status: %v", err)
	}
	manager, _ := strconv.Atoi(strings.TrimSpace(string(mgr)))
	if manager == 0 {
		t.Fatalf("no user manager pid: %q", mgr)
	}
	// Control: on the host, the user sees (and could signal) both.
	host := userSh(t, fmt.Sprintf("kill -0 %d && kill -0 %d && ps -e -o comm=", daemon, manager))
	mustCode(t, host, 0)
	mustContain(t, "host process list", host.stdout, "systemd", "contextd")

	r := escSh(t, fmt.Sprintf(`ls /proc > /tmp/procs; echo "procs=$(grep -cE '^[0-9]+$' /tmp/procs)"
echo "pid1=$(cat /proc/1/comm)"
echo "comms=$(ps -e -o comm= | sort -u | tr '\n' ' ')"
echo "nspid=$(grep NSpid /proc/self/status | cut -f2-)"
kill -9 %[1]d; echo "kill_daemon=$?"
kill -9 %[2]d; echo "kill_manager=$?"
kill -9 -1; echo "kill_all=$?"
`, daemon, manager))
	kv := escKV(r.stdout)
	if n, _ := strconv.Atoi(kv["procs"]); n < 2 || n > 3 { // the init, the shell and ls
		t.Errorf("the sandbox's /proc shows %q processes, want only its own few:\n%s", kv["procs"], r.stdout)
	}
	if kv["pid1"] != "contextd-init" {
		t.Errorf("PID 1 in the sandbox is %q, want the sandbox's own init", kv["pid1"])
	}
	for _, c := range strings.Fields(kv["comms"]) {
		if c != "contextd-init" && c != "bash" && c != "ps" && c != "sort" && c != "tr" {
			t.Errorf("process %q visible in the sandbox (all: %s)", c, kv["comms"])
		}
	}
	if strings.Contains(kv["nspid"], "\t") || strings.Contains(kv["nspid"], " ") {
		t.Errorf("the sandbox sees more than one PID level: NSpid %q", kv["nspid"])
	}
	mustContain(t, "kill of the daemon's pid", r.stdout, fmt.Sprintf("kill: (%d) - No such process", daemon), fmt.Sprintf("kill: (%d) - No such process", manager))
	if kv["kill_daemon"] != "1" || kv["kill_manager"] != "1" {
		t.Errorf("kill from the sandbox: daemon %q, manager %q, want 1 (failed)", kv["kill_daemon"], kv["kill_manager"])
	}
	if exec.Command("kill", "-0", strconv.Itoa(manager)).Run() != nil {
		t.Fatal("the user manager died")
	}
	escHealthy(t, daemon)
}

// TestEscapeDaemonize: processes that double-fork, change session, ignore
// SIGHUP/SIGTERM or are disowned are alive during the call and gone on the host
// as soon as it ends (they are in the call's PID namespace and scope).
func TestEscapeDaemonize(t *testing.T) {
	daemon := escDaemon(t)
	r := escSh(t, `setsid sh -c 'sleep 307 &'
(trap '' HUP TERM INT; exec -a ctxd-hider sleep 308) &
nohup sleep 309 >/dev/null 2>&1 &
disown -a
for i in $(seq 300); do
	[ "$(ps -e -o args= | grep -cE '^(sleep 30[79]|ctxd-hider 308)$')" -ge 3 ] && break
	sleep 0.1
done
ps -e -o args= | grep -E '^(sleep 30[79]|ctxd-hider 308)$' | sort`)
	mustCode(t, r, 0)
	mustContain(t, "processes alive during the call", r.stdout, "sleep 307\n", "ctxd-hider 308\n", "sleep 309\n")
	escGone(t, "daemonized processes after the call", "sleep 307", "ctxd-hider 308", "sleep 309")
	escHealthy(t, daemon)
}

// TestEscapeOutliveTheAnswer: the call is answered only once nothing it
// started is left, so nothing can act on the workspace after the daemon has
// checked it (git guard, nested configuration) and answered. Processes that
// detach in every way are gone the moment the call returns (no waiting),
// and writers that wait before writing never write.
func TestEscapeOutliveTheAnswer(t *testing.T) {
	daemon := escDaemon(t)
	late := fmt.Sprintf("late-%d", time.Now().UnixNano())
	r := escSh(t, `setsid sh -c 'sleep 0.3; echo x > `+late+`.a' </dev/null >/dev/null 2>&1 &
(trap '' HUP TERM INT; exec -a ctxd-late-writer sh -c 'sleep 0.3; echo x > `+late+`.b') </dev/null >/dev/null 2>&1 &
nohup sh -c 'sleep 0.3; echo x > `+late+`.c' >/dev/null 2>&1 &
setsid sleep 311 </dev/null >/dev/null 2>&1 &
disown -a
echo started`)
	mustCode(t, r, 0)
	mustContain(t, "the call", r.stdout, "started")
	// At once: no polling, the call's answer came after they were reaped.
	for _, p := range escUserProcs() {
		if p.cmdline == "sleep 311" || strings.HasPrefix(p.cmdline, "ctxd-late-writer") {
			t.Errorf("%d %q is still running when the call has returned (%s)", p.pid, p.cmdline, strings.TrimSpace(p.cgroup))
		}
	}
	// Well past the writers' sleep: had any outlived the answer, its file
	// would be there.
	time.Sleep(1500 * time.Millisecond)
	for _, suffix := range []string{".a", ".b", ".c"} {
		if _, err := os.Lstat(filepath.Join(env.project, late+suffix)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written after the call returned (%v)", late+suffix, err)
		}
	}
	escHealthy(t, daemon)
}

// TestEscapeTimeout: a command that ignores SIGTERM and outlives its timeout is
// killed, with all it started, and reported as a timeout.
func TestEscapeTimeout(t *testing.T) {
	daemon := escDaemon(t)
	// What a call costs here besides its command (the harness's runAs, the
	// proxy, the sandbox), so that the bound below is on the timeout alone.
	base := escSh(t, "true")
	mustCode(t, base, 0)
	r := escSh(t, `trap '' TERM INT HUP; echo begun; sleep 61 & sleep 62`, "--timeout", "2")
	mustCode(t, r, 124)
	mustContain(t, "stdout", r.stdout, "begun")
	mustContain(t, "stderr", r.stderr, "CTXD-E030")
	if r.elapsed > base.elapsed+8*time.Second {
		t.Errorf("a 2 s timeout took %s (a call of true %s)", r.elapsed, base.elapsed)
	}
	escGone(t, "after the timeout", "sleep 61", "sleep 62")
	escHealthy(t, daemon)
}

// TestEscapeForkBomb: a fork bomb is held at TasksMax (the kernel's
// pids.events counts the refused forks), the machine and the daemon stay
// responsive during it, the call ends at its timeout, and nothing of it remains.
func TestEscapeForkBomb(t *testing.T) {
	daemon := escDaemon(t)
	// The host's fork+exec of true before the bomb: the bound during it is
	// relative to what this machine takes anyway.
	var baseline time.Duration
	for range 5 {
		start := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		baseline = max(baseline, time.Since(start))
	}
	before := map[int]bool{}
	for _, p := range escUserProcs() {
		before[p.pid] = true
	}
	// Long enough that the concurrent call below is made, and answered,
	// while the bomb still runs.
	const bombTimeout = 15
	c := escStart(t, "safe_bash", "--timeout", strconv.Itoa(bombTimeout), "echo bombing; :(){ :|:& };:; sleep 60")
	c.waitLine(t, "bombing", 15*time.Second)

	// The bomb's scope: that of a new shell of the user (one that was not
	// there before the call) in a contextd-safe_bash-* scope.
	var cg, unit string
	waitFor(t, 5*time.Second, "the fork bomb's scope", func() bool {
		for _, p := range escUserProcs() {
			if u := escScopeOf(p.cgroup); !before[p.pid] && p.comm == "bash" && strings.HasPrefix(u, "contextd-safe_bash-") {
				unit = u
				cg = escShow(t, u, "ControlGroup")["ControlGroup"]
				return cg != ""
			}
		}
		return false
	})
	bombTasks := func() int {
		n, err := strconv.Atoi(escReadTrim(escCgroupFile("pids", cg, "pids.current")))
		if err != nil {
			return 0 // the scope's cgroup is gone
		}
		return n
	}
	maxTasks, worst := 0, time.Duration(0)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		maxTasks = max(maxTasks, bombTasks())
		start := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			t.Fatalf("the host cannot start a process during the fork bomb: %v", err)
		}
		worst = max(worst, time.Since(start))
	}
	events := escReadTrim(escCgroupFile("pids", cg, "pids.events"))
	alive := tool(t, "safe_bash", "", "echo alive")
	// The bomb still runs once that call is answered: it was served during
	// the bomb, not after it.
	bombAfter := bombTasks()
	res := c.wait(t, time.Duration(bombTimeout+30)*time.Second)

	t.Logf("fork bomb: at most %d tasks in %s (%s), pids.events %q, host fork+exec worst %s (before the bomb %s), a concurrent call took %s with %d tasks of the bomb left, the bomb's call ended after %s with exit %d",
		maxTasks, cg, unit, events, worst, baseline, alive.elapsed, bombAfter, res.elapsed, res.code)
	if maxTasks > 512 {
		t.Errorf("%d tasks in the scope, above TasksMax 512", maxTasks)
	}
	var refused int
	if _, err := fmt.Sscanf(events, "max %d", &refused); err != nil || refused == 0 {
		t.Errorf("pids.events of the scope is %q: no fork was refused at TasksMax (tasks seen: %d)", events, maxTasks)
	}
	if worst > max(2*time.Second, 20*baseline) {
		t.Errorf("the host took %s to run true during the fork bomb (%s before it)", worst, baseline)
	}
	if alive.code != 0 || alive.stdout != "alive\n" {
		t.Errorf("the daemon did not serve another call during the fork bomb: %s (%s)", alive, alive.elapsed)
	}
	if bombAfter == 0 {
		t.Errorf("the concurrent call (%s) was answered only after the fork bomb's scope had ended", alive.elapsed)
	}
	if res.code != 124 || !strings.Contains(res.stderr, "CTXD-E030") {
		t.Errorf("the fork bomb's call: want the timeout (124, CTXD-E030), got %s", res)
	}
	// Nothing of the bomb is left: no new process of the user in contextd.slice,
	// and no new shell.
	waitFor(t, 15*time.Second, "the fork bomb's processes to be gone", func() bool {
		for _, p := range escUserProcs() {
			if !before[p.pid] && (strings.Contains(p.cgroup, "contextd.slice") || p.comm == "bash" || p.comm == "sleep") {
				return false
			}
		}
		return true
	})
	escHealthy(t, daemon)
}

// TestEscapeMemoryBomb: allocating 3 GiB is stopped by MemoryMax (1 GiB) with
// SIGKILL after about 1 GiB, while the same allocation by the same user
// unsandboxed succeeds (the control: it was the limit, not the machine).
func TestEscapeMemoryBomb(t *testing.T) {
	probe := escProbe(t)
	daemon := escDaemon(t)
	r := escSh(t, probe+" mem 3072; echo rc=$?", "--timeout", "60")
	kv := escKV(r.stdout)
	if kv["rc"] != "137" || strings.Contains(r.stdout, "mem=DONE") {
		t.Fatalf("the memory bomb was not killed (want rc=137, SIGKILL):\n%s", r)
	}
	last := 0
	for _, m := range regexp.MustCompile(`allocated (\d+) MiB`).FindAllStringSubmatch(r.stdout, -1) {
		last, _ = strconv.Atoi(m[1])
	}
	if last < 512 || last >= 1024 {
		t.Errorf("the bomb got to %d MiB before it was killed, want between 512 MiB and the 1 GiB limit", last)
	}
	t.Logf("memory bomb killed after %d MiB", last)
	escHealthy(t, daemon)

	// More than the limit, and no more than that: a small machine must hold it.
	h := escHost(t, "mem", "1152")
	mustContain(t, "host control: 1152 MiB unsandboxed", h.stdout, "mem=DONE")
}

// ---------------------------------------------------------------------------
// The daemon, its binary and its socket

// TestEscapeDaemonReach: from inside, /proc/self/exe and the shell's exe lead
// to the command's own programs, the sandbox init (PID 1) is closed to the
// command's /proc, the shell holds only stdio, no
// unix socket of the host is in the tree, the daemon's binary and socket are not
// there, the user's credentials and bus address are not in the environment, and
// a proxy taken into the sandbox cannot reach the daemon.
func TestEscapeDaemonReach(t *testing.T) {
	probe := escProbe(t)
	daemon := escDaemon(t)
	uid, gid := escIDs(t)
	proxy := filepath.Join(env.project, ".escape", "contextd-proxy")
	b, err := os.ReadFile(env.bin + "/contextd-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(proxy, b, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(proxy, uid, gid)
	sock := filepath.Join(env.runtime, "contextd", "contextd.sock")

	script := fmt.Sprintf(`echo "self_exe=$(readlink /proc/self/exe)"
echo "shell_exe=$(readlink /proc/$$/exe)"
ls -l /proc/$$/fd > /tmp/fds
echo "fds=$(awk 'NR > 1 {print $9}' /tmp/fds | sort -n | tr '\n' ' ' | sed 's/ $//')"
echo "fd_links=$(awk 'NR > 1 {print $11}' /tmp/fds | tr '\n' ' ')"
echo "env=$(tr '\0' '\n' < /proc/$$/environ | cut -d= -f1 | sort | tr '\n' ' ')"
readlink /proc/1/exe >/dev/null 2>&1; echo "init_exe_rc=$?"
ls /proc/1/fd >/dev/null 2>&1; echo "init_fd_rc=$?"
cat /proc/1/environ >/dev/null 2>&1; echo "init_environ_rc=$?"
head -c 16 /proc/1/mem >/dev/null 2>&1; echo "init_mem_rc=$?"
echo "sockets=$(find / \( -path /proc -o -path /sys \) -prune -o -type s -print 2>/dev/null | tr '\n' ' ')"
echo "daemon_bin=$(ls %[1]s/contextd 2>&1 >/dev/null | grep -c 'No such file')"
echo "connect_$(%[2]s unix %[3]s)"
echo "connect_bus_$(%[2]s unix %[4]s/bus)"
CONTEXTD_SOCKET=%[3]s XDG_RUNTIME_DIR=%[4]s ./.escape/contextd-proxy safe_bash 'echo nested' 2>&1; echo "nested_rc=$?"
.claude/tools/safe_bash/safe_bash 'echo nested-link' 2>&1; echo "link_rc=$?"
`, env.bin, probe, sock, env.runtime)
	link := filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash")
	r := runAs(t, "", []string{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz"},
		"", link, script)
	kv := escKV(r.stdout)
	if kv["self_exe"] != "/usr/bin/readlink" || kv["shell_exe"] != "/usr/bin/bash" {
		t.Errorf("/proc/self/exe %q, the shell's exe %q: want the command's own programs", kv["self_exe"], kv["shell_exe"])
	}
	// PID 1 is contextd's sandbox init (it scrubs the shell's output); it
	// is not dumpable, so the command can neither follow its exe to contextd
	// nor read its descriptors, environment or memory.
	for _, k := range []string{"init_exe_rc", "init_fd_rc", "init_environ_rc", "init_mem_rc"} {
		if kv[k] == "0" || kv[k] == "" {
			t.Errorf("%s=%q: the command reached into the sandbox init", k, kv[k])
		}
	}
	if kv["fds"] != "0 1 2" {
		t.Errorf("the sandbox's shell holds descriptors %q, want only 0 1 2", kv["fds"])
	}
	if strings.Contains(kv["fd_links"], "socket:") || strings.Contains(kv["fd_links"], "contextd") {
		t.Errorf("the shell's descriptors lead to %q", kv["fd_links"])
	}
	for _, bad := range []string{"XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"} {
		if strings.Contains(kv["env"], bad) {
			t.Errorf("%s reached the sandbox's environment: %s", bad, kv["env"])
		}
	}
	if kv["sockets"] != "" {
		t.Errorf("unix sockets in the sandbox's tree: %s", kv["sockets"])
	}
	if kv["daemon_bin"] != "1" {
		t.Errorf("the daemon's binary %s/contextd is visible in the sandbox", env.bin)
	}
	if kv["connect_unix"] != "ENOENT" || kv["connect_bus_unix"] != "ENOENT" {
		t.Errorf("connect to the daemon's socket: %q, to the user bus: %q; want ENOENT", kv["connect_unix"], kv["connect_bus_unix"])
	}
	if kv["nested_rc"] != "69" || !strings.Contains(r.stdout, "CTXD-E010") || strings.Contains(r.stdout, "\nnested\n") {
		t.Errorf("a proxy inside the sandbox reached the daemon (want exit 69, CTXD-E010):\n%s", r.stdout)
	}
	if kv["link_rc"] == "0" || strings.Contains(r.stdout, "\nnested-link\n") {
		t.Errorf("the tool symlink worked from inside the sandbox:\n%s", r.stdout)
	}
	escHealthy(t, daemon)
}

// TestEscapeToolHijack: the agent's own tools live in the workspace
// (.claude/tools/*/TOOL -> contextd-proxy), and the agent runs them unsandboxed
// on the host. A command that could replace one would run its payload outside
// the sandbox on the agent's next call; .claude must be read-only inside, for
// safe_bash and the file tools alike.
func TestEscapeToolHijack(t *testing.T) {
	daemon := escDaemon(t)
	link := filepath.Join(env.project, ".claude/tools/safe_bash/safe_bash")
	orig, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Undo whatever got through, so that the later tests have their tools.
		userSh(t, fmt.Sprintf(`cd ~/proj && if [ -d .claude-moved ]; then rm -rf .claude && mv .claude-moved .claude; fi
rm -f .claude/settings.json && ln -sfn %s .claude/tools/safe_bash/safe_bash`, orig))
	})
	r := escSh(t, `f=.claude/tools/safe_bash/safe_bash
rm -f $f 2>&1; printf '#!/bin/sh\necho HIJACKED\n' > $f; chmod +x $f 2>&1
echo '{"permissions":{"allow":["Bash"]}}' > .claude/settings.json
mv .claude .claude-moved 2>&1; echo "mv_rc=$?"`)
	if now, err := os.Readlink(link); err != nil || now != orig {
		t.Errorf("safe_bash replaced the agent's tool %s (now %q, %v):\n%s", link, now, err, r.stdout)
	}
	mustContain(t, "replacing the tool", r.stdout, "Read-only file system")
	if _, err := os.Lstat(filepath.Join(env.project, ".claude/settings.json")); err == nil {
		t.Errorf("safe_bash wrote .claude/settings.json")
	}
	if _, err := os.Lstat(filepath.Join(env.project, ".claude")); err != nil {
		t.Errorf("safe_bash moved .claude away: %v", err)
	}
	// The next call still goes to the sandbox.
	next := tool(t, "safe_bash", "", "test -e ~/.ssh && echo host || echo sandboxed")
	mustContain(t, "the next call", next.stdout, "sandboxed")

	// The file tools too.
	for _, p := range []string{".claude/settings.json", ".claude/tools/safe_bash/TOOL.md"} {
		w := tool(t, "safe_write", "", p, "--content", `{"permissions":{"allow":["Bash"]}}`)
		if w.code != 77 || !strings.Contains(w.stderr, "CTXD-E051") {
			t.Errorf("safe_write %s: want exit 77 with CTXD-E051 (refused by name: agent configuration), got %s", p, w)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(env.project, ".claude/tools/safe_bash/TOOL.md")); strings.Contains(string(b), "permissions") {
		t.Errorf("safe_write replaced TOOL.md")
	}
	// Reading them stays possible.
	mustCode(t, tool(t, "safe_read", "", ".claude/tools/safe_bash/TOOL.md"), 0)
	escHealthy(t, daemon)
}

// ---------------------------------------------------------------------------
// File tools

// escQuote quotes s for bash.
func escQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// escBatch makes many tool calls through the real symlinks from one shell of the
// test user (a runAs costs ~0.3 s; a call ~30 ms), and returns their results.
func escBatch(t *testing.T, calls [][]string) []result {
	t.Helper()
	var sc strings.Builder
	sc.WriteString(`cd ~/proj || exit 1
o=$(mktemp) e=$(mktemp)
run() { local i=$1; shift; local s=$(date +%s%N); "$@" >"$o" 2>"$e" </dev/null; local rc=$?; local d=$(( ($(date +%s%N) - s) / 1000000 ))
	local ob=$(base64 -w0 <"$o") eb=$(base64 -w0 <"$e"); echo "CALL $i $rc $d ${ob:--} ${eb:--}"; }
`)
	for i, c := range calls {
		fmt.Fprintf(&sc, "run %d .claude/tools/%s/%s", i, c[0], c[0])
		for _, a := range c[1:] {
			sc.WriteString(" " + escQuote(a))
		}
		sc.WriteString("\n")
	}
	sc.WriteString(`rm -f "$o" "$e"` + "\n")
	r := userSh(t, sc.String())
	mustCode(t, r, 0)
	out := make([]result, len(calls))
	seen := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || f[0] != "CALL" {
			continue
		}
		i, _ := strconv.Atoi(f[1])
		code, _ := strconv.Atoi(f[2])
		ms, _ := strconv.Atoi(f[3])
		dec := func(s string) string {
			if s == "-" {
				return ""
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("escBatch: %v", err)
			}
			return string(b)
		}
		out[i] = result{stdout: dec(f[4]), stderr: dec(f[5]), code: code, elapsed: time.Duration(ms) * time.Millisecond}
		seen++
	}
	if seen != len(calls) {
		t.Fatalf("escBatch: %d results for %d calls:\n%s", seen, len(calls), r)
	}
	return out
}

// TestEscapeFileTools: safe_read and safe_write refuse `..`, absolute paths,
// symlinks (absolute, relative, through /proc magic links) out of the workspace,
// FIFOs (without hanging) and directories; a path swapped between a file and
// symlinks to ~/.bashrc during the calls never yields or changes .bashrc; and
// nothing is written outside.
func TestEscapeFileTools(t *testing.T) {
	escProbe(t)
	daemon := escDaemon(t)
	marker := "ctxd-escape-ssh-" + escRandom()
	rcMarker := "ctxd-escape-bashrc-" + escRandom()
	mustCode(t, userSh(t, fmt.Sprintf(`mkdir -p -m 0700 ~/.ssh && printf '%%s\n' %s > ~/.ssh/id_rsa && chmod 600 ~/.ssh/id_rsa
printf '# %%s\n' %s >> ~/.bashrc
cd ~/proj && rm -rf esc && mkdir -p esc/race && cd esc
ln -s ~/.ssh/id_rsa key-abs
ln -s ../../.ssh/id_rsa key-rel
ln -s /proc/self/root%s/.ssh/id_rsa key-magic
ln -s ~/.ssh ssh-dir
ln -s /dev/zero zero
ln -s ../../.ssh/authorized_keys new-key
mkfifo fifo
printf 'workspace-content\n' > race/f`, marker, rcMarker, env.home)), 0)
	t.Cleanup(func() { userSh(t, fmt.Sprintf("sed -i '/%s/d' ~/.bashrc; rm -rf ~/proj/esc", rcMarker)) })
	sshBefore := escSHA(t, env.home+"/.ssh/id_rsa")
	rcBefore := escSHA(t, env.home+"/.bashrc")
	homeBefore := userSh(t, "ls -A ~ ~/.ssh").stdout

	type fcase struct {
		path string
		code int
		err  string
	}
	cases := []fcase{
		{"../.ssh/id_rsa", 77, "CTXD-E020"},
		{"esc/../../.ssh/id_rsa", 77, "CTXD-E020"},
		{env.home + "/.ssh/id_rsa", 77, "CTXD-E020"},
		{"/etc/passwd", 77, "CTXD-E020"},
		{"/dev/zero", 77, "CTXD-E020"},
		{"esc/key-abs", 77, "CTXD-E020"},
		{"esc/key-rel", 77, "CTXD-E020"},
		{"esc/key-magic", 77, "CTXD-E020"},
		{"esc/ssh-dir/id_rsa", 77, "CTXD-E020"},
		{"esc/zero", 77, "CTXD-E020"},
		{"esc/fifo", 65, "CTXD-E022"},
		{"esc", 65, "CTXD-E022"},
	}
	writes := append(cases, fcase{"esc/new-key", 77, "CTXD-E020"})
	var calls [][]string
	for _, c := range cases {
		calls = append(calls, []string{"safe_read", c.path})
	}
	for _, c := range writes {
		calls = append(calls, []string{"safe_write", c.path, "--content", "pwned-" + rcMarker + "\n"})
	}
	res := escBatch(t, calls)
	// "Quickly" (a FIFO must not hang a call) is against this machine's own
	// pace: the batch's median call.
	var times []time.Duration
	for _, r := range res {
		times = append(times, r.elapsed)
	}
	slices.Sort(times)
	quick := max(5*time.Second, 20*times[len(times)/2])
	for i, c := range append(cases, writes...) {
		r, what := res[i], calls[i][0]+" "+c.path
		if r.code != c.code || !strings.Contains(r.stderr, c.err) || strings.Contains(r.stdout, marker) || r.elapsed > quick {
			t.Errorf("%s: want exit %d with %s, within %s and without the secret; got %s (%s)", what, c.code, c.err, quick, r, r.elapsed)
		}
	}

	// The swap race: a process of the user swaps esc/race/f between a regular
	// file and symlinks to ~/.bashrc (relative and absolute), with atomic
	// renames, thousands of times a second, while the tools read and write it.
	swap := exec.Command("bash", env.usermgr, "run", testUser, "--", filepath.Join(env.project, escProbeRel), "swap",
		filepath.Join(env.project, "esc/race/f"), "workspace-content\n", "../../../.bashrc", env.home+"/.bashrc")
	if err := swap.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { swap.Process.Kill(); swap.Wait() })
	calls = calls[:0]
	const rounds = 50
	for i := 0; i < rounds; i++ {
		calls = append(calls, []string{"safe_read", "esc/race/f"},
			[]string{"safe_write", "esc/race/f", "--content", fmt.Sprintf("race-write-%d %s\n", i, rcMarker)})
	}
	res = escBatch(t, calls)
	swap.Process.Kill()
	swap.Wait()
	counts := map[string]int{}
	for i, r := range res {
		op := calls[i][0]
		switch {
		case strings.Contains(r.stdout, rcMarker) || strings.Contains(r.stdout, "bash"):
			t.Fatalf("%s returned ~/.bashrc through the swapped symlink:\n%s", op, r.stdout)
		case r.code == 0 && (op == "safe_write" || strings.Contains(r.stdout, "workspace-content") || strings.Contains(r.stdout, "race-write-")):
			counts[op+" ok"]++
		case r.code == 77 && strings.Contains(r.stderr, "CTXD-E020"):
			counts[op+" refused"]++
		default:
			t.Errorf("%s during the swap: %s", op, r)
		}
	}
	t.Logf("symlink swap race, %d rounds: %v", rounds, counts)
	if counts["safe_read refused"]+counts["safe_write refused"] == 0 {
		t.Errorf("the swap never showed the tools a symlink: the race proved nothing (%v)", counts)
	}

	if escSHA(t, env.home+"/.bashrc") != rcBefore {
		t.Errorf("~/.bashrc changed")
	}
	if escSHA(t, env.home+"/.ssh/id_rsa") != sshBefore {
		t.Errorf("~/.ssh/id_rsa changed")
	}
	if after := userSh(t, "ls -A ~ ~/.ssh").stdout; after != homeBefore {
		t.Errorf("files appeared or vanished outside the workspace:\nbefore:\n%s\nafter:\n%s", homeBefore, after)
	}
	if fi, err := os.Lstat(filepath.Join(env.project, "esc/fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	escHealthy(t, daemon)
}

// escProbeSource is escprobe's main.go (see the file comment).
const escProbeSource = `// escprobe makes the system calls of the escape suite and reports what the kernel
// (or the seccomp filter in front of it) answered, one "name=RESULT" per line:
// OK, an errno name (EPERM, ENOSYS, ...), or SIGSYS when the process was killed.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

var errnames = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.ESRCH: "ESRCH", syscall.EINTR: "EINTR",
	syscall.EBADF: "EBADF", syscall.EAGAIN: "EAGAIN", syscall.ENOMEM: "ENOMEM", syscall.EACCES: "EACCES",
	syscall.EFAULT: "EFAULT", syscall.EBUSY: "EBUSY", syscall.EEXIST: "EEXIST", syscall.ENOTDIR: "ENOTDIR",
	syscall.EINVAL: "EINVAL", syscall.ENOSPC: "ENOSPC", syscall.EROFS: "EROFS", syscall.ENOSYS: "ENOSYS",
	syscall.ENOKEY: "ENOKEY", syscall.EOVERFLOW: "EOVERFLOW", syscall.EAFNOSUPPORT: "EAFNOSUPPORT",
	syscall.EPROTONOSUPPORT: "EPROTONOSUPPORT", syscall.ESOCKTNOSUPPORT: "ESOCKTNOSUPPORT",
	syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ENETUNREACH: "ENETUNREACH",
	syscall.EHOSTUNREACH: "EHOSTUNREACH", syscall.ETIMEDOUT: "ETIMEDOUT", syscall.ENODEV: "ENODEV",
	syscall.ENXIO: "ENXIO", syscall.ENOTTY: "ENOTTY", syscall.E2BIG: "E2BIG", syscall.EPROTOTYPE: "EPROTOTYPE",
	syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL",
}

func ename(e syscall.Errno) string {
	if e == 0 {
		return "OK"
	}
	if n, ok := errnames[e]; ok {
		return n
	}
	return "errno" + strconv.Itoa(int(e))
}

// Numbers that differ between the architectures (the newer calls, 424 and up,
// are the same everywhere).
var amd64 = map[string]uintptr{
	"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
	"finit_module": 313, "init_module": 175, "delete_module": 176, "kexec_load": 246,
	"kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "perf_event_open": 298,
	"keyctl": 250, "add_key": 248, "request_key": 249, "mount": 165, "umount2": 166,
	"pivot_root": 155, "unshare": 272, "setns": 308, "personality": 135,
	"open_by_handle_at": 304, "name_to_handle_at": 303, "syslog": 103, "settimeofday": 164,
	"clock_settime": 227, "adjtimex": 159, "reboot": 169, "swapon": 167, "acct": 163,
	"iopl": 172, "modify_ldt": 154, "getpid": 39, "socket": 41,
}

var arm64 = map[string]uintptr{
	"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
	"finit_module": 273, "init_module": 105, "delete_module": 106, "kexec_load": 104,
	"kexec_file_load": 294, "bpf": 280, "userfaultfd": 282, "perf_event_open": 241,
	"keyctl": 219, "add_key": 217, "request_key": 218, "mount": 40, "umount2": 39,
	"pivot_root": 41, "unshare": 97, "setns": 268, "personality": 92,
	"open_by_handle_at": 265, "name_to_handle_at": 264, "syslog": 116, "settimeofday": 170,
	"clock_settime": 112, "adjtimex": 171, "reboot": 142, "swapon": 224, "acct": 89,
	"getpid": 172, "socket": 198,
}

var common = map[string]uintptr{
	"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
	"move_mount": 429, "fsopen": 430, "fspick": 433, "pidfd_open": 434, "clone3": 435,
	"pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442,
}

func nr(name string) uintptr {
	if n, ok := common[name]; ok {
		return n
	}
	tbl := amd64
	if runtime.GOARCH == "arm64" {
		tbl = arm64
	}
	n, ok := tbl[name]
	if !ok {
		fmt.Printf("probe-error=no number for %s on %s\n", name, runtime.GOARCH)
		os.Exit(3)
	}
	return n
}

func call(name string, a ...uintptr) (uintptr, syscall.Errno) {
	var v [6]uintptr
	copy(v[:], a)
	r, _, e := syscall.RawSyscall6(nr(name), v[0], v[1], v[2], v[3], v[4], v[5])
	return r, e
}

func str(s string) uintptr {
	b := append([]byte(s), 0)
	return uintptr(unsafe.Pointer(&b[0]))
}

func report(name string, e syscall.Errno) { fmt.Printf("%s=%s\n", name, ename(e)) }

func do(name, sys string, a ...uintptr) {
	_, e := call(sys, a...)
	report(name, e)
}

const bad = uintptr(8) // an address that is never mapped

// child re-executes the probe to make a call that may kill or trace the caller;
// the child prints its result, and a child killed by a signal is reported as such.
func child(name, mode string) {
	cmd := exec.Command("/proc/self/exe", mode)
	cmd.Env = []string{"GODEBUG=asyncpreemptoff=1"}
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case err == nil && len(out) > 0:
		fmt.Printf("%s=%s", name, out)
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled():
		fmt.Printf("%s=%s\n", name, sigName(ee.Sys().(syscall.WaitStatus).Signal()))
	default:
		fmt.Printf("%s=failed:%v:%q\n", name, err, out)
	}
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGSYS {
		return "SIGSYS"
	}
	return "signal" + strconv.Itoa(int(s))
}

// childResult prints e as the child's result and exits at once, with nothing
// else run in between (a traced child must not take signals).
func childResult(e syscall.Errno) {
	b := []byte(ename(e) + "\n")
	syscall.RawSyscall(syscall.SYS_WRITE, 1, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
}

// cloneWith runs /bin/true in new namespaces (Go uses clone(2) with the flags).
func cloneWith(name string, flags uintptr) {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	err := cmd.Run()
	var en syscall.Errno
	switch {
	case err == nil:
		fmt.Printf("%s=OK\n", name)
	case errors.As(err, &en):
		report(name, en)
	default:
		fmt.Printf("%s=failed:%v\n", name, err)
	}
}

func sock(name string, family, typ, proto uintptr) {
	fd, e := call("socket", family, typ, proto)
	if e == 0 {
		syscall.Close(int(fd))
	}
	report(name, e)
}

func syscalls() {
	pid := uintptr(os.Getpid())

	// io_uring
	var params [120]byte
	fd, e := call("io_uring_setup", 1, uintptr(unsafe.Pointer(&params[0])))
	if e == 0 {
		syscall.Close(int(fd))
	}
	report("io_uring_setup", e)
	do("io_uring_enter", "io_uring_enter", ^uintptr(0), 0, 0, 0, 0, 0)
	do("io_uring_register", "io_uring_register", ^uintptr(0), 0, 0, 0)

	// keyrings
	do("keyctl", "keyctl", 0 /* KEYCTL_GET_KEYRING_ID */, ^uintptr(1) /* process keyring (-2) */, 1)
	do("add_key", "add_key", str("user"), str("ctxd-escape"), str("x"), 1, ^uintptr(1))
	do("request_key", "request_key", str("user"), str("ctxd-escape-none"), 0, 0)

	// bpf, perf, userfaultfd
	// BPF_MAP_LOOKUP_ELEM with an unmapped attr: EFAULT from the kernel (6.1
	// refuses BPF_MAP_CREATE/BPF_PROG_LOAD with EPERM before reading anything
	// when unprivileged BPF is disabled, which would prove nothing).
	do("bpf", "bpf", 1, bad, 72)
	do("perf_event_open", "perf_event_open", bad, 0, ^uintptr(0), ^uintptr(0), 0)
	fd, e = call("userfaultfd", syscall.O_CLOEXEC|1 /* UFFD_USER_MODE_ONLY */)
	if e == 0 {
		syscall.Close(int(fd))
	}
	report("userfaultfd", e)

	// other processes
	child("ptrace_traceme", "traceme")
	do("ptrace_attach_pid1", "ptrace", 16 /* PTRACE_ATTACH */, 1, 0, 0)
	attachChild()
	do("process_vm_readv", "process_vm_readv", pid, 0, 0, 0, 0, 0)
	do("process_vm_writev", "process_vm_writev", pid, 0, 0, 0, 0, 0)
	do("kcmp", "kcmp", pid, pid, 1 /* KCMP_VM */, 0, 0)
	pidfd, e := call("pidfd_open", pid, 0)
	report("pidfd_open", e)
	if e == 0 {
		fd, e = call("pidfd_getfd", pidfd, 1, 0)
		if e == 0 {
			syscall.Close(int(fd))
		}
		report("pidfd_getfd", e)
		do("process_madvise", "process_madvise", pidfd, 0, 0, 20 /* MADV_COLD */, 0)
		syscall.Close(int(pidfd))
	}

	// kernel code and machine administration
	do("init_module", "init_module", 0, 0, str(""))
	do("finit_module", "finit_module", ^uintptr(0), str(""), 0)
	do("delete_module", "delete_module", str("ctxd_none"), 0)
	do("kexec_load", "kexec_load", 0, 0, 0, 0)
	do("kexec_file_load", "kexec_file_load", ^uintptr(0), ^uintptr(0), 0, 0, 0)
	do("reboot", "reboot", 0, 0, 0, 0)
	do("swapon", "swapon", str("/ctxd-none"), 0)
	do("acct", "acct", 0)
	do("syslog", "syslog", 10 /* SIZE_BUFFER */, 0, 0)
	do("settimeofday", "settimeofday", 0, 0)
	do("clock_settime", "clock_settime", 0, bad)
	var tx [208]byte // struct timex, modes 0: a query
	do("adjtimex", "adjtimex", uintptr(unsafe.Pointer(&tx[0])))
	if runtime.GOARCH == "amd64" {
		do("iopl", "iopl", 0)
		var ldt [16]byte
		do("modify_ldt", "modify_ldt", 0, uintptr(unsafe.Pointer(&ldt[0])), 16)
	}

	// mounts
	do("mount_tmpfs", "mount", str("x"), str("/tmp"), str("tmpfs"), 0, 0)
	do("mount_badptr", "mount", str("x"), str("/tmp"), bad, 0, 0)
	do("umount2_badptr", "umount2", bad, 0)
	do("pivot_root", "pivot_root", str("."), str("."))
	fd, e = call("open_tree", ^uintptr(99) /* AT_FDCWD */, str("/"), syscall.O_CLOEXEC)
	if e == 0 {
		syscall.Close(int(fd))
	}
	report("open_tree", e)
	do("fsopen", "fsopen", str("tmpfs"), 0)
	do("fspick", "fspick", ^uintptr(99), str("/"), 0)
	do("move_mount", "move_mount", ^uintptr(0), str(""), ^uintptr(0), str(""), 0)
	do("mount_setattr", "mount_setattr", ^uintptr(0), str(""), 0, 0, 0)
	var fh [8 + 128]byte // struct file_handle, handle_bytes 0
	var mnt int32
	do("name_to_handle_at", "name_to_handle_at", ^uintptr(99), str("/"), uintptr(unsafe.Pointer(&fh[0])), uintptr(unsafe.Pointer(&mnt)), 0)
	do("open_by_handle_at", "open_by_handle_at", ^uintptr(99), uintptr(unsafe.Pointer(&fh[0])), 0)

	// namespaces
	do("unshare_none", "unshare", 0)
	do("unshare_newuser", "unshare", syscall.CLONE_NEWUSER)
	do("setns", "setns", ^uintptr(0), 0)
	do("clone3", "clone3", 0, 88)
	cloneWith("clone_newuser", syscall.CLONE_NEWUSER)
	cloneWith("clone_newuser_newnet", syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET)
	cloneWith("clone_newns", syscall.CLONE_NEWNS)
	cloneWith("clone_newnet", syscall.CLONE_NEWNET)
	cloneWith("clone_newpid", syscall.CLONE_NEWPID)
	cloneWith("clone_newipc", syscall.CLONE_NEWIPC)
	cloneWith("clone_newuts", syscall.CLONE_NEWUTS)
	cloneWith("clone_newcgroup", 0x02000000)

	// sockets
	sock("socket_unix", syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	sock("socket_inet", syscall.AF_INET, syscall.SOCK_STREAM, 0)
	sock("socket_inet6", syscall.AF_INET6, syscall.SOCK_STREAM, 0)
	sock("socket_netlink", syscall.AF_NETLINK, syscall.SOCK_RAW, 0 /* NETLINK_ROUTE */)
	sock("socket_packet", syscall.AF_PACKET, syscall.SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */)
	sock("socket_packet_badtype", syscall.AF_PACKET, 99, 0)
	sock("socket_raw_icmp", syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	sock("socket_raw_badproto", syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 300)
	sock("socket_inet_sockpacket", syscall.AF_INET, syscall.SOCK_PACKET, 0x0300)
	sock("socket_vsock", 40, syscall.SOCK_STREAM, 0)
	sock("socket_alg", 38, syscall.SOCK_SEQPACKET, 0)
	sock("socket_unspec", syscall.AF_UNSPEC, syscall.SOCK_DGRAM, 0)

	// personality
	_, e = call("personality", 0x0040000 /* ADDR_NO_RANDOMIZE */)
	report("personality_no_aslr", e)
	do("personality_linux", "personality", 0)
	do("personality_query", "personality", 0xffffffff)
	do("personality_linux32", "personality", 8)

	// other ABIs
	if runtime.GOARCH == "amd64" {
		child("x32_getpid", "x32")
	}
}

// attachChild tries PTRACE_ATTACH on a child of our own (which the kernel allows
// without any privilege), then kills and reaps it.
func attachChild() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "5"}, &syscall.ProcAttr{})
	if err != nil {
		fmt.Printf("ptrace_attach_child=start-failed:%v\n", err)
		return
	}
	_, e := call("ptrace", 16 /* PTRACE_ATTACH */, uintptr(pid), 0, 0)
	report("ptrace_attach_child", e)
	syscall.Kill(pid, syscall.SIGKILL)
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil || ws.Exited() || ws.Signaled() {
			return
		}
	}
}

func dial(network, addr string) {
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err == nil {
		c.Close()
		fmt.Printf("%s=OK\n", network)
		return
	}
	var en syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &en):
		report(network, en)
	case errors.As(err, &ne) && ne.Timeout():
		fmt.Printf("%s=TIMEOUT\n", network)
	default:
		fmt.Printf("%s=failed:%v\n", network, err)
	}
}

// selfConnect shows that the sandbox's own loopback works: refusals elsewhere
// are isolation, not a broken network stack.
func selfConnect() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Printf("self=listen-failed:%v\n", err)
		return
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	dial("tcp", ln.Addr().String())
}

// mem allocates and touches n MiB in 64 MiB steps, saying how far it got.
func mem(n int) {
	const step = 64
	var keep [][]byte
	for got := 0; got < n; got += step {
		b, err := syscall.Mmap(-1, 0, step<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			fmt.Printf("mmap failed after %d MiB: %v\n", got, err)
			os.Exit(1)
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
		fmt.Printf("allocated %d MiB\n", got+step)
	}
	fmt.Println("mem=DONE")
}

// swap replaces path, over and over, by a regular file holding content and by
// a symlink to each target in turn, each time with an atomic rename, until it
// is killed.
func swap(path, content string, targets []string) {
	tmp := filepath.Join(filepath.Dir(path), ".swap-tmp")
	for i := 0; ; i++ {
		os.Remove(tmp)
		if i%2 == 0 {
			os.Symlink(targets[(i/2)%len(targets)], tmp)
		} else {
			os.WriteFile(tmp, []byte(content), 0o644)
		}
		os.Rename(tmp, path)
		time.Sleep(100 * time.Microsecond)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe sys | tcp ADDR | udp ADDR | unix ADDR | self | mem MIB | swap PATH CONTENT TARGET...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sys":
		syscalls()
	case "traceme":
		_, e := call("ptrace", 0 /* PTRACE_TRACEME */, 0, 0, 0)
		childResult(e)
	case "x32":
		// getpid through the x32 ABI (the number with bit 30 set).
		_, _, e := syscall.RawSyscall(nr("getpid")|0x40000000, 0, 0, 0)
		childResult(e)
	case "tcp", "udp", "unix":
		dial(os.Args[1], os.Args[2])
	case "self":
		selfConnect()
	case "mem":
		n, _ := strconv.Atoi(os.Args[2])
		mem(n)
	case "swap":
		swap(os.Args[2], os.Args[3], os.Args[4:])
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", os.Args[1])
		os.Exit(2)
	}
}
`

// TestEscapeGitHostExec: .git/hooks and .git/config name programs the user's git
// runs on the host (a hook, core.fsmonitor on every `git status`). A call must not
// be able to plant one there.
func TestEscapeGitHostExec(t *testing.T) {
	daemon := escDaemon(t)
	mustCode(t, userSh(t, `cd ~/proj && mkdir -p .git/hooks && printf '[core]\n\tbare = false\n' > .git/config`), 0)
	t.Cleanup(func() { userSh(t, "cd ~/proj && rm -rf .git/hooks .git/config") })
	before, err := os.ReadFile(filepath.Join(env.project, ".git/config"))
	if err != nil {
		t.Fatal(err)
	}
	r := escSh(t, `printf '[core]\n\tfsmonitor = ./evil.sh\n' >> .git/config 2>&1
printf '#!/bin/sh\necho HOOKED\n' > .git/hooks/pre-commit 2>&1
mv .git/hooks .git/hooks-moved 2>&1; echo done`)
	mustContain(t, "planting git host code", r.stdout, "Read-only file system", "done")
	after, _ := os.ReadFile(filepath.Join(env.project, ".git/config"))
	if string(after) != string(before) {
		t.Errorf(".git/config changed from inside the sandbox:\n%s", after)
	}
	if _, err := os.Lstat(filepath.Join(env.project, ".git/hooks/pre-commit")); err == nil {
		t.Errorf("a git hook was planted")
	}
	w := tool(t, "safe_write", "", ".git/config", "--content", "[core]\n\tfsmonitor = ./evil.sh\n")
	if w.code != 77 || !strings.Contains(w.stderr, "CTXD-E025") {
		t.Errorf("safe_write .git/config: want exit 77 with CTXD-E025, got %s", w)
	}
	// Everything else in .git stays writable: git works inside.
	mustCode(t, escSh(t, "touch .git/HEAD-probe && rm .git/HEAD-probe"), 0)
	escHealthy(t, daemon)
}

// TestEscapeAgentConfig: the agents' workspace configuration names the MCP
// servers, hooks and plugins they start on the host (contextd-proxy install
// writes it, and marks the project trusted). A call must not be able to
// rewrite it, nor a hooks directory .git/config points at (.husky).
func TestEscapeAgentConfig(t *testing.T) {
	daemon := escDaemon(t)
	files := []string{".mcp.json", ".codex/config.toml", ".gemini/settings.json", "opencode.json", ".opencode/plugin/p.js", ".husky/pre-commit"}
	mustCode(t, userSh(t, `cd ~/proj && mkdir -p .codex .gemini .opencode/plugin .husky .git &&
for f in `+strings.Join(files, " ")+`; do echo original > "$f"; done &&
printf '[core]\n\thooksPath = .husky\n' > .git/config`), 0)
	t.Cleanup(func() {
		userSh(t, "cd ~/proj && rm -rf .mcp.json .codex .gemini opencode.json .opencode .husky .git/config")
	})
	var script strings.Builder
	for _, f := range files {
		fmt.Fprintf(&script, "echo evil > %s 2>&1; ", f)
	}
	script.WriteString("rm -rf .codex 2>&1; mv .gemini .gemini-moved 2>&1; echo done")
	r := escSh(t, script.String())
	mustContain(t, "rewriting agent configuration", r.stdout, "Read-only file system", "done")
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(env.project, f))
		if err != nil || string(b) != "original\n" {
			t.Errorf("%s after the call: %q %v", f, b, err)
		}
	}
	escHealthy(t, daemon)
}
