//go:build linux

package ns_test

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/ns"
)

// allowAll is the smallest valid profile: every system call allowed. The
// filter is still installed (Seccomp: 2 in /proc/self/status).
var allowAll = []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`)

// startSandbox starts every sandbox of the tests: ns.Start, or a Pool's
// Start while TestPooled re-runs them (usePool).
var startSandbox = ns.Start

// homeDir, workspace and homeWorkspace are the directories of a sandbox:
// canonical, the workspaces removed after the test.
var (
	homeDir       = victim.Home
	workspace     = victim.Workspace
	homeWorkspace = victim.HomeWorkspace
)

func spec(t testing.TB, ws string, argv ...string) *ns.Spec {
	return &ns.Spec{
		Argv:      argv,
		Env:       []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + homeDir(t), "LANG=C"},
		Workspace: ws,
		Home:      homeDir(t),
		Seccomp:   allowAll,
	}
}

func toolSpec(t testing.TB, ws string, argv ...string) *ns.Spec {
	s := spec(t, ws, argv...)
	s.Mode = ns.ModeTestProbe
	return s
}

type result struct {
	out, errOut string
	code        int
	signaled    bool
	err         error
}

// run starts the sandbox, releases it at once and waits for it.
func run(t testing.TB, s *ns.Spec) result {
	t.Helper()
	return runWith(t, s, func(*ns.Child) {})
}

// runWith calls before(c) between Start and Release.
func runWith(t testing.TB, s *ns.Spec, before func(*ns.Child)) result {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, err := startSandbox(s, nil, outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return result{code: -1, err: err}
	}
	watchdog := time.AfterFunc(30*time.Second, func() { c.Kill() })
	defer watchdog.Stop()

	var wg sync.WaitGroup
	var out, errOut bytes.Buffer
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&out, outR); outR.Close() }()
	go func() { defer wg.Done(); io.Copy(&errOut, errR); errR.Close() }()

	before(c)
	c.Release()
	code, sig, werr := c.Wait()
	wg.Wait()
	return result{out: out.String(), errOut: errOut.String(), code: code, signaled: sig, err: werr}
}

// mustRun runs and fails the test unless the command exited 0.
func mustRun(t testing.TB, s *ns.Spec) string {
	t.Helper()
	r := run(t, s)
	if r.err != nil || r.code != 0 {
		t.Fatalf("%q: code %d, err %v\nstdout: %s\nstderr: %s", s.Argv, r.code, r.err, r.out, r.errOut)
	}
	return r.out
}

// probe runs this test binary as "contextd-tool" in the sandbox and returns
// its output as a map from the first word of each line to the rest.
func probe(t testing.TB, s *ns.Spec) map[string]string {
	t.Helper()
	s.Mode = ns.ModeTestProbe
	return victim.Fields(mustRun(t, s))
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
