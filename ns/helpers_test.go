//go:build linux

package ns_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/ns"
)

// allowAll is the smallest valid profile: every system call allowed. The
// filter is still installed (Seccomp: 2 in /proc/self/status).
var allowAll = []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`)

// startSandbox starts every sandbox of the tests: ns.Start, or a Pool's
// Start while TestPooled re-runs them (usePool).
var startSandbox = ns.Start

func homeDir(t testing.TB) string {
	t.Helper()
	h, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// workspace makes a workspace directory under $TMPDIR (which is under the
// host's /tmp, covered by the sandbox's own /tmp).
func workspace(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// homeWorkspace makes a workspace directory inside $HOME.
func homeWorkspace(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(homeDir(t), "ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

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
	out := mustRun(t, s)
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		m[k] = v
	}
	return m
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
