package victim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Account is the test user a re-run runs as.
type Account struct {
	Name, Home string
	UID, GID   int
}

// Unprivileged says how a test binary started as root re-runs itself as an
// unprivileged user, for tests whose outcome depends on permissions (root
// passes every permission check) and that need no user manager (for those,
// see UserManager).
type Unprivileged struct {
	Name     string // the package's name in messages: "cachelayer tests"
	User     string // the test user, created if missing
	InnerEnv string // set to 1 in the re-run, so that it runs the tests
	// Prepare, when set, runs as root once the binary is staged: it makes
	// what the tests need from root and returns the variables to add to
	// the re-run's environment and what to undo after the re-run.
	Prepare func(a Account, s *Staged) (env []string, undo func(), err error)
}

// UserManager says how a test binary started as root re-runs itself as an
// unprivileged user under a systemd user manager of that user's own
// (e2e/usermgr.sh boots one where PID 1 is not systemd).
type UserManager struct {
	Name     string // the package's name in messages: "scope tests"
	User     string // the test user, created if missing
	InnerEnv string // set to 1 in the re-run, so that it runs the tests
	KeepEnv  string // when set, the user manager is left running afterwards
}

// IfRoot is TestMain's step for root: started as root, and not as the
// re-run, it runs the tests again as the user and exits with their status.
// Otherwise it returns, and the tests run here.
func (u Unprivileged) IfRoot() { ifRoot(u.InnerEnv, u.Run) }

// IfRoot is TestMain's step for root, as Unprivileged.IfRoot, under the
// user's manager.
func (u UserManager) IfRoot() { ifRoot(u.InnerEnv, u.Run) }

func ifRoot(innerEnv string, run func() int) {
	if os.Geteuid() == 0 && os.Getenv(innerEnv) == "" {
		os.Exit(run())
	}
}

// Run stages the test binary for the user and runs it as the user with
// InnerEnv=1, the same flags, HOME set to the user's home and TMPDIR to a
// directory of the user's, and returns its exit status for os.Exit. The XDG
// base directories of root's environment are dropped.
func (u Unprivileged) Run() int {
	fail := failer(u.Name)
	a, staged, err := stageFor(u.User, true)
	if err != nil {
		return fail("%v", err)
	}
	defer staged.Finish()
	var extra []string
	if u.Prepare != nil {
		env, undo, err := u.Prepare(a, staged)
		if err != nil {
			return fail("prepare the run as %s: %v", u.User, err)
		}
		defer undo()
		extra = env
	}

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
	cmd.Env = append(cmd.Env, "HOME="+a.Home, "USER="+u.User, "LOGNAME="+u.User, "TMPDIR="+staged.Out, u.InnerEnv+"=1")
	cmd.Env = append(cmd.Env, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}},
	}
	fmt.Fprintf(os.Stderr, "%s: running as user %s\n", u.Name, u.User)
	return exitStatus(u.Name, u.User, cmd.Run())
}

// Run boots the user's manager, stages the test binary for the user, runs
// it there with InnerEnv=1, stops the manager, and returns the exit status
// for os.Exit.
func (u UserManager) Run() int {
	fail := failer(u.Name)
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
	// usermgr.sh made the user.
	_, staged, err := stageFor(u.User, false)
	if err != nil {
		return fail("%v", err)
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
	if errors.As(err, &ee) && ee.ExitCode() == 125 {
		fmt.Fprintf(os.Stderr, "%s: usermgr.sh could not run the tests as %s (exit 125, see above)\n", u.Name, u.User)
	}
	return exitStatus(u.Name, u.User, err)
}

// failer prints a message of the package's tests and returns the exit
// status of a failed run.
func failer(name string) func(format string, args ...any) int {
	return func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...)
		return 1
	}
}

// stageFor looks the test user up (see lookup) and stages the test binary
// for it.
func stageFor(name string, create bool) (Account, *Staged, error) {
	a, err := lookup(name, create)
	if err != nil {
		return Account{}, nil, err
	}
	s, err := Stage("contextd-"+name+"-test-", os.Args[1:], a.UID, a.GID)
	if err != nil {
		return Account{}, nil, fmt.Errorf("stage the test binary: %w", err)
	}
	return a, s, nil
}

// lookup finds the test user and, with create, makes it (with a home it
// owns) when it is missing.
func lookup(name string, create bool) (Account, error) {
	acct, err := user.Lookup(name)
	if err != nil && create {
		out, uerr := exec.Command("useradd", "-m", "-s", "/bin/sh", name).CombinedOutput()
		// A concurrent run may have created it meanwhile: look again.
		if acct, err = user.Lookup(name); err != nil {
			return Account{}, fmt.Errorf("useradd %s: %v: %s (lookup: %w)", name, uerr, out, err)
		}
	}
	if err != nil {
		return Account{}, err
	}
	a := Account{Name: name, Home: acct.HomeDir}
	a.UID, _ = strconv.Atoi(acct.Uid)
	a.GID, _ = strconv.Atoi(acct.Gid)
	if create {
		if err := os.MkdirAll(a.Home, 0o755); err != nil {
			return Account{}, fmt.Errorf("home: %w", err)
		}
		if err := os.Chown(a.Home, a.UID, a.GID); err != nil {
			return Account{}, fmt.Errorf("home: %w", err)
		}
	}
	return a, nil
}

// exitStatus is the re-run's exit status; a run that did not exit (it
// could not start, or a signal ended it) is a failure.
func exitStatus(name, userName string, err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return failer(name)("run as %s: %v", userName, err)
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
