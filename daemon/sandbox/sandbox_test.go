package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/sandboxinfo"
)

// A command runs in every configuration of the runner, and its exit status,
// output, arguments, environment and working directory come back exactly.
func TestRunExitCodeAndOutput(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		sub := filepath.Join(ws, "sub dir")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=/usr/bin:/bin", "A=1", "B=two words"}
		tests := []struct {
			name string
			spec func() runner.Spec
			code int
			out  string
		}{
			{"true", func() runner.Spec { return shSpec(t, ws, "true") }, 0, ""},
			{"exit 3", func() runner.Spec { return shSpec(t, ws, "exit 3") }, 3, ""},
			{"exit 255", func() runner.Spec { return shSpec(t, ws, "exit 255") }, 255, ""},
			{"stdout and stderr interleaved", func() runner.Spec {
				return shSpec(t, ws, "echo out; echo err >&2; echo out2; exit 1")
			}, 1, "out\nerr\nout2\n"},
			{"arguments", func() runner.Spec {
				s := shSpec(t, ws, "")
				s.Args = []string{"custom-argv0", "-c", `printf '%s|' "$0" "$@"`, "x", "a b", ""}
				return s
			}, 0, "x|a b||"},
			{"environment exactly", func() runner.Spec {
				s := shSpec(t, ws, "")
				s.Path, s.Args, s.Env = "/usr/bin/env", []string{"env"}, env
				return s
			}, 0, strings.Join(env, "\n") + "\n"},
			{"working directory", func() runner.Spec {
				s := shSpec(t, ws, "pwd")
				s.Dir = sub
				return s
			}, 0, sub + "\n"},
			{"tool mode", func() runner.Spec {
				return probeSpec(t, ws, "safe_bash", "args", "x", "a b", "")
			}, 0, "x|a b|\n"},
		}
		for _, tt := range tests {
			s := tt.spec()
			res := run(t, v.r, s, false)
			if res.ex.Code != tt.code || res.out != tt.out {
				t.Errorf("%s: exit %d, output %q; want exit %d, output %q", tt.name, res.ex.Code, res.out, tt.code, tt.out)
			}
			wantLayers(t, v, res.ex.Layers, "safe_bash", false)
		}
	})
}

// The layers a call reports are the layers it ran under, seen from inside:
// its own namespaces, the seccomp filter and no_new_privs, and either its
// scope's cgroup or (no user manager) the process limit that replaces the
// scope's task limit.
func TestLayersAreReal(t *testing.T) {
	nsNames := []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}
	host := map[string]string{}
	for _, n := range nsNames {
		l, err := os.Readlink("/proc/self/ns/" + n)
		if err != nil {
			t.Fatal(err)
		}
		host[n] = l
	}
	script := `for n in ` + strings.Join(nsNames, " ") + `; do echo "ns-$n $(readlink /proc/self/ns/$n)"; done
grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -d '\t' | sed 's/:/ /'
sed 's/^/cgroup /' /proc/self/cgroup
echo "nproc $(grep '^Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3,4)"`

	check := func(t *testing.T, v variant, network bool) {
		ws := workspace(t)
		s := shSpec(t, ws, script)
		s.Network = network
		res := run(t, v.r, s, true)
		if res.ex.Code != 0 {
			t.Fatalf("exit %d: %s%s", res.ex.Code, res.out, res.errOut)
		}
		wantLayers(t, v, res.ex.Layers, "safe_bash", network)
		got := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(res.out), "\n") {
			k, val, _ := strings.Cut(line, " ")
			got[k] = append(got[k], val)
		}
		for _, n := range nsNames {
			inside := strings.Join(got["ns-"+n], ",")
			shared := n == "net" && network
			if inside == "" || (inside == host[n]) != shared {
				t.Errorf("namespace %s: inside %q, host %q; shared should be %v", n, inside, host[n], shared)
			}
		}
		if g := strings.Join(got["Seccomp"], ","); g != "2" {
			t.Errorf("Seccomp mode inside %q, want 2 (filter)", g)
		}
		if g := strings.Join(got["NoNewPrivs"], ","); g != "1" {
			t.Errorf("NoNewPrivs inside %q, want 1", g)
		}
		cgroups := strings.Join(got["cgroup"], "\n")
		nproc := strings.Join(got["nproc"], ",")
		if v.scoped {
			if !strings.Contains(cgroups, "/"+res.ex.Layers.Scope) {
				t.Errorf("the process is not in its reported scope %s; /proc/self/cgroup:\n%s", res.ex.Layers.Scope, cgroups)
			}
		} else {
			if strings.Contains(cgroups, "contextd-") {
				t.Errorf("no scope reported, but the process is in one:\n%s", cgroups)
			}
			// Without a scope the runner bounds processes with RLIMIT_NPROC.
			want := fmt.Sprintf("%d %d", scope.DefaultTasksMax, scope.DefaultTasksMax)
			if nproc != want {
				t.Errorf("no scope: Max processes %q, want %q", nproc, want)
			}
		}
	}
	forVariants(t, func(t *testing.T, v variant) {
		t.Run("isolated", func(t *testing.T) { check(t, v, false) })
		t.Run("network", func(t *testing.T) { check(t, v, true) })
	})
}

// No profile for the tool: nothing starts and the call is refused with the
// sandbox's error (fail closed), and no layer is claimed.
func TestMissingProfileFailsClosed(t *testing.T) {
	r := newRunner(nil, noScopeNote, nil)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	for _, tool := range []string{"no_such_tool", "", "../safe_bash", "Safe_Bash", "safe bash", "safe_bash.json"} {
		s := shSpec(t, ws, "touch "+marker)
		s.Tool = tool
		res, err := tryRun(t, r, s, false)
		if !errors.Is(err, catalog.ErrSandbox) || !strings.Contains(fmt.Sprint(err), "seccomp profile") {
			t.Errorf("tool %q: %v, want a seccomp profile error wrapping %s", tool, err, catalog.ErrSandbox.Code)
		}
		if res.ex.Layers != (sandboxinfo.Layers{}) {
			t.Errorf("tool %q: refused call reports layers %+v", tool, res.ex.Layers)
		}
		if exists(t, marker) {
			t.Fatalf("tool %q: the command ran", tool)
		}
	}
}

// An override that exists but cannot be used is never a reason to fall back
// to the embedded profile: the call is refused.
func TestBrokenProfileOverrideFailsClosed(t *testing.T) {
	r := newRunner(nil, noScopeNote, nil)
	for _, tt := range []struct {
		name, content string
		mode          os.FileMode
	}{
		{"not JSON", "{not json", 0o644},
		{"unknown action", `{"defaultAction":"SCMP_ACT_MAYBE","syscalls":[]}`, 0o644},
		{"unknown system call", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["no_such_syscall"],"action":"SCMP_ACT_ERRNO"}]}`, 0o644},
		{"unreadable", allowAll, 0o000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := overrideProfiles(t, map[string]string{"safe_bash.json": tt.content})
			if err := os.Chmod(filepath.Join(dir, "safe_bash.json"), tt.mode); err != nil {
				t.Fatal(err)
			}
			ws := workspace(t)
			marker := filepath.Join(ws, "ran")
			_, err := tryRun(t, r, shSpec(t, ws, "touch "+marker), false)
			if !errors.Is(err, catalog.ErrSandbox) {
				t.Errorf("broken override (%s): %v, want %s", tt.name, err, catalog.ErrSandbox.Code)
			}
			if exists(t, marker) {
				t.Errorf("broken override (%s): the command ran", tt.name)
			}
		})
	}
}

// System calls safe_bash's profile denies fail inside the sandbox with the
// profile's errno, and the same calls work under a profile that allows
// them: the errors come from the filter the runner installed, and the
// override in force is the one reported.
func TestSeccompDeniesSyscalls(t *testing.T) {
	dir := overrideProfiles(t, map[string]string{"test_allow_all.json": allowAll})
	names := []string{"unshare", "netlink", "io_uring_setup", "keyctl"}
	denied := map[string]string{"unshare": "EPERM", "netlink": "EPERM", "io_uring_setup": "ENOSYS", "keyctl": "ENOSYS"}
	// What the kernel answers without a filter (not for unshare: it would
	// give this thread of the test process a file table of its own).
	onHost := map[string]string{}
	for _, n := range []string{"netlink", "io_uring_setup", "keyctl"} {
		onHost[n] = victim.ErrName(victim.TrySyscall(n))
	}
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		args := append([]string{"syscall"}, names...)

		safe := probeLines(t, v.r, probeSpec(t, ws, "safe_bash", args...))
		open := probeLines(t, v.r, probeSpec(t, ws, "test_allow_all", args...))
		for _, n := range names {
			if safe[n] != denied[n] {
				t.Errorf("%s under safe_bash: %s, want %s", n, safe[n], denied[n])
			}
			if h, ok := onHost[n]; ok && h == denied[n] {
				// The kernel itself answers that way (no io_uring, no
				// keys): the control below cannot tell the filter apart.
				t.Logf("%s: the kernel answers %s itself; no control", n, onHost[n])
				continue
			}
			if open[n] == denied[n] {
				t.Errorf("%s under an allow-all profile: %s too; the denial is not the filter's", n, open[n])
			}
		}
		for _, n := range []string{"unshare", "netlink"} {
			if open[n] != "OK" {
				t.Errorf("%s under an allow-all profile: %s, want OK", n, open[n])
			}
		}

		// A real program: util-linux unshare(1) making a user namespace.
		res := run(t, v.r, shSpec(t, ws, "unshare -U true"), false)
		if res.ex.Code == 0 || !strings.Contains(res.out, "Operation not permitted") {
			t.Errorf("`unshare -U true` under safe_bash: exit %d, %q; want a failure with EPERM", res.ex.Code, res.out)
		}
		s := shSpec(t, ws, "unshare -U true")
		s.Tool = "test_allow_all"
		res = run(t, v.r, s, false)
		if res.ex.Code != 0 {
			t.Errorf("`unshare -U true` under an allow-all profile: exit %d, %q", res.ex.Code, res.out)
		}
		want := filepath.Join(dir, "test_allow_all.json")
		if res.ex.Layers.Seccomp != want {
			t.Errorf("override in force: Layers.Seccomp %q, want %q", res.ex.Layers.Seccomp, want)
		}
		if v.scoped && !strings.HasPrefix(res.ex.Layers.Scope, "contextd-test_allow_all-") {
			t.Errorf("scope %q not named after the tool", res.ex.Layers.Scope)
		}
	})
}

// The sandbox sees the workspace read-write, the system and the configured
// read-only paths read-only, the configured read-write paths read-write, and
// nothing else: the rest of $HOME (an empty scratch tmpfs inside), the
// host's /tmp and everything not listed are not there.
func TestFileSystemView(t *testing.T) {
	home := homeDir(t)
	forVariants(t, func(t *testing.T, v variant) {
		ws := homeWorkspace(t)
		secret := filepath.Join(home, "ctxd-sandbox-secret-"+strconv.Itoa(os.Getpid())+"-"+v.name)
		token := fmt.Sprintf("TOKEN-%x", time.Now().UnixNano())
		if err := os.WriteFile(secret, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(secret) })
		hostTmp, ro, rw := workspace(t), workspace(t), workspace(t)
		for _, f := range []string{filepath.Join(ws, "in.txt"), filepath.Join(hostTmp, "f"), filepath.Join(ro, "f")} {
			if err := os.WriteFile(f, []byte("data\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		inHome := filepath.Join(home, "ctxd-sandbox-scratch-"+strconv.Itoa(os.Getpid())+"-"+v.name)
		t.Cleanup(func() { os.Remove(inHome) })

		checks := []struct{ op, want string }{
			{"ls:" + home, "[" + filepath.Base(ws) + "]"},
			{"read:" + filepath.Join(ws, "in.txt"), "OK"},
			{"write:" + filepath.Join(ws, "out.txt"), "OK"},
			{"read:" + secret, "ENOENT"},
			{"read:" + filepath.Join(hostTmp, "f"), "ENOENT"},
			{"read:/etc/passwd", "OK"}, // the defaults stay with extra read-only paths
			{"write:/etc/ctxd-sandbox-test", "EROFS"},
			{"write:/usr/ctxd-sandbox-test", "EROFS"},
			{"read:" + filepath.Join(ro, "f"), "OK"},
			{"write:" + filepath.Join(ro, "new"), "EROFS"},
			{"write:" + filepath.Join(rw, "new"), "OK"},
			{"write:" + inHome, "OK"}, // $HOME is a scratch tmpfs: writable, not the host's
		}
		args := []string{"fs"}
		for _, c := range checks {
			args = append(args, c.op)
		}
		s := probeSpec(t, ws, "safe_bash", args...)
		s.ReadOnly, s.ReadWrite = []string{ro}, []string{rw}
		got := probeLines(t, v.r, s)
		for _, c := range checks {
			if got[c.op] != c.want {
				t.Errorf("%s inside: %q, want %q", c.op, got[c.op], c.want)
			}
		}
		for p, want := range map[string]bool{
			filepath.Join(ws, "out.txt"): true, filepath.Join(rw, "new"): true,
			filepath.Join(ro, "new"): false, inHome: false,
		} {
			if exists(t, p) != want {
				t.Errorf("on the host after the call: %s exists %v, want %v", p, !want, want)
			}
		}

		// The same with a real program in Exec mode.
		res := run(t, v.r, shSpec(t, ws, `cat in.txt; cat "$HOME/`+filepath.Base(secret)+`"`), false)
		if res.ex.Code == 0 || !strings.HasPrefix(res.out, "data\n") || strings.Contains(res.out, token) ||
			!strings.Contains(res.out, "No such file") {
			t.Errorf("cat of the workspace file and the planted secret: exit %d, %q", res.ex.Code, res.out)
		}
	})
}

// Without Network the sandbox has only lo: the host's loopback listener is
// not reachable. With Network it has the host's interfaces and reaches it,
// and the layers say so.
func TestNetworkOnlyLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			accepted <- string(b)
		}
	}()
	// The interfaces of a network namespace, as /proc/net/dev lists them
	// (netlink, which `ip` would use, is denied by safe_bash's profile).
	ifaces := func(dev string) []string {
		var names []string
		for _, line := range strings.Split(dev, "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok {
				names = append(names, strings.TrimSpace(name))
			}
		}
		slices.Sort(names)
		return names
	}
	dev, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	hostNames := ifaces(string(dev))

	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		for _, network := range []bool{false, true} {
			s := shSpec(t, ws, "cat /proc/net/dev")
			s.Network = network
			res := run(t, v.r, s, true)
			wantLayers(t, v, res.ex.Layers, "safe_bash", network)
			names := ifaces(res.out)
			if !network && !slices.Equal(names, []string{"lo"}) {
				t.Errorf("interfaces without Network: %v, want only lo", names)
			}
			if network && !slices.Equal(names, hostNames) {
				t.Errorf("interfaces with Network: %v, want the host's %v", names, hostNames)
			}
			s = probeSpec(t, ws, "safe_bash", "loopback")
			s.Network = network
			if got := run(t, v.r, s, true).out; got != "OK pong\n" {
				t.Errorf("loopback inside (Network %v): %q, want OK pong", network, got)
			}

			s = probeSpec(t, ws, "safe_bash", "connect", l.Addr().String())
			s.Network = network
			got := strings.TrimSpace(run(t, v.r, s, true).out)
			switch {
			case !network && got != "ECONNREFUSED" && got != "ENETUNREACH":
				t.Errorf("dial the host's %s without Network: %s, want ECONNREFUSED or ENETUNREACH", l.Addr(), got)
			case network && got != "OK":
				t.Errorf("dial the host's %s with Network: %s, want OK", l.Addr(), got)
			case network:
				select {
				case msg := <-accepted:
					if msg != victim.SentByConnect {
						t.Errorf("the host listener read %q", msg)
					}
				case <-time.After(watchdog):
					t.Error("the sandbox connected, but the host listener accepted nothing")
				}
			}
		}
	})
	select {
	case msg := <-accepted:
		t.Errorf("the host listener accepted one connection more than the sandboxes with Network made (%q)", msg)
	default:
	}
}

// Stdin reaches the process whichever way the caller gives it: Spec.Stdin
// (small, and larger than a pipe buffer), a Reader (streamed), an *os.File
// (the process's stdin itself), or nothing (/dev/null, so that a reader
// does not hang). A process that does not read its input still ends.
func TestStdin(t *testing.T) {
	big := make([]byte, 3<<20)
	rand.Read(big)
	tests := []struct {
		name  string
		setup func(t *testing.T, s *runner.Spec) []byte // returns what must come out
	}{
		{"Stdin small", func(t *testing.T, s *runner.Spec) []byte {
			s.Stdin = []byte("hello\nworld\n")
			return s.Stdin
		}},
		{"Stdin larger than a pipe", func(t *testing.T, s *runner.Spec) []byte {
			s.Stdin = big
			return big
		}},
		{"Input reader", func(t *testing.T, s *runner.Spec) []byte {
			s.Input = io.MultiReader(strings.NewReader("first part\n"), bytes.NewReader(big))
			return append([]byte("first part\n"), big...)
		}},
		{"Input file", func(t *testing.T, s *runner.Spec) []byte {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				pw.Write(big)
				pw.Close()
			}()
			s.Input = pr
			return big
		}},
		{"none", func(t *testing.T, s *runner.Spec) []byte {
			return nil
		}},
	}
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		for _, tt := range tests {
			s := shSpec(t, ws, "cat")
			want := tt.setup(t, &s)
			res := run(t, v.r, s, true)
			if res.ex.Code != 0 || res.out != string(want) {
				t.Errorf("%s: exit %d, %d bytes out (stderr %q), want exit 0 and the %d bytes in", tt.name, res.ex.Code, len(res.out), res.errOut, len(want))
			}
		}

		// No input at all is /dev/null.
		res := run(t, v.r, shSpec(t, ws, "readlink /proc/self/fd/0"), false)
		if res.out != "/dev/null\n" {
			t.Errorf("stdin without input: %q, want /dev/null", res.out)
		}
		// Input the process never reads does not hold the call up.
		s := shSpec(t, ws, "exit 7")
		s.Stdin = big
		if res := run(t, v.r, s, false); res.ex.Code != 7 {
			t.Errorf("unread stdin: exit %d, want 7", res.ex.Code)
		}
		// Tool mode: the input is the operation.
		s = probeSpec(t, ws, "safe_bash", "stdin")
		s.Stdin = []byte(`{"op":"read"}`)
		if res := run(t, v.r, s, true); res.out != `{"op":"read"}` || res.errOut != "copied 13 OK\n" {
			t.Errorf("tool mode stdin: %q (%q)", res.out, res.errOut)
		}
	})
}

// Stdout and stderr come back on one stream in order, or apart when asked;
// with OutputFile stdout goes to the caller's pipe itself.
func TestOutputRouting(t *testing.T) {
	r := newRunner(nil, noScopeNote, nil)
	ws := workspace(t)
	script := "echo out; echo err >&2; echo out2"

	res := run(t, r, shSpec(t, ws, script), false)
	if res.out != "out\nerr\nout2\n" {
		t.Errorf("merged: %q", res.out)
	}
	res = run(t, r, shSpec(t, ws, script), true)
	if res.out != "out\nout2\n" || res.errOut != "err\n" {
		t.Errorf("separate: stdout %q, stderr %q", res.out, res.errOut)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- string(b)
	}()
	s := shSpec(t, ws, script)
	s.OutputFile = pw
	res = run(t, r, s, true)
	if res.out != "" || res.errOut != "err\n" {
		t.Errorf("OutputFile: Output got %q (want nothing), stderr %q", res.out, res.errOut)
	}
	select {
	case out := <-got:
		if out != "out\nout2\n" {
			t.Errorf("OutputFile: the caller's pipe got %q", out)
		}
	case <-time.After(watchdog):
		t.Fatal("OutputFile still open after the call: the runner did not close its end")
	}
}

// treeScript starts a background process and a daemonized one, both holding
// stdout, says "started", and waits forever.
const treeScript = `sleep 1000 &
(setsid sleep 1000 &)
echo started
wait`

// runTree runs treeScript with stdout on a pipe of the test's own, calls
// started() once the tree is up, and after Run returns reads the pipe to its
// end: the end comes only when every process holding it is gone.
func runTree(t *testing.T, r *Runner, ctx context.Context, s runner.Spec, started func()) runner.Exit {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	s.OutputFile = pw
	s.Output = io.Discard
	type read struct {
		out string
		err error
	}
	done := make(chan read, 1)
	go func() {
		var out strings.Builder
		br := bufio.NewReader(pr)
		for {
			line, err := br.ReadString('\n')
			out.WriteString(line)
			if line == "started\n" && started != nil {
				started()
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- read{out.String(), err}
				return
			}
		}
	}()
	ex, err := r.Run(ctx, s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Bounded: a survivor would hold the pipe open for 1000 s.
	pr.SetReadDeadline(time.Now().Add(watchdog))
	res := <-done
	if res.err != nil {
		t.Fatalf("the call's stdout is still open after Run returned (%v): processes of the call survived; output %q", res.err, res.out)
	}
	t.Logf("output %q", res.out)
	return ex
}

// A call past its timeout is killed with everything it started (background
// and daemonized processes included), says TimedOut, and its scope is gone.
func TestTimeoutKillsProcessTree(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		s := shSpec(t, workspace(t), treeScript)
		s.Timeout = time.Second
		ex := runTree(t, v.r, context.Background(), s, nil)
		if !ex.TimedOut || ex.Canceled || ex.Code != 128+9 {
			t.Errorf("exit %+v, want TimedOut, killed by SIGKILL (code 137)", ex)
		}
		wantLayers(t, v, ex.Layers, "safe_bash", false)
		if v.scoped {
			if st := unitActive(t, ex.Layers.Scope); st != "inactive" && st != "failed" && st != "not-found" {
				t.Errorf("scope %s is %s after the timeout", ex.Layers.Scope, st)
			}
		}
	})
}

// A call whose context ends (the caller left) is killed with everything it
// started, says Canceled, and its scope is gone.
func TestCancelKillsProcessTree(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := shSpec(t, workspace(t), treeScript)
		var startedSeen bool
		ex := runTree(t, v.r, ctx, s, func() { startedSeen = true; cancel() })
		if !startedSeen {
			t.Fatal("the tree never started")
		}
		if !ex.Canceled || ex.TimedOut || ex.Code != 128+9 {
			t.Errorf("exit %+v, want Canceled, killed by SIGKILL (code 137)", ex)
		}
		if v.scoped {
			if st := unitActive(t, ex.Layers.Scope); st != "inactive" && st != "failed" && st != "not-found" {
				t.Errorf("scope %s is %s after the cancel", ex.Layers.Scope, st)
			}
		}
	})
}

// Limits.TasksMax bounds the number of processes of a call: through the
// scope's pids limit with a user manager, through RLIMIT_NPROC without.
func TestTasksMax(t *testing.T) {
	const want = 50
	script := `i=0
while [ $i -lt ` + strconv.Itoa(want) + ` ]; do
	sleep 1000 &
	i=$((i+1))
	echo $i
done
echo all`
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		// Control: with the default limit every fork works.
		res := run(t, v.r, shSpec(t, ws, script), true)
		if !strings.HasSuffix(res.out, "\n"+strconv.Itoa(want)+"\nall\n") {
			t.Fatalf("default limit: %q (stderr %q), want all %d started", res.out, res.errOut, want)
		}
		// Not lower: with a scope the sandbox init (a Go program with
		// its threads) is counted too while it sets up.
		const limit = 20
		s := shSpec(t, ws, script)
		s.Limits.TasksMax = limit
		res = run(t, v.r, s, true)
		lines := strings.Split(strings.TrimSpace(res.out), "\n")
		n, _ := strconv.Atoi(lines[len(lines)-1])
		// The shell and limit-1 sleeps: the next fork fails, and the
		// shell gives up.
		if n != limit-1 || res.ex.Code == 0 || !strings.Contains(res.errOut, "fork") {
			t.Errorf("TasksMax %d: exit %d, started %d (stderr %q); want %d started, then a fork failure",
				limit, res.ex.Code, n, res.errOut, limit-1)
		}
	})
}

// A user manager that is there but refuses the scope is a failed layer, not
// a missing one: the call is refused and the command never runs.
func TestScopeRefusedFailsClosed(t *testing.T) {
	scopes(t) // same preconditions
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := scope.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.Close() // a closed connection refuses every scope (scope.ErrClosed)
	r := newRunner(m, "", nil)
	ws := workspace(t)
	marker := filepath.Join(ws, "ran")
	_, err = tryRun(t, r, shSpec(t, ws, "touch "+marker), false)
	if !errors.Is(err, catalog.ErrSandbox) || !strings.Contains(fmt.Sprint(err), "systemd scope") {
		t.Errorf("scope refused: %v, want a systemd scope error wrapping %s", err, catalog.ErrSandbox.Code)
	}
	if exists(t, marker) {
		t.Error("the command ran although its scope was refused")
	}
}

// Concurrent calls on one runner (as the daemon makes them) each get their
// own sandbox and scope, and their own output.
func TestConcurrentCalls(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		const n = 6
		var wg sync.WaitGroup
		results := make([]result, n)
		errs := make([]error, n)
		for i := range n {
			ws := workspace(t)
			s := shSpec(t, ws, `echo "call $1"; cat; touch mine`)
			s.Args = append(s.Args, "sh", strconv.Itoa(i))
			s.Stdin = []byte(fmt.Sprintf("input %d\n", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out bytes.Buffer
				s.Output = &out
				ex, err := v.r.Run(context.Background(), s)
				results[i], errs[i] = result{ex: ex, out: out.String()}, err
				if _, err := os.Stat(filepath.Join(ws, "mine")); err != nil && errs[i] == nil {
					errs[i] = fmt.Errorf("the call's workspace: %v", err)
				}
			}()
		}
		wg.Wait()
		seen := map[string]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Errorf("call %d: %v", i, errs[i])
				continue
			}
			if want := fmt.Sprintf("call %d\ninput %d\n", i, i); results[i].out != want || results[i].ex.Code != 0 {
				t.Errorf("call %d: exit %d, %q; want %q", i, results[i].ex.Code, results[i].out, want)
			}
			if sc := results[i].ex.Layers.Scope; v.scoped && (sc == "" || seen[sc]) {
				t.Errorf("call %d: scope %q missing or shared", i, sc)
			}
			seen[results[i].ex.Layers.Scope] = true
		}
	})
}

// A sandbox whose setup fails is refused with the sandbox's error, which
// names the step that failed, and the command does not run.
func TestSetupErrorNamesStep(t *testing.T) {
	r := newRunner(nil, noScopeNote, nil)
	home := homeDir(t)
	for _, tt := range []struct {
		name   string
		mutate func(s *runner.Spec, ws string)
		step   string
	}{
		{"dir not in the sandbox", func(s *runner.Spec, ws string) { s.Dir = workspace(t) }, "chdir"},
		{"dir relative", func(s *runner.Spec, ws string) { s.Dir = "sub" }, "validate"},
		{"workspace missing", func(s *runner.Spec, ws string) {
			s.Workspace = filepath.Join(ws, "missing")
			s.Dir = s.Workspace
		}, "mounts"},
		{"workspace is home", func(s *runner.Spec, ws string) { s.Workspace, s.Dir = home, home }, "validate"},
		{"read-only path under /proc", func(s *runner.Spec, ws string) { s.ReadOnly = []string{"/proc/sys"} }, "validate"},
		{"exec denied by the profile", func(s *runner.Spec, ws string) {
			// no_exec's profile forbids execve: in Exec mode the command
			// cannot start, which is the filter working, not a bad program.
			s.Tool = "no_exec"
		}, "exec"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			marker := filepath.Join(ws, "ran")
			s := shSpec(t, ws, "touch "+marker)
			tt.mutate(&s, ws)
			_, err := tryRun(t, r, s, false)
			if !errors.Is(err, catalog.ErrSandbox) || errors.Is(err, catalog.ErrLaunch) {
				t.Errorf("%v, want %s (and not %s)", err, catalog.ErrSandbox.Code, catalog.ErrLaunch.Code)
			}
			if !strings.Contains(fmt.Sprint(err), "step "+tt.step) {
				t.Errorf("%v, want it to name the step %q", err, tt.step)
			}
			if exists(t, marker) {
				t.Error("the command ran")
			}
		})
	}
}

// Everything a command wrote before it exited reaches the caller, even when
// the caller is slower to take the first piece than the drain grace: the grace
// bounds waiting for leftover writers, not the caller's own pace. (Before,
// one read deadline was set when the sandbox ended, and the reads after a
// slow write failed on it with the output's end still in the pipe: "the
// sandboxed tool's output ended early" under a burst of calls.)
func TestSlowCallerGetsAllOutput(t *testing.T) {
	r := newRunner(nil, noScopeNote, nil)
	ws := workspace(t)
	// 768 KiB: more than one copy buffer (the copy comes back for the rest
	// after its stalled first write), less than the 1 MiB pipe (the shell
	// exits without waiting for the reader).
	s := shSpec(t, ws, `head -c 786432 /dev/zero | tr '\0' x; printf END`)
	w := &victim.SlowCaller{Stall: drainGrace + time.Second}
	s.Output = w
	ex, err := r.Run(context.Background(), s)
	if err != nil || ex.Code != 0 {
		t.Fatalf("Run: exit %d, %v", ex.Code, err)
	}
	if got := len(w.Bytes()); got != 786432+3 || !bytes.HasSuffix(w.Bytes(), []byte("END")) {
		t.Fatalf("the caller got %d of %d bytes", got, 786432+3)
	}
}
