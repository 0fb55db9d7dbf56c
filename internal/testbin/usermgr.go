package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// UserManager says how a test binary started as root re-runs itself as an
// unprivileged user under a systemd user manager of that user's own
// (e2e/usermgr.sh boots one where PID 1 is not systemd).
type UserManager struct {
	Name     string // the package's name in messages: "scope tests"
	User     string // the test user, created if missing
	InnerEnv string // set to 1 in the re-run, so that it runs the tests
	KeepEnv  string // when set, the user manager is left running afterwards
}

// Run is TestMain's path for root: boot the user's manager, stage the test
// binary for the user, run it there with InnerEnv=1, stop the manager, and
// return the exit status for os.Exit.
func (u UserManager) Run() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, u.Name+": "+format+"\n", args...)
		return 1
	}
	script, err := findUp("e2e/usermgr.sh")
	if err != nil {
		return fail("running as root needs e2e/usermgr.sh to boot a user manager for %s: %v", u.User, err)
	}
	up := exec.Command("bash", script, "up", u.User)
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	if err := up.Run(); err != nil {
		return fail("`bash %s up %s` failed (%v): cannot test without a user manager", script, u.User, err)
	}
	if os.Getenv(u.KeepEnv) == "" {
		defer func() {
			down := exec.Command("bash", script, "down", u.User)
			down.Stdout, down.Stderr = os.Stderr, os.Stderr
			if err := down.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: warning: `bash %s down %s`: %v\n", u.Name, script, u.User, err)
			}
		}()
	}
	acct, err := user.Lookup(u.User)
	if err != nil {
		return fail("%v", err)
	}
	uid, _ := strconv.Atoi(acct.Uid)
	gid, _ := strconv.Atoi(acct.Gid)
	staged, err := Stage("contextd-"+u.User+"-test-", os.Args[1:], uid, gid)
	if err != nil {
		return fail("stage the test binary: %v", err)
	}
	defer staged.Finish()

	args := []string{script, "run", u.User, "-C", staged.Dir, u.InnerEnv + "=1"}
	for _, v := range []string{"GORACE", "GOTRACEBACK"} {
		if val, ok := os.LookupEnv(v); ok {
			args = append(args, v+"="+val)
		}
	}
	args = append(args, "--", staged.Bin)
	args = append(args, staged.Args...)
	fmt.Fprintf(os.Stderr, "%s: running as user %s under its systemd --user (%s)\n", u.Name, u.User, script)
	cmd := exec.Command("bash", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.ExitCode() == 125 {
			fmt.Fprintf(os.Stderr, "%s: usermgr.sh could not run the tests as %s (exit 125, see above)\n", u.Name, u.User)
		}
		if ee.ExitCode() < 0 {
			return 1
		}
		return ee.ExitCode()
	default:
		return fail("%v", err)
	}
}

// findUp finds rel in the working directory or one of its parents (go test
// runs in the package's directory, below the repository's root).
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found in any parent of the working directory", rel)
		}
		dir = parent
	}
}
