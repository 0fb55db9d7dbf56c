//go:build linux

package ns_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/ns"
)

func TestWorkspaceReadWrite(t *testing.T) {
	ws := workspace(t)
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, spec(t, ws, "sh", "-c", "cat in.txt; echo written > out.txt; pwd"))
	if got := lines(out); len(got) != 2 || got[0] != "hello" || got[1] != ws {
		t.Fatalf("output %q, want hello and %s", out, ws)
	}
	b, err := os.ReadFile(filepath.Join(ws, "out.txt"))
	if err != nil || string(b) != "written\n" {
		t.Fatalf("out.txt: %q, %v", b, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, "out.txt"), &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		t.Fatalf("out.txt owned by %d:%d, want %d:%d", st.Uid, st.Gid, os.Getuid(), os.Getgid())
	}
}

func TestNotRoot(t *testing.T) {
	// The whole suite must exercise the unprivileged path.
	if os.Geteuid() == 0 {
		t.Fatal("tests run as root; TestMain should have re-run them as " + testUser)
	}
}

func TestHomeHiddenExceptWorkspace(t *testing.T) {
	home := homeDir(t)
	ssh := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(ssh, "id_rsa")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(key) })
	ws := homeWorkspace(t)
	os.WriteFile(filepath.Join(ws, "visible"), []byte("yes"), 0o644)

	m := probe(t, spec(t, ws, "stat", key, ssh, filepath.Join(ws, "visible"), home))
	if m[key] != "ENOENT" || m[ssh] != "ENOENT" {
		t.Errorf("secret visible: %v", m)
	}
	if m[filepath.Join(ws, "visible")] != "OK" || m[home] != "OK" {
		t.Errorf("workspace or home not visible: %v", m)
	}

	// $HOME is an empty, private, writable tmpfs holding only the path to
	// the workspace.
	out := mustRun(t, spec(t, ws, "sh", "-c", `ls -A "$HOME"; stat -c %a "$HOME"; touch "$HOME/scratch" && echo writable`))
	want := []string{filepath.Base(ws), "700", "writable"}
	if got := lines(out); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("home: %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, "scratch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("write to the sandbox's $HOME reached the real home: %v", err)
	}
}

func TestWorkspaceIsHomeRefused(t *testing.T) {
	s := spec(t, homeDir(t), "true")
	_, err := startSandbox(s, nil, nil, nil)
	var se *ns.SetupError
	if !errors.As(err, &se) || se.Step != ns.StepValidate || !errors.Is(err, ns.ErrSetup) {
		t.Fatalf("workspace == home: %v, want a validate SetupError", err)
	}
}

func TestSystemReadOnly(t *testing.T) {
	ws := workspace(t)
	home := homeDir(t)
	paths := []string{"/usr/ctxd-x", "/etc/ctxd-x", "/ctxd-x", "/dev/ctxd-x", "/tmp/ctxd-x", home + "/ctxd-x", ws + "/ctxd-x"}
	m := probe(t, spec(t, ws, append([]string{"touch"}, paths...)...))
	want := map[string]string{
		"/usr/ctxd-x": "EROFS", "/etc/ctxd-x": "EROFS", "/ctxd-x": "EROFS", "/dev/ctxd-x": "EROFS",
		"/tmp/ctxd-x": "OK", home + "/ctxd-x": "OK", ws + "/ctxd-x": "OK",
	}
	for p, w := range want {
		if m[p] != w {
			t.Errorf("touch %s: %s, want %s", p, m[p], w)
		}
	}
	if _, err := os.Stat("/usr/ctxd-x"); err == nil {
		t.Error("/usr/ctxd-x was created on the host")
	}

	// Symlinked top-level directories stay symlinks.
	var links []string
	for _, p := range ns.DefaultReadOnly {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			links = append(links, p)
		}
	}
	if len(links) > 0 {
		m = probe(t, spec(t, ws, append([]string{"readlink"}, links...)...))
		for _, p := range links {
			host, _ := os.Readlink(p)
			if m[p] != host {
				t.Errorf("readlink %s inside: %q, host %q", p, m[p], host)
			}
		}
	}
	// Programs from the read-only system run.
	if out := mustRun(t, spec(t, ws, "sh", "-c", "echo ok | tr a-z A-Z")); strings.TrimSpace(out) != "OK" {
		t.Errorf("pipeline: %q", out)
	}
}

func TestNothingElseOfTheHost(t *testing.T) {
	ws := workspace(t)
	uid := strconv.Itoa(os.Getuid())
	run := "/run/user/" + uid
	sock := run + "/contextd/contextd.sock"
	if _, err := os.Stat(sock); err != nil {
		t.Logf("note: %s does not exist on the host (%v)", sock, err)
	}
	hidden := []string{"/run", run, sock, "/var", "/root", "/mnt", "/sys", "/opt", "/srv", "/boot", "/media", "/work", "/home/" + testUser + "-other"}
	m := probe(t, spec(t, ws, append([]string{"stat"}, hidden...)...))
	for _, p := range hidden {
		if m[p] != "ENOENT" {
			t.Errorf("%s inside the sandbox: %s, want ENOENT", p, m[p])
		}
	}

	// The top level holds only the system directories, /proc, /dev, /tmp
	// and the first components of $HOME and the workspace.
	allowed := map[string]bool{"proc": true, "dev": true, "tmp": true}
	for _, p := range append(append([]string(nil), ns.DefaultReadOnly...), homeDir(t), ws) {
		allowed[strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]] = true
	}
	out := mustRun(t, spec(t, ws, "ls", "-A", "/"))
	for _, name := range lines(out) {
		if !allowed[name] {
			t.Errorf("unexpected /%s in the sandbox (ls -A /: %q)", name, lines(out))
		}
	}
}

func TestProcShowsOnlyTheSandbox(t *testing.T) {
	ws := workspace(t)
	out := mustRun(t, spec(t, ws, "sh", "-c", "ps -e -o pid=,comm=; echo; cat /proc/1/comm"))
	procs, rest, _ := strings.Cut(out, "\n\n")
	ps := lines(procs)
	if len(ps) == 0 || len(ps) > 2 {
		t.Fatalf("ps shows %d processes, want the shell and ps only: %q", len(ps), ps)
	}
	if f := strings.Fields(ps[0]); f[0] != "1" {
		t.Errorf("first process %q, want pid 1", ps[0])
	}
	if c := strings.TrimSpace(rest); c != "sh" && c != "ps" {
		t.Errorf("pid 1 is %q, want the command", c)
	}
}

func TestNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	addr := l.Addr().String()
	ws := workspace(t)

	t.Run("isolated", func(t *testing.T) {
		s := spec(t, ws, "connect", addr)
		s.Mode = ns.ModeTestProbe
		var sameNS, checked bool
		r := runWith(t, s, func(c *ns.Child) {
			if err := c.Ready(); err != nil {
				t.Fatal(err)
			}
			h, err := netns.GetFromPid(c.Pid())
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			self, err := netns.Get()
			if err != nil {
				t.Fatal(err)
			}
			defer self.Close()
			sameNS, checked = h.Equal(self), true
		})
		if r.err != nil || r.code != 0 {
			t.Fatalf("code %d err %v: %s", r.code, r.err, r.errOut)
		}
		if !checked || sameNS {
			t.Errorf("sandbox shares the host's network namespace (checked %v)", checked)
		}
		got := strings.TrimSpace(r.out)
		if got != "ECONNREFUSED" && got != "ENETUNREACH" {
			t.Errorf("connect to the host's %s: %s, want ECONNREFUSED or ENETUNREACH", addr, got)
		}
		select {
		case <-accepted:
			t.Error("the host listener accepted a connection from the sandbox")
		case <-time.After(50 * time.Millisecond):
		}

		m := probe(t, spec(t, ws, "ifaces"))
		if len(m) != 1 || m["lo"] != "up=true" {
			t.Errorf("interfaces %v, want only lo, up", m)
		}
		if out := mustRun(t, toolSpec(t, ws, "loopback")); strings.TrimSpace(out) != "OK pong" {
			t.Errorf("loopback inside: %q", out)
		}
	})

	t.Run("opt-in", func(t *testing.T) {
		s := spec(t, ws, "connect", addr)
		s.Network = true
		if out := mustRun(t, func() *ns.Spec { s.Mode = ns.ModeTestProbe; return s }()); strings.TrimSpace(out) != "OK" {
			t.Fatalf("connect with Network: %q", out)
		}
		select {
		case <-accepted:
		case <-time.After(2 * time.Second):
			t.Error("host listener saw no connection")
		}
	})
}

func TestHostname(t *testing.T) {
	ws := workspace(t)
	if out := mustRun(t, spec(t, ws, "cat", "/proc/sys/kernel/hostname")); strings.TrimSpace(out) != "contextd" {
		t.Errorf("hostname %q", out)
	}
	s := spec(t, ws, "cat", "/proc/sys/kernel/hostname")
	s.Hostname = "box-7"
	if out := mustRun(t, s); strings.TrimSpace(out) != "box-7" {
		t.Errorf("hostname %q", out)
	}
	host, _ := os.Hostname()
	if host == "contextd" || host == "box-7" {
		t.Errorf("the host's hostname changed to %q", host)
	}
}

func statusFields(out string) map[string]string {
	m := map[string]string{}
	for _, l := range lines(out) {
		k, v, _ := strings.Cut(l, ":")
		m[k] = strings.TrimSpace(v)
	}
	return m
}

func TestPrivilegesDropped(t *testing.T) {
	ws := workspace(t)
	for _, mode := range []string{ns.ModeExec, ns.ModeTestProbe} {
		var s *ns.Spec
		if mode == ns.ModeExec {
			s = spec(t, ws, "cat", "/proc/self/status")
		} else {
			s = toolSpec(t, ws, "argv") // just to be sure tool mode runs too
			mustRun(t, s)
			s = spec(t, ws, "sh", "-c", "cat /proc/self/status")
		}
		st := statusFields(mustRun(t, s))
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if st[k] != "0000000000000000" {
				t.Errorf("%s: %s = %q, want 0", mode, k, st[k])
			}
		}
		if st["NoNewPrivs"] != "1" || st["Seccomp"] != "2" {
			t.Errorf("%s: NoNewPrivs %q Seccomp %q, want 1 and 2", mode, st["NoNewPrivs"], st["Seccomp"])
		}
		uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
		if u := strings.Fields(st["Uid"]); len(u) != 4 || u[0] != uid || u[1] != uid || u[3] != uid {
			t.Errorf("%s: Uid %q, want %s", mode, st["Uid"], uid)
		}
		if g := strings.Fields(st["Gid"]); len(g) != 4 || g[0] != gid || g[1] != gid {
			t.Errorf("%s: Gid %q, want %s", mode, st["Gid"], gid)
		}
	}
	// The ids as the command's tools report them.
	out := mustRun(t, spec(t, ws, "sh", "-c", "id -u; id -g"))
	if got := lines(out); len(got) != 2 || got[0] != strconv.Itoa(os.Getuid()) || got[1] != strconv.Itoa(os.Getgid()) {
		t.Errorf("id: %q", got)
	}
}

func TestOnlyStdioInherited(t *testing.T) {
	ws := workspace(t)
	// ls opens the directory itself as 3.
	out := mustRun(t, spec(t, ws, "ls", "/proc/self/fd"))
	if got := strings.Join(strings.Fields(out), " "); got != "0 1 2 3" {
		t.Errorf("exec mode descriptors %q, want 0 1 2 3", got)
	}
	// Tool mode: the O_PATH descriptor of the binary, the spec pipe and the
	// sync socket must all be gone. The Go runtime may open its own epoll
	// and eventfd before the probe lists the directory.
	out = mustRun(t, toolSpec(t, ws, "fds"))
	t.Logf("tool descriptors: %q", out)
	for _, l := range lines(out) {
		fd, target, _ := strings.Cut(l, " ")
		n, _ := strconv.Atoi(fd)
		if n <= 2 || strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "anon_inode:") {
			continue
		}
		t.Errorf("tool inherited descriptor %s -> %s", fd, target)
	}
}

func TestSetupErrors(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	cmd := []string{"sh", "-c", "touch " + marker}

	cases := []struct {
		name   string
		edit   func(*ns.Spec)
		step   string
		errno  syscall.Errno
		atInit bool // Start succeeds, the init reports it
	}{
		{"missing workspace", func(s *ns.Spec) { s.Workspace = ws + "/missing"; s.Dir = ws }, ns.StepMounts, syscall.ENOENT, true},
		{"workspace is a file", func(s *ns.Spec) {
			f := filepath.Join(ws, "file")
			os.WriteFile(f, nil, 0o644)
			s.Workspace, s.Dir = f, ws
		}, ns.StepMounts, syscall.ENOTDIR, true},
		{"dir not visible", func(s *ns.Spec) { s.Dir = "/var" }, ns.StepChdir, syscall.ENOENT, true},
		{"dir missing", func(s *ns.Spec) { s.Dir = "/var/no-such-dir-ctxd" }, ns.StepChdir, syscall.ENOENT, true},
		{"command not found", func(s *ns.Spec) { s.Argv = []string{"no-such-command-ctxd"} }, ns.StepResolve, syscall.ENOENT, true},
		{"bad profile", func(s *ns.Spec) { s.Seccomp = []byte(`{"defaultAction":"SCMP_ACT_NOPE"}`) }, ns.StepSeccompParse, 0, true},
		{"no profile", func(s *ns.Spec) { s.Seccomp = nil }, ns.StepValidate, 0, false},
		{"relative workspace", func(s *ns.Spec) { s.Workspace = "ws" }, ns.StepValidate, 0, false},
		{"empty argv", func(s *ns.Spec) { s.Argv = nil }, ns.StepValidate, 0, false},
		{"workspace under /proc", func(s *ns.Spec) { s.Workspace = "/proc/self" }, ns.StepValidate, 0, false},
		{"bad rlimit", func(s *ns.Spec) { s.Rlimits = []ns.Rlimit{{Resource: "BOGUS"}} }, ns.StepValidate, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(t, ws, cmd...)
			tc.edit(s)
			c, err := startSandbox(s, nil, nil, nil)
			if !tc.atInit {
				if c != nil || err == nil {
					t.Fatalf("Start accepted the spec")
				}
			} else {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				err = c.Ready()
				if rerr := c.Release(); rerr == nil {
					t.Errorf("Release after a failed setup returned nil")
				}
				code, _, werr := c.Wait()
				if werr == nil || code != -1 {
					t.Errorf("Wait: code %d err %v, want the setup error", code, werr)
				}
			}
			var se *ns.SetupError
			if !errors.Is(err, ns.ErrSetup) || !errors.As(err, &se) {
				t.Fatalf("error %v (%T) does not wrap ErrSetup", err, err)
			}
			if se.Step != tc.step {
				t.Errorf("step %q, want %q (%v)", se.Step, tc.step, err)
			}
			if tc.errno != 0 && !errors.Is(err, tc.errno) {
				t.Errorf("error %v is not %v", err, tc.errno)
			}
			t.Logf("%v", err)
			if _, err := os.Stat(marker); err == nil {
				os.Remove(marker)
				t.Fatal("the command ran despite the failed setup")
			}
		})
	}
}

func TestReleaseRequired(t *testing.T) {
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	r := runWith(t, spec(t, ws, "touch", marker), func(c *ns.Child) {
		if err := c.Ready(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran before Release")
		}
	})
	if r.err != nil || r.code != 0 {
		t.Fatalf("code %d err %v", r.code, r.err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the command did not run after Release: %v", err)
	}

	// Killed while held: the command never runs.
	c, err := startSandbox(spec(t, ws, "touch", marker+"2"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err != nil {
		t.Fatal(err)
	}
	c.Kill()
	if code, sig, err := c.Wait(); !sig || code != 128+int(syscall.SIGKILL) || err != nil {
		t.Errorf("Wait after Kill: %d %v %v", code, sig, err)
	}
	if _, err := os.Stat(marker + "2"); err == nil {
		t.Fatal("a killed, never released sandbox ran its command")
	}
}

// pidsInNamespace lists the host pids of the processes in the PID namespace
// of pid (which must still exist when it is called first).
func pidNS(pid int) string {
	s, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	return s
}

func pidsIn(nsID string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pidNS(pid) == nsID {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKillTearsDownEverything(t *testing.T) {
	ws := workspace(t)
	// A background child, and a daemonized grandchild in its own session.
	script := `sleep 1000 & (setsid sleep 1001 &) ; echo started; wait`
	outR, outW, _ := os.Pipe()
	c, err := startSandbox(spec(t, ws, "sh", "-c", script), nil, outW, nil)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	id := pidNS(c.Pid())
	if id == "" || id == pidNS(os.Getpid()) {
		t.Fatalf("sandbox pid namespace %q", id)
	}
	waitFor(t, "the sleeps", func() bool { return len(pidsIn(id)) >= 3 })
	before := pidsIn(id)
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	code, sig, err := c.Wait()
	if err != nil || !sig || code != 137 {
		t.Errorf("Wait: %d %v %v", code, sig, err)
	}
	waitFor(t, "the namespace to empty", func() bool { return len(pidsIn(id)) == 0 })
	for _, p := range before {
		if syscall.Kill(p, 0) == nil && pidNS(p) == id {
			t.Errorf("pid %d survived", p)
		}
	}
}

func TestNothingOutlivesTheCommand(t *testing.T) {
	ws := workspace(t)
	start := time.Now()
	c, err := startSandbox(spec(t, ws, "sh", "-c", "(setsid sleep 1000 &); sleep 1001 & echo bye"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	id := pidNS(c.Pid())
	code, _, err := c.Wait()
	if err != nil || code != 0 {
		t.Fatalf("Wait: %d %v", code, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	waitFor(t, "the background processes to be gone", func() bool { return len(pidsIn(id)) == 0 })
}

func TestExitStatus(t *testing.T) {
	ws := workspace(t)
	r := run(t, spec(t, ws, "sh", "-c", "echo out; echo err >&2; exit 7"))
	if r.err != nil || r.code != 7 || r.signaled || r.out != "out\n" || r.errOut != "err\n" {
		t.Errorf("got %+v", r)
	}
	r = runWith(t, spec(t, ws, "sleep", "1000"), func(c *ns.Child) {
		go func() { c.Ready(); time.Sleep(100 * time.Millisecond); c.Kill() }()
	})
	if r.err != nil || !r.signaled || r.code != 137 {
		t.Errorf("killed: %+v", r)
	}
}

func TestEnvironmentExact(t *testing.T) {
	ws := workspace(t)
	s := spec(t, ws, "env")
	s.Env = []string{"PATH=/usr/bin:/bin", "ONLY=this"}
	t.Setenv("CTXD_SECRET_TOKEN", "leak")
	if got := lines(mustRun(t, s)); strings.Join(got, ",") != "PATH=/usr/bin:/bin,ONLY=this" {
		t.Errorf("env %q", got)
	}
}

func TestRlimits(t *testing.T) {
	ws := workspace(t)
	out := mustRun(t, spec(t, ws, "sh", "-c", "ulimit -n; ulimit -Hn; ulimit -c"))
	if got := strings.Join(lines(out), ","); got != "4096,4096,0" {
		t.Errorf("default limits %q, want 4096,4096,0", got)
	}
	s := spec(t, ws, "sh", "-c", "ulimit -n; ulimit -Hn; grep 'Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3,4")
	s.Rlimits = []ns.Rlimit{{Resource: "NOFILE", Soft: 100, Hard: 200}, {Resource: "NPROC", Soft: 300, Hard: 300}}
	if got := strings.Join(lines(mustRun(t, s)), ","); got != "100,200,300 300" {
		t.Errorf("limits %q, want 100,200,300 300", got)
	}
}

func TestDev(t *testing.T) {
	ws := workspace(t)
	out := mustRun(t, spec(t, ws, "ls", "-A", "/dev"))
	got := strings.Join(strings.Fields(out), " ")
	if want := "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero"; got != want {
		t.Errorf("/dev: %q, want %q", got, want)
	}
	script := `echo x > /dev/null && echo null; head -c 16 /dev/urandom | wc -c; head -c 3 /dev/zero | wc -c;
readlink /dev/ptmx; touch /dev/shm/x && echo shm; echo hi > /dev/stdout`
	if got := strings.Join(lines(mustRun(t, spec(t, ws, "sh", "-c", script))), ","); got != "null,16,3,pts/ptmx,shm,hi" {
		t.Errorf("devices: %q", got)
	}
	if out := mustRun(t, toolSpec(t, ws, "ptmx")); !strings.HasPrefix(out, "OK 0") {
		t.Errorf("new pty in a private devpts: %q, want OK 0", out)
	}
}

func TestReadWritePaths(t *testing.T) {
	ws := workspace(t)
	extraRW := workspace(t)
	extraRO := workspace(t)
	s := toolSpec(t, ws, "touch", extraRW+"/f", extraRO+"/f")
	s.ReadWrite = []string{extraRW, "/nonexistent-ctxd"}
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), extraRO)
	m := probe(t, s)
	if m[extraRW+"/f"] != "OK" || m[extraRO+"/f"] != "EROFS" {
		t.Errorf("extra paths: %v", m)
	}
}

func TestToolMode(t *testing.T) {
	ws := workspace(t)
	out := mustRun(t, toolSpec(t, ws, "argv", "safe_read", "a b"))
	if got := strings.TrimSpace(out); got != "contextd-tool argv safe_read a b" {
		t.Errorf("tool argv %q", got)
	}
}

// TestReadOnlySubmounts checks that mounts below a read-only path (brought
// along by the recursive bind) are read-only too, and that the flags the
// kernel locks on them (nosuid, nodev, noexec, noatime, strictatime) do not
// make the remount fail. The test needs such mounts on the "host", so it
// re-runs itself in a user and mount namespace of its own where it can
// create them; the sandbox then starts from there (a nested user namespace).
func TestReadOnlySubmounts(t *testing.T) {
	if os.Getenv("CTXD_NS_NESTED") == "" {
		cmd := exec.Command("/proc/self/exe", "-test.run=^TestReadOnlySubmounts$", "-test.v")
		cmd.Env = append(os.Environ(), "CTXD_NS_NESTED=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlySubmounts") {
			t.Fatalf("nested run: %v\n%s", err, out)
		}
		t.Logf("nested run:\n%s", out)
		return
	}

	ro := workspace(t)
	for _, m := range []struct {
		name  string
		flags uintptr
	}{
		{"locked", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME},
		{"strict", unix.MS_NOSUID | unix.MS_STRICTATIME},
		{"plain", 0},
	} {
		dir := filepath.Join(ro, m.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", m.flags, "mode=0755"); err != nil {
			t.Fatalf("mount %s: %v", dir, err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := workspace(t)
	s := toolSpec(t, ws, "touch", ro+"/x", ro+"/locked/x", ro+"/strict/x", ro+"/plain/x", ro+"/locked/file")
	s.ReadOnly = append(append([]string(nil), ns.DefaultReadOnly...), ro)
	m := probe(t, s)
	for _, p := range []string{ro + "/x", ro + "/locked/x", ro + "/strict/x", ro + "/plain/x", ro + "/locked/file"} {
		if m[p] != "EROFS" {
			t.Errorf("touch %s: %s, want EROFS", p, m[p])
		}
	}
}

// The profile is really enforced, on the command and its children.
func TestSeccompEnforced(t *testing.T) {
	ws := workspace(t)
	deny := []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
		{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"comment":"test: no mkdir"},
		{"names":["unshare"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"comment":"test: no namespaces"}]}`)
	s := spec(t, ws, "sh", "-c", `mkdir /tmp/d 2>/dev/null; echo mkdir=$?; unshare -U true 2>/dev/null; echo unshare=$?; touch /tmp/f && echo touch=0`)
	s.Seccomp = deny
	if got := strings.Join(lines(mustRun(t, s)), ","); got != "mkdir=1,unshare=1,touch=0" {
		t.Errorf("under the deny profile: %q", got)
	}
	// Same commands without the rules: they work, so the profile made the
	// difference.
	s.Seccomp = allowAll
	if got := strings.Join(lines(mustRun(t, s)), ","); !strings.HasPrefix(got, "mkdir=0,") {
		t.Errorf("under allow-all: %q", got)
	}

	// A profile that forbids the exec itself: the sandbox fails closed and
	// says so (the report is written after the filter is in place).
	for _, mode := range []string{ns.ModeExec, ns.ModeTestProbe} {
		s := spec(t, ws, "true")
		s.Mode = mode
		s.Seccomp = []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
			{"names":["execve","execveat"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"comment":"test: no exec"}]}`)
		r := run(t, s)
		var se *ns.SetupError
		if !errors.As(r.err, &se) || se.Step != ns.StepExec || !errors.Is(r.err, syscall.EPERM) {
			t.Errorf("%s: exec forbidden by seccomp: %+v", mode, r)
		}
	}
}

// Sandboxes started at the same time do not see each other or each other's
// descriptors, and all finish.
func TestConcurrent(t *testing.T) {
	ws := workspace(t)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			// No pipeline: whether its right side is forked yet when ps
			// reads /proc is a race. The shell may exec ps, its last
			// command, or wait for it: ps, and perhaps sh, and nothing
			// else (no process of the host or of another sandbox).
			r := run(t, spec(t, ws, "sh", "-c", fmt.Sprintf("echo %d > f%d; ps -e -o comm=", i, i)))
			seen := strings.Fields(r.out)
			switch {
			case r.err != nil || r.code != 0:
				errs <- fmt.Errorf("sandbox %d: %d %v %s", i, r.code, r.err, r.errOut)
			case !slices.Contains(seen, "ps") || slices.ContainsFunc(seen, func(c string) bool { return c != "ps" && c != "sh" }):
				errs <- fmt.Errorf("sandbox %d sees the processes %q, want ps and at most sh", i, seen)
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for i := range n {
		if b, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("f%d", i))); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(i) {
			t.Errorf("f%d: %q %v", i, b, err)
		}
	}
}

// A setup failure is reported even when Release came first (the release
// byte is then unread when the init exits, and the socket reports
// ECONNRESET before the queued error message).
func TestSetupErrorAfterEarlyRelease(t *testing.T) {
	ws := workspace(t)
	// Keep the daemon's goroutines busy, so that its reader is late (the
	// race is lost when the init exits before the error is read).
	stop := make(chan struct{})
	defer close(stop)
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
				}
			}
		}()
	}
	for i := range 15 {
		c, err := startSandbox(spec(t, ws+"/missing", "true"), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
		code, _, err := c.Wait()
		var se *ns.SetupError
		if code != -1 || !errors.As(err, &se) || se.Step != ns.StepMounts {
			t.Fatalf("run %d: code %d err %v, want the mounts setup error", i, code, err)
		}
	}
}

// Func mode runs the binary's registered function in the init itself, after
// the same last steps: no capabilities (on the thread /proc shows), no new
// privileges, the filter loaded, not dumpable, and the filter binds it.
func TestFuncMode(t *testing.T) {
	ws := workspace(t)
	s := toolSpec(t, ws, "status")
	s.Mode = ns.ModeFunc
	st := statusFields(mustRun(t, s))
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if st[k] != "0000000000000000" {
			t.Errorf("%s = %q, want 0", k, st[k])
		}
	}
	if st["NoNewPrivs"] != "1" || st["Seccomp"] != "2" || st["Dumpable"] != "0" {
		t.Errorf("NoNewPrivs %q Seccomp %q Dumpable %q, want 1, 2, 0", st["NoNewPrivs"], st["Seccomp"], st["Dumpable"])
	}
	if st["Pid"] != "1" {
		t.Errorf("the function runs as pid %q, want 1 (the init itself)", st["Pid"])
	}

	s = toolSpec(t, ws, "mkdir", filepath.Join(ws, "d"))
	s.Mode = ns.ModeFunc
	s.Seccomp = []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
		{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"comment":"test: no mkdir"}]}`)
	if got := strings.TrimSpace(mustRun(t, s)); !strings.HasSuffix(got, "EPERM") {
		t.Errorf("mkdir under a filter that forbids it, in func mode: %q", got)
	}
}

// A function that returns while processes it started are still running (in
// sessions of their own, holding the output pipe) gets them killed by its
// init before the init says the sandbox has ended: when Ended is closed no
// other process of the sandbox's PID namespace is left, the output has
// reached its end, and EndCode is the function's code. And where the
// profile refuses wait4, so the init cannot prove it, Ended stays open and
// Wait is the end, as for an exec'd command.
func TestFuncModeEndsTheRest(t *testing.T) {
	ws := workspace(t)
	for _, tc := range []struct {
		name    string
		seccomp []byte
		ended   bool
	}{
		{"proven", allowAll, true},
		{"wait4 refused", []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[
			{"names":["wait4"],"action":"SCMP_ACT_ERRNO","errnoRet":1,"comment":"test: the init cannot reap"}]}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := toolSpec(t, ws, "leave")
			s.Mode, s.Seccomp = ns.ModeFunc, tc.seccomp
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outR.Close()
			c, err := ns.Start(s, nil, outW, outW)
			outW.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { c.Kill(); c.Wait() }()
			if err := c.Ready(); err != nil {
				t.Fatal(err)
			}
			pidns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", c.Pid()))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Release(); err != nil {
				t.Fatal(err)
			}
			if !tc.ended {
				// Wait is the end; by then the init's messages are all
				// read, so Ended's state is final.
				if code, _, err := c.Wait(); code != 7 || err != nil {
					t.Fatalf("Wait: code %d, %v; want 7", code, err)
				}
				select {
				case <-c.Ended():
					t.Fatal("Ended closed although the init could not reap")
				default:
				}
				return
			}
			// Nobody waits for the init yet: Ended must come on its own.
			select {
			case <-c.Ended():
			case <-time.After(30 * time.Second):
				b, _ := io.ReadAll(outR)
				t.Fatalf("Ended not closed within 30 s; output %q", b)
			}
			if got := c.EndCode(); got != 7 {
				t.Errorf("EndCode %d, want the function's 7", got)
			}
			// Nothing but the init (which may still be exiting) is in the
			// sandbox's PID namespace.
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				if p == fmt.Sprintf("/proc/%d", c.Pid()) {
					continue
				}
				if l, err := os.Readlink(p + "/ns/pid"); err == nil && l == pidns {
					comm, _ := os.ReadFile(p + "/comm")
					t.Errorf("at Ended, %s (%s) is still in the sandbox's PID namespace", p, strings.TrimSpace(string(comm)))
				}
			}
			// The sleepers held the pipe: its end proves them gone too.
			read := make(chan string, 1)
			go func() { b, _ := io.ReadAll(outR); read <- string(b) }()
			select {
			case out := <-read:
				if strings.TrimSpace(out) != "left" {
					t.Errorf("output %q, want \"left\"", out)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the output did not end: a process left behind still holds it")
			}
			if code, _, err := c.Wait(); code != 7 || err != nil {
				t.Errorf("Wait: code %d, %v; want 7", code, err)
			}
		})
	}
}
