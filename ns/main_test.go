//go:build linux

package ns_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/ns"
)

// testUser runs the tests when they are started as root (CI is root): the
// sandbox is for an unprivileged daemon, and root would hide the permission
// problems a real user hits. innerEnv marks that re-run.
const (
	testUser = "ctxd-ns"
	innerEnv = "CTXD_NS_INNER"
)

// rootOwnedEnv names, in the unprivileged run, the directory of root-owned
// files the root phase made for it (see makeRootOwned): files of an owner
// the sandbox's user namespace does not map.
const rootOwnedEnv = "CTXD_NS_ROOT_OWNED"

func TestMain(m *testing.M) {
	// 1. The sandbox init re-executes this binary: become the init.
	ns.ReexecWith(ns.Hooks{Func: victim.Probe})
	// For the benchmark: how long this binary takes to start and exit.
	if os.Getenv("CTXD_NS_NOOP") == "1" {
		os.Exit(0)
	}
	// A stand-in daemon for TestPoolDiesWithTheDaemon.
	if os.Getenv("CTXD_NS_POOL_HELPER") == "1" {
		os.Exit(poolHelper())
	}
	// 2. A test probe (ModeTestProbe) executes this binary as "contextd-tool".
	if filepath.Base(os.Args[0]) == ns.TestProbeArgv0 {
		os.Exit(victim.Probe(os.Args[1:]))
	}
	// 3. As root: run the same tests again as an unprivileged user.
	victim.Unprivileged{Name: "ns tests", User: testUser, InnerEnv: innerEnv, Prepare: prepareRoot}.IfRoot()
	os.Exit(m.Run())
}

func die(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "ns tests: "+format+"\n", args...)
	return 1
}

// prepareRoot gives the test user a /run/user/UID with a stand-in daemon
// socket (so that a test can check that it is not reachable from the
// sandbox) and the root-owned files of makeRootOwned.
func prepareRoot(a victim.Account, s *victim.Staged) (env []string, undo func(), err error) {
	var undos []func()
	undo = func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	fail := func(err error) ([]string, func(), error) {
		undo()
		return nil, nil, err
	}
	runDir := "/run/user/" + strconv.Itoa(a.UID)
	if _, err := os.Stat(runDir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(runDir, 0o700); err != nil {
			return fail(err)
		}
		undos = append(undos, func() { os.RemoveAll(runDir) })
		if err := os.Chown(runDir, a.UID, a.GID); err != nil {
			return fail(err)
		}
	}
	sockDir := filepath.Join(runDir, "contextd")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		return fail(err)
	}
	if err := os.Chown(sockDir, a.UID, a.GID); err != nil {
		return fail(err)
	}
	sock := filepath.Join(sockDir, "contextd.sock")
	if _, err := os.Stat(sock); errors.Is(err, os.ErrNotExist) {
		l, err := net.Listen("unix", sock)
		if err != nil {
			return fail(err)
		}
		undos = append(undos, func() { l.Close() })
		if err := os.Chown(sock, a.UID, a.GID); err != nil {
			return fail(err)
		}
	}
	rootOwned, err := makeRootOwned(s.Dir)
	if err != nil {
		return fail(fmt.Errorf("root-owned files for the tests: %w", err))
	}
	return []string{"XDG_RUNTIME_DIR=" + runDir, rootOwnedEnv + "=" + rootOwned}, undo, nil
}

// makeRootOwned makes, as root, parent/root-owned with what the tests
// would otherwise take from the host: skel/.profile, a file others may read
// (like /etc/skel's), and locked/.ssh/id in a directory others cannot
// search (like /root).
func makeRootOwned(parent string) (string, error) {
	root := filepath.Join(parent, "root-owned")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{root, 0o755}, {filepath.Join(root, "skel"), 0o755}, {filepath.Join(root, "locked"), 0o700}, {filepath.Join(root, "locked", ".ssh"), 0o700}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			return "", err
		}
		if err := os.Chmod(d.path, d.mode); err != nil { // past the umask
			return "", err
		}
	}
	for _, f := range []struct {
		path, data string
		mode       os.FileMode
	}{{filepath.Join(root, "skel", ".profile"), "# root's, read-only to others\n", 0o644}, {filepath.Join(root, "locked", ".ssh", "id"), "SECRET-root\n", 0o600}} {
		if err := os.WriteFile(f.path, []byte(f.data), f.mode); err != nil {
			return "", err
		}
		if err := os.Chmod(f.path, f.mode); err != nil {
			return "", err
		}
	}
	return root, nil
}

// rootOwned returns the path of name in the root-owned files the root phase
// made. Started unprivileged, the tests have none: then the host's own
// path serves if suitable says it is, and the test is skipped otherwise.
func rootOwned(t *testing.T, name, host string, suitable func(string) error) string {
	t.Helper()
	if dir := os.Getenv(rootOwnedEnv); dir != "" {
		return filepath.Join(dir, name)
	}
	if err := suitable(host); err != nil {
		t.Skipf("started unprivileged, with no root-owned files of its own (run the tests as root, as CI does), and the host's %s does not serve: %v", host, err)
	}
	return host
}
