package cachelayer_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/daemon/cachelayer"
	"github.com/contextd/contextd/internal/victim"
)

// The layers belong to an unprivileged daemon, and what they must survive
// is a matter of permissions (overlayfs leaves work/work at mode 000, Go
// makes its module cache read-only), which root passes whatever they are.
// Started as root (CI, `make test`), the tests run again as the user
// ctxd-cache; started as a user, they run as that user.
const (
	innerEnv  = "CTXD_CACHELAYER_INNER"
	helperEnv = "CTXD_CACHELAYER_HELPER"
	testUser  = "ctxd-cache"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	victim.Unprivileged{Name: "cachelayer tests", User: testUser, InnerEnv: innerEnv}.IfRoot()
	os.Exit(m.Run())
}

// helper is this binary run by a test as another process.
func helper(mode string, args []string) int {
	switch mode {
	case "overlay":
		return overlayHelper(args)
	case "crash":
		return crashHelper(args)
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", mode)
	return 2
}

// crashHelper takes a lease (root, workspace, caches...), writes into its
// layers what a call and overlayfs would, and exits without releasing it,
// as a daemon that crashed mid-call.
func crashHelper(args []string) int {
	m, err := cachelayer.New(&cachelayer.Options{Root: args[0]})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	l, err := m.Acquire(cachelayer.Key{Workspace: args[1], Sandbox: "safe_bash"}, args[2:])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for _, ly := range l.Layers {
		if err := plantLeftovers(ly); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	fmt.Printf("ephemeral=%v\n", l.Ephemeral)
	return 0
}

// plantLeftovers writes into a layer what a call leaves there: a read-only
// module tree in the upper layer (as Go's module cache) and, in the work
// directory, overlayfs' work/work at mode 000 holding a file.
func plantLeftovers(ly cachelayer.Layer) error {
	mod := filepath.Join(ly.Upper, "mod", "example.com", "m@v1.0.0")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"), 0o444); err != nil {
		return err
	}
	for _, d := range []string{mod, filepath.Dir(mod), filepath.Join(ly.Upper, "mod")} {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	ww := filepath.Join(ly.Work, "work")
	if err := os.Mkdir(ww, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ww, "#7"), nil, 0o600); err != nil {
		return err
	}
	return os.Chmod(ww, 0)
}

// overlayHelper runs in a user and mount namespace of its own (see
// inOverlay): it mounts an overlay of args[0] (lower) with upper args[1]
// and work args[2] on args[3], runs the operations that follow (victim.FS:
// write:NAME:TEXT, cat:NAME, rm:NAME, rodir:NAME...) and prints one line
// for each.
func overlayHelper(args []string) int {
	lower, upper, work, merged := args[0], args[1], args[2], args[3]
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Println("SKIP make / private:", err)
		return 0
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		fmt.Println("SKIP mount overlay:", err)
		return 0
	}
	victim.FS(merged, args[4:])
	return 0
}

// quickExit spares a -race run the race detector's second of sleep at the
// exit of every helper.
const quickExit = "GORACE=atexit_sleep_ms=0"

// inOverlay runs overlayHelper in a new user and mount namespace (this
// user mapped to root there, which may mount an overlay) and returns its
// output lines, or skips the test where unprivileged overlayfs is not
// available.
func inOverlay(t *testing.T, lower string, ly cachelayer.Layer, ops ...string) []string {
	t.Helper()
	merged := t.TempDir()
	cmd := exec.Command(os.Args[0], append([]string{lower, ly.Upper, ly.Work, merged}, ops...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=overlay", quickExit)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("no unprivileged user namespace here (%v): the overlay test needs one", err)
		}
		t.Fatalf("overlay helper: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.HasPrefix(lines[0], "SKIP ") {
		t.Skipf("no unprivileged overlayfs here: %s", lines[0])
	}
	return lines
}
