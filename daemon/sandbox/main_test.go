package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/sandboxinfo"
)

// These tests run the real Runner: contextd's sandbox init (this test binary,
// re-executed by package ns), the real seccomp profiles, and real transient
// scopes on a real systemd user manager. Nothing is mocked.
//
// Like daemon/scope's tests, they run as an unprivileged user (the sandbox is
// for an unprivileged daemon; root would hide the permission problems a real
// user hits, and RLIMIT_NPROC does not bind root):
//
//   - run as root (CI, `make test`), TestMain boots a user manager for the
//     test user ctxd-sandbox with e2e/usermgr.sh, stages a copy of the test
//     binary the user can execute, runs it as that user inside the manager's
//     mount namespace and cgroup subtree with CONTEXTD_SANDBOX_INNER=1 and
//     the same -test.* flags, passes its output and exit status through, and
//     stops the manager again (CONTEXTD_SANDBOX_KEEP=1 keeps it for reruns);
//   - run as a normal user (a workstation, or the inner run above), the tests
//     use that user's manager; the tests that need one fail, not skip, when
//     there is none. The Runner's no-scope path (Scopes nil) needs no systemd
//     at all and is tested in every run.
//
// The sandbox's own function (ns.Hooks.Func, what runner.Tool mode runs) is
// probeMain below: victim's probes, which print one line per check.
const (
	innerEnv = "CONTEXTD_SANDBOX_INNER"
	keepEnv  = "CONTEXTD_SANDBOX_KEEP"
	testUser = "ctxd-sandbox"
)

func TestMain(m *testing.M) {
	// 1. The sandbox init re-executes this binary: become the init.
	ns.ReexecWith(ns.Hooks{Func: probeMain})
	// 1b. Started as a plugin by TestPluginRunsInSandbox: serve its tool.
	servePluginIfAsked()
	// 2. As root: run the same tests again as an unprivileged user under a
	// user manager of its own.
	victim.UserManager{Name: "sandbox tests", User: testUser, InnerEnv: innerEnv, KeepEnv: keepEnv}.IfRoot()
	code := m.Run()
	if sharedScopes != nil {
		sharedScopes.Close()
	}
	os.Exit(code)
}

// probeMain is the sandbox's function in runner.Tool mode: it runs in the
// sandbox init after every layer is in place (seccomp included) and prints
// one line per check (victim.Probe).
//
// It ends the process itself: returning would exit through the race
// detector's exit hook, which sleeps a second (atexit_sleep_ms) in every
// sandbox of a -race run. Its output is written already (os.Stdout is not
// buffered).
func probeMain(args []string) int {
	code := victim.Probe(args)
	unix.Exit(code)
	return code
}

// ---------------------------------------------------------------------------
// Helpers of the tests.

// watchdog is the Timeout of every spec whose test is not about timeouts:
// only a hung sandbox reaches it, and the helpers then fail the test.
const watchdog = 60 * time.Second

// noScopeNote is the ScopeNote of the runners without a user manager.
const noScopeNote = "test: no user manager on purpose"

var (
	scopesOnce   sync.Once
	sharedScopes *scope.Manager
	scopesErr    error
)

// connectScopes connects to the user manager once; the connection is shared
// by the tests like the daemon shares one across calls.
func connectScopes() (*scope.Manager, error) {
	scopesOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sharedScopes, scopesErr = scope.Connect(ctx)
	})
	return sharedScopes, scopesErr
}

// scopes is the shared user manager connection; without one the test
// fails (it is about the scope layer).
func scopes(t testing.TB) *scope.Manager {
	t.Helper()
	m, err := connectScopes()
	if err != nil {
		t.Fatalf("no systemd user manager to test the scope layer against: %v\n"+
			"(run the tests as root to have them boot one for the user %s via e2e/usermgr.sh, "+
			"or as a user with a running `systemd --user`)", err, testUser)
	}
	return m
}

// variant is one configuration of the Runner.
type variant struct {
	name   string
	r      *Runner // nil: a scoped variant on a machine without a user manager
	scoped bool
}

// variants are the runner's configurations: without a user manager (Scopes
// nil: namespaces, seccomp and rlimits only; no systemd needed) and with
// one, each with and without a warm pool (the daemon's configuration is
// scope+pool).
func variants(t *testing.T) []variant {
	t.Helper()
	pool := func() *ns.Pool {
		p := ns.NewPool(1)
		t.Cleanup(p.Close)
		return p
	}
	vs := []variant{
		{name: "noscope", r: newRunner(nil, noScopeNote, nil)},
		{name: "noscope+pool", r: newRunner(nil, noScopeNote, pool())},
		{name: "scope", scoped: true},
		{name: "scope+pool", scoped: true},
	}
	if m, err := connectScopes(); err == nil {
		vs[2].r = newRunner(m, "", nil)
		vs[3].r = newRunner(m, "", pool())
	}
	return vs
}

// forVariants runs f as a subtest for each variant. The scoped ones fail
// without a user manager; the others run anyway.
func forVariants(t *testing.T, f func(t *testing.T, v variant)) {
	t.Helper()
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			if v.r == nil {
				scopes(t)
			}
			f(t, v)
		})
	}
}

// runnerSeq gives each Runner of the tests a range of call numbers of its
// own. A scope is named contextd-<tool>-<pid>-<n>, n counted per Runner (the
// daemon has one), and systemd unloads an emptied scope in its own time: a
// second Runner counting from 1 again could meet a unit of the first one
// still loaded ("already loaded"), and fail for a reason of the tests'
// making.
var runnerSeq atomic.Uint64

func newRunner(m *scope.Manager, note string, pool *ns.Pool) *Runner {
	r := &Runner{Scopes: m, ScopeNote: note, Pool: pool}
	r.seq.Store(runnerSeq.Add(1 << 20))
	return r
}

// homeDir, workspace and homeWorkspace are the directories of a sandbox:
// canonical, the workspaces removed after the test.
var (
	homeDir       = victim.Home
	workspace     = victim.Workspace
	homeWorkspace = victim.HomeWorkspace
)

// shSpec is `sh -c script` under safe_bash, in ws.
func shSpec(t testing.TB, ws, script string) runner.Spec {
	t.Helper()
	home := homeDir(t)
	return runner.Spec{
		Tool: "safe_bash", Mode: runner.Exec,
		Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Dir: ws, Workspace: ws, Home: home,
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LANG=C"},
		Timeout: watchdog,
	}
}

// probeSpec runs probeMain with args in Tool mode, under tool's profile.
func probeSpec(t testing.TB, ws, tool string, args ...string) runner.Spec {
	t.Helper()
	home := homeDir(t)
	return runner.Spec{
		Tool: tool, Mode: runner.Tool, Args: args,
		Dir: ws, Workspace: ws, Home: home,
		Env:     []string{"PATH=/usr/bin:/bin", "HOME=" + home},
		Timeout: watchdog,
	}
}

type result struct {
	ex          runner.Exit
	out, errOut string
}

// run runs s through r with stdout in Output (and stderr in Stderr, when
// separate is set), and fails the test if r could not run it or the
// watchdog fired.
func run(t testing.TB, r *Runner, s runner.Spec, separate bool) result {
	t.Helper()
	res, err := tryRun(t, r, s, separate)
	if err != nil {
		t.Fatalf("Run(%s %q): %v", s.Tool, s.Args, err)
	}
	return res
}

func tryRun(t testing.TB, r *Runner, s runner.Spec, separate bool) (result, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	s.Output = &out
	if separate {
		s.Stderr = &errOut
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*watchdog)
	defer cancel()
	ex, err := r.Run(ctx, s)
	if ex.TimedOut || ex.Canceled {
		t.Fatalf("Run(%s %q) hit the test's watchdog: %+v\noutput: %s", s.Tool, s.Args, ex, out.String())
	}
	return result{ex: ex, out: out.String(), errOut: errOut.String()}, err
}

// probeLines runs probeMain and maps the first word of each output line to
// the rest; the probe must exit 0.
func probeLines(t testing.TB, r *Runner, s runner.Spec) map[string]string {
	t.Helper()
	res := run(t, r, s, true)
	if res.ex.Code != 0 {
		t.Fatalf("probe %q under %s exited %d: %s%s", s.Args, s.Tool, res.ex.Code, res.out, res.errOut)
	}
	return victim.Fields(res.out)
}

// profileSource is where the profile in force for tool comes from, as
// profiles.Load finds it (the runner must report the same).
func profileSource(t testing.TB, tool string) string {
	t.Helper()
	_, source, err := profiles.Load(tool)
	if err != nil {
		t.Fatalf("profile of %s: %v", tool, err)
	}
	return source
}

// wantLayers checks the layers a successful call reported.
func wantLayers(t testing.TB, v variant, l sandboxinfo.Layers, tool string, network bool) {
	t.Helper()
	if !l.Namespaces {
		t.Errorf("%s: Layers.Namespaces false", v.name)
	}
	if want := profileSource(t, tool); l.Seccomp != want {
		t.Errorf("%s: Layers.Seccomp %q, want %q", v.name, l.Seccomp, want)
	}
	if l.Network != network {
		t.Errorf("%s: Layers.Network %v, want %v", v.name, l.Network, network)
	}
	if v.scoped {
		if !strings.HasPrefix(l.Scope, "contextd-"+tool+"-") || !strings.HasSuffix(l.Scope, ".scope") || l.ScopeNote != "" {
			t.Errorf("%s: Layers.Scope %q, ScopeNote %q; want contextd-%s-*.scope and no note", v.name, l.Scope, l.ScopeNote, tool)
		}
	} else if l.Scope != "" || l.ScopeNote != v.r.ScopeNote {
		t.Errorf("%s: Layers.Scope %q, ScopeNote %q; want no scope and the note %q", v.name, l.Scope, l.ScopeNote, v.r.ScopeNote)
	}
}

// overrideProfiles points the profile search at a fresh directory holding
// files (name -> content) and returns its path. Not for parallel tests.
func overrideProfiles(t *testing.T, files map[string]string) string {
	t.Helper()
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "contextd", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", cfg)
	return dir
}

// allowAll is the smallest valid profile: every system call allowed (the
// filter is still installed).
const allowAll = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`

// exists says whether p exists on the host.
func exists(t testing.TB, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// unitActive is the ActiveState of unit on the user manager, or "not-found"
// when it is not loaded, asked over a connection of the test's own.
func unitActive(t testing.TB, unit string) string {
	t.Helper()
	scopes(t) // same preconditions, better message
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sd.NewUserConnectionContext(ctx)
	if err != nil {
		t.Fatalf("second connection to the user manager: %v", err)
	}
	defer c.Close()
	st, err := c.ListUnitsByNamesContext(ctx, []string{unit})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) == 0 || st[0].LoadState == "not-found" {
		return "not-found"
	}
	return st[0].ActiveState
}

// waitUnitGone waits (bounded) until unit is no longer loaded.
func waitUnitGone(t testing.TB, unit string) {
	t.Helper()
	deadline := time.Now().Add(watchdog)
	for unitActive(t, unit) != "not-found" {
		if time.Now().After(deadline) {
			t.Fatalf("%s still loaded after %v", unit, watchdog)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
