package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// Unprivileged says how a test binary started as root re-runs itself as an
// unprivileged user, for tests whose outcome depends on permissions (root
// passes every permission check) and that need no user manager (for those,
// see UserManager).
type Unprivileged struct {
	Name     string // the package's name in messages: "cachelayer tests"
	User     string // the test user, created if missing
	InnerEnv string // set to 1 in the re-run, so that it runs the tests
}

// Run is TestMain's path for root: stage the test binary for the user, run
// it as the user with InnerEnv=1, the same flags, HOME set to the user's
// home and TMPDIR to a directory of the user's, and return its exit status
// for os.Exit. The XDG base directories of root's environment are dropped.
func (u Unprivileged) Run() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, u.Name+": "+format+"\n", args...)
		return 1
	}
	acct, err := user.Lookup(u.User)
	if err != nil {
		out, uerr := exec.Command("useradd", "-m", "-s", "/bin/sh", u.User).CombinedOutput()
		// A concurrent run may have created it meanwhile: look again.
		if acct, err = user.Lookup(u.User); err != nil {
			return fail("useradd %s: %v: %s (lookup: %v)", u.User, uerr, out, err)
		}
	}
	uid, _ := strconv.Atoi(acct.Uid)
	gid, _ := strconv.Atoi(acct.Gid)
	if err := os.MkdirAll(acct.HomeDir, 0o755); err != nil {
		return fail("home: %v", err)
	}
	if err := os.Chown(acct.HomeDir, uid, gid); err != nil {
		return fail("home: %v", err)
	}
	staged, err := Stage("contextd-"+u.User+"-test-", os.Args[1:], uid, gid)
	if err != nil {
		return fail("stage the test binary: %v", err)
	}
	defer staged.Finish()

	cmd := exec.Command(staged.Bin, staged.Args...)
	cmd.Dir = staged.Dir // the source tree may not be readable by the user
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+acct.HomeDir, "USER="+u.User, "LOGNAME="+u.User, "TMPDIR="+staged.Out, u.InnerEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
	}
	fmt.Fprintf(os.Stderr, "%s: running as user %s\n", u.Name, u.User)
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return fail("run as %s: %v", u.User, err)
}
