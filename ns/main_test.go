//go:build linux

package ns_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/testbin"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/ns"
)

// testUser runs the tests when they are started as root (CI is root): the
// sandbox is for an unprivileged daemon, and root would hide the permission
// problems a real user hits.
const testUser = "ctxd-ns"

// rootOwnedEnv names, in the unprivileged run, the directory of root-owned
// files the root phase made for it (see makeRootOwned): files of an owner
// the sandbox's user namespace does not map.
const rootOwnedEnv = "CTXD_NS_ROOT_OWNED"

func TestMain(m *testing.M) {
	// 1. The sandbox init re-executes this binary: become the init.
	ns.ReexecWith(ns.Hooks{Func: toolMain})
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
		os.Exit(toolMain(os.Args[1:]))
	}
	// 3. As root: run the same tests again as an unprivileged user.
	if os.Geteuid() == 0 {
		os.Exit(rerunUnprivileged())
	}
	os.Exit(m.Run())
}

func die(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "ns tests: "+format+"\n", args...)
	return 1
}

// rerunUnprivileged creates the test user if needed, gives it a
// /run/user/UID with a stand-in daemon socket (so a test can check that it
// is not reachable from the sandbox), copies the test binary where the user
// can execute it, and runs it as that user with the same flags.
func rerunUnprivileged() int {
	u, err := user.Lookup(testUser)
	if err != nil {
		out, uerr := exec.Command("useradd", "-m", "-s", "/bin/sh", testUser).CombinedOutput()
		// A concurrent run may have created it meanwhile: look again.
		if u, err = user.Lookup(testUser); err != nil {
			return die("useradd %s: %v: %s (lookup: %v)", testUser, uerr, out, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.MkdirAll(u.HomeDir, 0o755); err != nil {
		return die("home: %v", err)
	}
	os.Chown(u.HomeDir, uid, gid)

	runDir := "/run/user/" + u.Uid
	if _, err := os.Stat(runDir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(runDir, 0o700); err != nil {
			return die("%s: %v", runDir, err)
		}
		os.Chown(runDir, uid, gid)
		defer os.RemoveAll(runDir)
	}
	sockDir := filepath.Join(runDir, "contextd")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		return die("%s: %v", sockDir, err)
	}
	os.Chown(sockDir, uid, gid)
	sock := filepath.Join(sockDir, "contextd.sock")
	if _, err := os.Stat(sock); errors.Is(err, os.ErrNotExist) {
		l, err := net.Listen("unix", sock)
		if err != nil {
			return die("listen %s: %v", sock, err)
		}
		os.Chown(sock, uid, gid)
		defer l.Close()
	}

	staged, err := testbin.Stage("ctxd-ns-test-", os.Args[1:], uid, gid)
	if err != nil {
		return die("stage the test binary: %v", err)
	}
	defer staged.Finish()
	dir, tmp := staged.Dir, staged.Out
	rootOwned, err := makeRootOwned(dir)
	if err != nil {
		return die("root-owned files for the tests: %v", err)
	}

	cmd := exec.Command(staged.Bin, staged.Args...)
	cmd.Dir = dir // the source tree may not be readable by the test user
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+u.HomeDir, "USER="+testUser, "LOGNAME="+testUser,
		"TMPDIR="+tmp, "XDG_RUNTIME_DIR="+runDir, rootOwnedEnv+"="+rootOwned)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
	}
	err = cmd.Run()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return die("run as %s: %v", testUser, err)
	}
	return 0
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

// toolMain is this binary acting as "contextd-tool" inside a sandbox: small
// probes that print one line per check, the errno name or OK.
func toolMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("usage: probe ...")
		return 2
	}
	switch args[0] {
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		os.Stdout.Write(b)
		fmt.Printf("Dumpable:\t%d\n", func() int { v, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); return v }())
	case "argv":
		fmt.Println(strings.Join(os.Args, " "))
	case "leave":
		// Func mode's end (TestFuncModeEndsTheRest): leave processes
		// behind, in sessions of their own, holding stdout, and return 7.
		for range 3 {
			cmd := exec.Command("/usr/bin/setsid", "/bin/sleep", "1000")
			cmd.Stdout = os.Stdout
			if err := cmd.Start(); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		fmt.Println("left")
		return 7
	case "stat":
		for _, p := range args[1:] {
			_, err := os.Lstat(p)
			fmt.Printf("%s %s\n", p, errName(err))
		}
	case "touch":
		for _, p := range args[1:] {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
			fmt.Printf("%s %s\n", p, errName(err))
		}
	case "mkdir":
		for _, p := range args[1:] {
			fmt.Printf("%s %s\n", p, errName(os.Mkdir(p, 0o755)))
		}
	case "read":
		// The content is printed so that a test can look for a secret in it.
		for _, p := range args[1:] {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Printf("%s %s\n", p, errName(err))
				continue
			}
			fmt.Printf("%s OK %q\n", p, b)
		}
	case "list":
		for _, p := range args[1:] {
			names, err := func() ([]string, error) {
				d, err := os.Open(p)
				if err != nil {
					return nil, err
				}
				defer d.Close()
				return d.Readdirnames(-1)
			}()
			if err != nil {
				fmt.Printf("%s %s\n", p, errName(err))
				continue
			}
			sort.Strings(names)
			fmt.Printf("%s OK %s\n", p, strings.Join(names, ","))
		}
	case "readlink":
		for _, p := range args[1:] {
			t, err := os.Readlink(p)
			if err != nil {
				t = errName(err)
			}
			fmt.Printf("%s %s\n", p, t)
		}
	case "connect":
		c, err := net.DialTimeout("tcp", args[1], 3*time.Second)
		if err == nil {
			c.Close()
		}
		fmt.Println(errName(err))
	case "talk":
		// Dial args[1] inside, send args[2], print what comes back.
		c, err := net.DialTimeout("tcp", args[1], 3*time.Second)
		if err != nil {
			fmt.Println("dial", errName(err))
			return 0
		}
		c.Write([]byte(args[2]))
		c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		c.Close()
		fmt.Println("OK", string(b))
	case "loopback":
		// A server and a client inside the sandbox, over lo.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("listen", errName(err))
			return 0
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("pong"))
				c.Close()
			}
		}()
		c, err := net.DialTimeout("tcp", l.Addr().String(), 3*time.Second)
		if err != nil {
			fmt.Println("dial", errName(err))
			return 0
		}
		b, _ := io.ReadAll(c)
		c.Close()
		fmt.Println("OK", string(b))
	case "ifaces":
		ifs, err := net.Interfaces()
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		for _, i := range ifs {
			fmt.Printf("%s up=%v\n", i.Name, i.Flags&net.FlagUp != 0)
		}
	case "fds":
		// Read the links while the directory (one of the descriptors) is open.
		d, err := os.Open("/proc/self/fd")
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		names, _ := d.Readdirnames(-1)
		for _, n := range names {
			t, err := os.Readlink("/proc/self/fd/" + n)
			if err != nil {
				t = errName(err)
			}
			fmt.Printf("%s %s\n", n, t)
		}
		d.Close()
	case "ptmx":
		f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPTN)
		f.Close()
		if err != nil {
			fmt.Println(errName(err))
			return 0
		}
		fmt.Println("OK", n)
	default:
		fmt.Println("unknown probe", args[0])
		return 2
	}
	return 0
}

func errName(err error) string {
	if err == nil {
		return "OK"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}
