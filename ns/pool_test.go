//go:build linux

package ns_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/ns"
)

// usePool makes the tests' sandboxes come from p while t runs: before each
// start it waits until p has an idle init that is up, and it checks that the
// Child came from the pool (every spec without Network must).
func usePool(t *testing.T, p *ns.Pool) {
	prev := startSandbox
	startSandbox = func(s *ns.Spec, stdin, stdout, stderr *os.File) (*ns.Child, error) {
		if !p.WaitIdle(1, 10*time.Second) {
			t.Error("the pool did not refill within 10 s")
		}
		c, err := p.Start(s, stdin, stdout, stderr)
		if err == nil && !s.Network && !ns.Pooled(c) {
			t.Errorf("%q: not from the pool", s.Argv)
		}
		if err == nil && s.Network && ns.Pooled(c) {
			t.Errorf("%q: Network spec served from the pool", s.Argv)
		}
		return c, err
	}
	t.Cleanup(func() { startSandbox = prev })
}

// useReserve is usePool through Reserve and Send, the daemon's way of
// getting a call's sandbox and scope going before its spec is complete.
// A spec the pool cannot serve (Network, or one Start refuses before
// anything starts) goes to Start, as the daemon does.
func useReserve(t *testing.T, p *ns.Pool) {
	prev := startSandbox
	startSandbox = func(s *ns.Spec, stdin, stdout, stderr *os.File) (*ns.Child, error) {
		if s.Network || !filepath.IsAbs(s.Workspace) {
			return p.Start(s, stdin, stdout, stderr)
		}
		if !p.WaitIdle(1, 10*time.Second) {
			t.Error("the pool did not refill within 10 s")
		}
		c := p.Reserve(s.Workspace, stdin, stdout, stderr)
		if c == nil {
			t.Errorf("%q: nothing reserved from a pool with an idle init", s.Argv)
			return p.Start(s, stdin, stdout, stderr)
		}
		if err := c.Send(s); err != nil {
			c.Kill()
			c.Wait()
			return nil, err
		}
		return c, nil
	}
	t.Cleanup(func() { startSandbox = prev })
}

// TestPooled re-runs the behaviours that matter through a pool: a pooled
// init must be indistinguishable from a fresh one; and so must one that was
// reserved before its spec came.
func TestPooled(t *testing.T) {
	t.Run("Start", func(t *testing.T) { runPooled(t, usePool) })
	t.Run("Reserve", func(t *testing.T) { runPooled(t, useReserve) })
}

func runPooled(t *testing.T, use func(*testing.T, *ns.Pool)) {
	p := ns.NewPool(2)
	defer p.Close()
	use(t, p)
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"WorkspaceReadWrite", TestWorkspaceReadWrite},
		{"HomeHiddenExceptWorkspace", TestHomeHiddenExceptWorkspace},
		{"WorkspaceIsHomeRefused", TestWorkspaceIsHomeRefused},
		{"SystemReadOnly", TestSystemReadOnly},
		{"NothingElseOfTheHost", TestNothingElseOfTheHost},
		{"ProcShowsOnlyTheSandbox", TestProcShowsOnlyTheSandbox},
		{"Network", TestNetwork}, // isolated: pooled; opt-in: falls back
		{"Hostname", TestHostname},
		{"PrivilegesDropped", TestPrivilegesDropped},
		{"OnlyStdioInherited", TestOnlyStdioInherited},
		{"SetupErrors", TestSetupErrors},
		{"SetupErrorAfterEarlyRelease", TestSetupErrorAfterEarlyRelease},
		{"ReleaseRequired", TestReleaseRequired},
		{"KillTearsDownEverything", TestKillTearsDownEverything},
		{"NothingOutlivesTheCommand", TestNothingOutlivesTheCommand},
		{"ExitStatus", TestExitStatus},
		{"EnvironmentExact", TestEnvironmentExact},
		{"Rlimits", TestRlimits},
		{"Dev", TestDev},
		{"ToolMode", TestToolMode},
		{"ListenReachesDaemon", TestListenReachesDaemon},
		{"ListenNotInCommand", TestListenNotInCommand},
		{"SeccompEnforced", TestSeccompEnforced},
		{"RealProfiles", TestRealProfiles},
		{"HomeDirPersists", TestHomeDirPersists},
		{"HomeDirRefused", TestHomeDirRefused},
		{"Binds", TestBinds},
		{"Overlay", TestOverlay},
		{"OverlayMissingLower", TestOverlayMissingLower},
		{"OverlayErrors", TestOverlayErrors},
		{"Masks", TestMasks},
		{"MaskCoversLaterEntries", TestMaskCoversLaterEntries},
		{"MaskBehindUnsearchableDirs", TestMaskBehindUnsearchableDirs},
	} {
		t.Run(tc.name, tc.f)
	}
}

// A reserved init takes only a spec for the workspace it was reserved for;
// another one is refused and the init ends without running anything. Send
// works once, and only on a reserved Child.
func TestReserveSend(t *testing.T) {
	p := ns.NewPool(1)
	defer p.Close()
	ws, other := workspace(t), workspace(t)
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("the pool did not fill")
	}
	c := p.Reserve(ws, nil, nil, nil)
	if c == nil {
		t.Fatal("nothing reserved")
	}
	s := spec(t, other, "touch", "ran")
	s.Dir = other
	var se *ns.SetupError
	if err := c.Send(s); !errors.As(err, &se) || se.Step != ns.StepValidate {
		t.Fatalf("Send of another workspace's spec: %v, want a validate error", err)
	}
	c.Release()
	if code, _, err := c.Wait(); err == nil || code != -1 {
		t.Fatalf("the init refused a spec and still ended with %d, %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(other, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something ran: %v", err)
	}
	if err := c.Send(spec(t, ws, "true")); err == nil {
		t.Error("a second Send was accepted")
	}
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("the pool did not refill")
	}
	hostNet := p.Reserve(ws, nil, nil, nil)
	if hostNet == nil {
		t.Fatal("nothing reserved")
	}
	s = spec(t, ws, "true")
	s.Network = true
	if err := hostNet.Send(s); !errors.As(err, &se) || se.Step != ns.StepValidate {
		t.Errorf("Send of a host-network spec to a pooled init: %v, want a validate error", err)
	}
	hostNet.Kill()
	hostNet.Wait()
	fresh, err := ns.Start(spec(t, ws, "true"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Send(spec(t, ws, "true")); err == nil {
		t.Error("Send to a Child that was not reserved was accepted")
	}
	fresh.Release()
	fresh.Wait()
	var nilPool *ns.Pool
	if nilPool.Reserve(ws, nil, nil, nil) != nil {
		t.Error("a nil Pool reserved something")
	}
}

// Without the daemon-side compile, the init compiles the profile itself (the
// fallback path), pooled or not.
func TestSeccompCompiledInInit(t *testing.T) {
	prev := ns.SetPrecompile(false)
	defer ns.SetPrecompile(prev)
	t.Run("fresh", func(t *testing.T) {
		TestSeccompEnforced(t)
		TestPrivilegesDropped(t)
	})
	t.Run("pooled", func(t *testing.T) {
		p := ns.NewPool(1)
		defer p.Close()
		usePool(t, p)
		TestSeccompEnforced(t)
		TestPrivilegesDropped(t)
	})
}

// fdScript prints what the descriptors 0-2 refer to and their flags, then
// reads a line from stdin and writes to stderr.
const fdScript = `for i in 0 1 2; do printf '%s %s ' $i "$(readlink /proc/$$/fd/$i)"; grep '^flags' /proc/$$/fdinfo/$i | tr -d '\t'; done; read line; echo "stdin: $line"; echo "to stderr" >&2`

// The command's stdio is the caller's: output arrives on the caller's pipes,
// stdin is read from the caller's pipe, and the descriptors have the same
// flags (blocking) as with Start.
func TestPoolStdio(t *testing.T) {
	ws := workspace(t)
	p := ns.NewPool(1)
	defer p.Close()

	runIt := func(start func(*ns.Spec, *os.File, *os.File, *os.File) (*ns.Child, error)) (out, errOut string, pooled bool, pipes [3]uint64) {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		errR, errW, _ := os.Pipe()
		for i, f := range []*os.File{inR, outW, errW} {
			var st unix.Stat_t
			unix.Fstat(int(f.Fd()), &st)
			pipes[i] = st.Ino
		}
		c, err := start(spec(t, ws, "sh", "-c", fdScript), inR, outW, errW)
		inR.Close()
		outW.Close()
		errW.Close()
		if err != nil {
			t.Fatal(err)
		}
		pooled = ns.Pooled(c)
		go func() { inW.Write([]byte("hello from the caller\n")); inW.Close() }()
		var wg sync.WaitGroup
		var o, e bytes.Buffer
		wg.Add(2)
		go func() { defer wg.Done(); io.Copy(&o, outR) }()
		go func() { defer wg.Done(); io.Copy(&e, errR) }()
		if err := c.Release(); err != nil {
			t.Fatal(err)
		}
		if code, _, err := c.Wait(); code != 0 || err != nil {
			t.Fatalf("code %d err %v", code, err)
		}
		wg.Wait()
		outR.Close()
		errR.Close()
		return o.String(), e.String(), pooled, pipes
	}
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("pool not ready")
	}
	out, errOut, pooled, pipes := runIt(p.Start)
	if !pooled {
		t.Fatal("not from the pool")
	}
	t.Logf("pooled: %q", out)
	fields := strings.Fields(out)
	// "0 pipe:[N] flags:... 1 pipe:[N] flags:... 2 pipe:[N] flags:... stdin: ..."
	if len(fields) < 9 {
		t.Fatalf("output %q", out)
	}
	for i := range 3 {
		if want := fmt.Sprintf("pipe:[%d]", pipes[i]); fields[3*i+1] != want {
			t.Errorf("fd %d is %s, want the caller's %s", i, fields[3*i+1], want)
		}
	}
	if !strings.Contains(out, "stdin: hello from the caller") {
		t.Errorf("stdin not read from the caller's pipe: %q", out)
	}
	if errOut != "to stderr\n" {
		t.Errorf("stderr %q", errOut)
	}

	// Same flags as a fresh sandbox.
	freshOut, _, _, _ := runIt(ns.Start)
	flags := func(s string) []string {
		var f []string
		for _, w := range strings.Fields(s) {
			if strings.HasPrefix(w, "flags:") {
				f = append(f, w)
			}
		}
		return f
	}
	if a, b := flags(out), flags(freshOut); !slices.Equal(a, b) {
		t.Errorf("descriptor flags pooled %v, fresh %v", a, b)
	}

	// nil stdio: /dev/null, as with Start.
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("pool not ready")
	}
	c, err := p.Start(spec(t, ws, "sh", "-c", `x=$(readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2); echo "$x" > links`), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	if code, _, err := c.Wait(); code != 0 || err != nil || !ns.Pooled(c) {
		t.Fatalf("code %d err %v pooled %v", code, err, ns.Pooled(c))
	}
	b, _ := os.ReadFile(filepath.Join(ws, "links"))
	if got := strings.Join(lines(string(b)), ","); got != "/dev/null,/dev/null,/dev/null" {
		t.Errorf("nil stdio: %q", got)
	}
}

func TestPoolNetworkFallsBack(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	p := ns.NewPool(1)
	defer p.Close()
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("pool not ready")
	}
	s := toolSpec(t, workspace(t), "connect", l.Addr().String())
	s.Network = true
	outR, outW, _ := os.Pipe()
	c, err := p.Start(s, nil, outW, nil)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	if ns.Pooled(c) {
		t.Error("a Network spec got a pooled init (which has its own network namespace)")
	}
	c.Release()
	out, _ := io.ReadAll(outR)
	outR.Close()
	if code, _, err := c.Wait(); code != 0 || err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Errorf("code %d err %v out %q", code, err, out)
	}
	if got := len(p.IdlePids()); got != 1 {
		t.Errorf("the idle init was used or lost: %d idle", got)
	}
}

// Eight claims at once from a pool of eight: each gets its own init, and
// each works. Then eight at once from a pool of two: some fall back, all
// work.
func TestPoolConcurrentClaims(t *testing.T) {
	ws := workspace(t)
	for _, size := range []int{8, 2} {
		t.Run(fmt.Sprintf("size%d", size), func(t *testing.T) {
			p := ns.NewPool(size)
			defer p.Close()
			if !p.WaitIdle(size, 20*time.Second) {
				t.Fatal("pool not ready")
			}
			const n = 8
			type res struct {
				i, pid int
				pooled bool
				out    string
				err    error
			}
			results := make(chan res, n)
			var ready sync.WaitGroup
			ready.Add(n)
			gate := make(chan struct{})
			for i := range n {
				go func() {
					ready.Done()
					<-gate
					outR, outW, _ := os.Pipe()
					c, err := p.Start(spec(t, ws, "sh", "-c", fmt.Sprintf("echo %d > s%d-%d; echo $$ $(cat /proc/sys/kernel/hostname)", i, size, i)), nil, outW, nil)
					outW.Close()
					if err != nil {
						outR.Close()
						results <- res{i: i, err: err}
						return
					}
					c.Release()
					b, _ := io.ReadAll(outR)
					outR.Close()
					code, _, werr := c.Wait()
					if werr == nil && code != 0 {
						werr = fmt.Errorf("exit %d", code)
					}
					results <- res{i: i, pid: c.Pid(), pooled: ns.Pooled(c), out: strings.TrimSpace(string(b)), err: werr}
				}()
			}
			ready.Wait()
			close(gate)
			pids := map[int]bool{}
			pooled := 0
			for range n {
				r := <-results
				if r.err != nil {
					t.Errorf("sandbox %d: %v", r.i, r.err)
					continue
				}
				if r.out != "1 contextd" {
					t.Errorf("sandbox %d: %q, want pid 1 and its own hostname", r.i, r.out)
				}
				if pids[r.pid] {
					t.Errorf("sandbox %d: pid %d handed out twice", r.i, r.pid)
				}
				pids[r.pid] = true
				if r.pooled {
					pooled++
				}
			}
			for i := range n {
				b, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("s%d-%d", size, i)))
				if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(i) {
					t.Errorf("s%d-%d: %q %v", size, i, b, err)
				}
			}
			t.Logf("%d of %d from the pool", pooled, n)
			// Both sizes: every idle init is claimed; with two, a refill
			// may finish during the burst and serve one more.
			if pooled < size {
				t.Errorf("%d pooled of %d with a pool of %d", pooled, n, size)
			}
		})
	}
}

// children lists the processes whose parent is this one, with their state.
func children() map[int]string {
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	out := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			out[pid] = f[0]
		}
	}
	return out
}

func openFds() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		t, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+" "+t)
	}
	return out
}

// Close kills and reaps the idle inits: no process (zombies included) and no
// descriptor is left behind, and a Start after Close still works.
func TestPoolClose(t *testing.T) {
	before, fdsBefore := children(), openFds()
	p := ns.NewPool(3)
	if !p.WaitIdle(3, 20*time.Second) {
		t.Fatal("pool not ready")
	}
	idle := p.IdlePids()
	kids := children()
	for _, pid := range idle {
		if _, ok := kids[pid]; !ok {
			t.Errorf("idle init %d is not a child of the test process", pid)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if got := strings.ReplaceAll(string(cmdline), "\x00", " "); got != "contextd-sandbox-init pooled " {
			t.Errorf("idle init %d: cmdline %q", pid, got)
		}
	}
	// A claimed init is not the pool's: it survives Close.
	c, err := p.Start(spec(t, workspace(t), "sleep", "1000"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	p.Close()
	p.Close() // idempotent
	for pid, state := range children() {
		if _, ok := before[pid]; !ok && pid != c.Pid() {
			t.Errorf("process %d (state %s) left behind by Close", pid, state)
		}
	}
	if err := syscall.Kill(c.Pid(), 0); err != nil {
		t.Errorf("the claimed sandbox did not survive Close: %v", err)
	}
	c.Kill()
	c.Wait()
	if fdsAfter := openFds(); len(fdsAfter) != len(fdsBefore) {
		t.Errorf("descriptors before %q\nafter %q", fdsBefore, fdsAfter)
	}
	// Closed: Start starts fresh.
	c, err = p.Start(spec(t, workspace(t), "true"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	if code, _, err := c.Wait(); code != 0 || err != nil || ns.Pooled(c) {
		t.Errorf("Start after Close: %d %v pooled %v", code, err, ns.Pooled(c))
	}
	// Disabled pools are plain Start.
	for _, p := range []*ns.Pool{ns.NewPool(0), nil} {
		c, err := p.Start(spec(t, workspace(t), "true"), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
		if code, _, err := c.Wait(); code != 0 || err != nil || ns.Pooled(c) {
			t.Errorf("disabled pool: %d %v pooled %v", code, err, ns.Pooled(c))
		}
		p.Close()
	}
}

// An idle init that dies is reaped and replaced.
func TestPoolReplacesDeadInit(t *testing.T) {
	p := ns.NewPool(1)
	defer p.Close()
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("pool not ready")
	}
	victim := p.IdlePids()[0]
	syscall.Kill(victim, syscall.SIGKILL)
	waitFor(t, "the dead init to be reaped", func() bool {
		_, ok := children()[victim]
		return !ok
	})
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	if got := p.IdlePids(); len(got) != 1 || got[0] == victim {
		t.Fatalf("idle %v", got)
	}
	r := run(t, spec(t, workspace(t), "true"))
	if r.err != nil || r.code != 0 {
		t.Fatalf("%+v", r)
	}
}

// Pooled inits are started on a thread that never exits: the end of the
// thread that made the pool, or of one that claimed, kills nothing.
func TestPoolSurvivesThreadExit(t *testing.T) {
	pc := make(chan *ns.Pool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		p := ns.NewPool(2)
		p.WaitIdle(2, 10*time.Second)
		pc <- p
	}()
	p := <-pc
	defer p.Close()
	ws := workspace(t)
	cc := make(chan *ns.Child)
	go func() {
		runtime.LockOSThread()
		c, err := p.Start(spec(t, ws, "sh", "-c", "sleep 0.3; echo alive > alive"), nil, nil, nil)
		if err != nil {
			t.Error(err)
		}
		cc <- c
	}()
	c := <-cc
	if c == nil {
		t.FailNow()
	}
	c.Release()
	if code, sig, err := c.Wait(); code != 0 || sig || err != nil {
		t.Fatalf("claimed init after its claimer's thread exited: %d %v %v", code, sig, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "alive")); string(b) != "alive\n" {
		t.Errorf("alive: %q", b)
	}
	if got := len(p.IdlePids()); got < 1 {
		t.Errorf("idle inits died with the thread that created the pool: %d left", got)
	}
	r := run(t, spec(t, ws, "true"))
	if r.err != nil || r.code != 0 {
		t.Fatalf("%+v", r)
	}
}

// poolHelper is this binary as a stand-in daemon (CTXD_NS_POOL_HELPER=1):
// it fills a pool, starts one pooled sandbox running sleep, prints the
// pids, and waits to be killed.
func poolHelper() int {
	p := ns.NewPool(2)
	if !p.WaitIdle(2, 10*time.Second) {
		return die("pool not ready")
	}
	idle := p.IdlePids()
	ws := os.Getenv("CTXD_NS_POOL_WS")
	c, err := p.Start(&ns.Spec{Argv: []string{"sleep", "1000"}, Env: []string{"PATH=/usr/bin:/bin"}, Workspace: ws, Seccomp: allowAll}, nil, nil, nil)
	if err != nil {
		return die("start: %v", err)
	}
	if err := c.Ready(); err != nil {
		return die("ready: %v", err)
	}
	c.Release()
	p.WaitIdle(2, 10*time.Second)
	fmt.Println(idle[0], idle[1], c.Pid(), strings.Trim(fmt.Sprint(p.IdlePids()), "[]"))
	select {}
}

func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// When the daemon dies, its idle inits and the sandboxes it claimed die too
// (Pdeathsig).
func TestPoolDiesWithTheDaemon(t *testing.T) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), "CTXD_NS_POOL_HELPER=1", "CTXD_NS_POOL_WS="+workspace(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	t.Logf("helper %d: idle, claimed, refilled: %v", cmd.Process.Pid, pids)
	if len(pids) < 4 {
		t.Fatalf("helper printed %q", line)
	}
	for _, pid := range pids {
		if gone(pid) {
			t.Fatalf("pid %d not running before the helper died", pid)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the helper's inits and sandbox to die", func() bool {
		for _, pid := range pids {
			if !gone(pid) {
				return false
			}
		}
		return true
	})
}

// nested re-runs the calling test in a user and mount namespace of its own
// (where it may mount, as a daemon's namespace may change under it) and
// reports false; in that re-run it reports true.
func nested(t *testing.T) bool {
	if os.Getenv("CTXD_NS_NESTED") != "" {
		return true
	}
	cmd := exec.Command("/proc/self/exe", "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "CTXD_NS_NESTED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("nested run: %v\n%s", err, out)
	}
	t.Logf("nested run:\n%s", out)
	return false
}

// A pooled init's mount namespace is a copy made when it started: after the
// daemon's mount table changes, the pool must not hand out an older init.
func TestPoolStaleMounts(t *testing.T) {
	if !nested(t) {
		return
	}
	p := ns.NewPool(1)
	defer p.Close()
	mountTmpfs := func(dir string) {
		t.Helper()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"); err != nil {
			t.Fatalf("mount %s: %v", dir, err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	}
	catMarker := func(ws, want string, wantPooled bool) {
		t.Helper()
		outR, outW, _ := os.Pipe()
		c, err := p.Start(spec(t, ws, "cat", "marker"), nil, outW, nil)
		outW.Close()
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
		b, _ := io.ReadAll(outR)
		outR.Close()
		code, _, err := c.Wait()
		if err != nil || code != 0 || string(b) != want {
			t.Errorf("cat marker in %s: code %d err %v out %q, want %q", ws, code, err, b, want)
		}
		if ns.Pooled(c) != wantPooled {
			t.Errorf("pooled %v, want %v", ns.Pooled(c), wantPooled)
		}
	}

	// 1. A mount over the workspace after the pool's init started.
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "marker"), []byte("under"), 0o644)
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("pool not ready")
	}
	stale := p.IdlePids()[0]
	mountTmpfs(ws)
	os.WriteFile(filepath.Join(ws, "marker"), []byte("over"), 0o644)
	catMarker(ws, "over", false)
	waitFor(t, "the stale init to be reaped", func() bool { return gone(stale) })
	// The refill started after the mount: pooled, and current.
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	catMarker(ws, "over", true)

	// 2. A mount below the workspace: the workspace itself is the same
	// directory in a stale init; the mount-table change alone tells.
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	sub := filepath.Join(ws, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "marker"), []byte("under"), 0o644)
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	mountTmpfs(sub)
	os.WriteFile(filepath.Join(sub, "marker"), []byte("sub"), 0o644)
	s := spec(t, ws, "cat", "marker")
	s.Dir = sub
	outR, outW, _ := os.Pipe()
	c, err := p.Start(s, nil, outW, nil)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	b, _ := io.ReadAll(outR)
	outR.Close()
	if code, _, err := c.Wait(); code != 0 || err != nil || string(b) != "sub" || ns.Pooled(c) {
		t.Errorf("submount: code %d err %v out %q pooled %v, want \"sub\" from a fresh init", code, err, b, ns.Pooled(c))
	}

	// 3. A workspace that exists only on a new mount (ENOENT in a stale
	// init), with the mount-table change already consumed: the workspace
	// check alone must catch it.
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	base := workspace(t)
	mountTmpfs(base)
	ws2 := filepath.Join(base, "project")
	os.Mkdir(ws2, 0o755)
	os.WriteFile(filepath.Join(ws2, "marker"), []byte("new"), 0o644)
	p.ForgetMountChanges()
	catMarker(ws2, "new", false)

	// 4. Unrelated: a workspace that really is missing fails the same way,
	// pooled or not.
	if !p.WaitIdle(1, 10*time.Second) {
		t.Fatal("not refilled")
	}
	c, err = p.Start(spec(t, filepath.Join(base, "missing"), "true"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); !errorsIsENOENT(err) || !ns.Pooled(c) {
		t.Errorf("missing workspace: %v (pooled %v), want ENOENT from the pooled init", err, ns.Pooled(c))
	}
	c.Kill()
	c.Wait()
}

func errorsIsENOENT(err error) bool {
	se, ok := err.(*ns.SetupError)
	return ok && se.Errno == syscall.ENOENT && se.Step == ns.StepMounts
}
