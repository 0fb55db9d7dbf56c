//go:build linux

package victim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds a probe's connection: only a sandbox whose network
// hangs reaches it.
const dialTimeout = 10 * time.Second

// SentByConnect is what the connect probe sends before it hangs up, for a
// listener on the host to recognise.
const SentByConnect = "from the sandbox\n"

// probes are what the test binary does when a test runs it inside a
// sandbox (ns.Hooks.Func, or argv[0] ns.TestProbeArgv0), by the first
// argument. Each prints one line per check, the errno name or OK, so that
// a test can compare lines; Fields parses them.
var probes = map[string]func(args []string) int{
	// args A B...: the arguments it was given, joined with "|".
	"args": func(args []string) int { fmt.Println(strings.Join(args, "|")); return 0 },
	// argv: its whole argv, joined with spaces (argv[0] included).
	"argv": func([]string) int { fmt.Println(strings.Join(os.Args, " ")); return 0 },
	// stdin: copies stdin to stdout, and the count and error to stderr.
	"stdin": func([]string) int {
		n, err := io.Copy(os.Stdout, os.Stdin)
		fmt.Fprintf(os.Stderr, "copied %d %s\n", n, ErrName(err))
		return 0
	},
	"status":   status,
	"leave":    leave,
	"stat":     eachPath(func(p string) string { _, err := os.Lstat(p); return ErrName(err) }),
	"touch":    eachPath(touch),
	"mkdir":    eachPath(func(p string) string { return ErrName(os.Mkdir(p, 0o755)) }),
	"read":     eachPath(readQuoted),
	"list":     eachPath(list),
	"readlink": eachPath(readlink),
	"fs":       func(args []string) int { FS("", args); return 0 },
	"syscall": func(args []string) int {
		for _, name := range args {
			fmt.Printf("%s %s\n", name, ErrName(TrySyscall(name)))
		}
		return 0
	},
	"connect":  connect,
	"talk":     talk,
	"loopback": loopback,
	"ifaces":   ifaces,
	"fds":      fds,
	"ptmx":     ptmx,
}

// Probe runs the probe args[0] with the rest of args and returns its exit
// status: 2 for a call the probes do not know.
func Probe(args []string) int {
	if len(args) == 0 {
		fmt.Println("usage: probe ...")
		return 2
	}
	p, ok := probes[args[0]]
	if !ok {
		fmt.Println("unknown probe", args[0])
		return 2
	}
	return p(args[1:])
}

// Fields maps the first word of each line of a probe's output to the rest
// of the line.
func Fields(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		m[k] = v
	}
	return m
}

// ErrName is how a probe prints an outcome: OK, an errno's name, or the
// error's text.
func ErrName(err error) string {
	if err == nil {
		return "OK"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// ReadDirNames lists the directory p, sorted.
func ReadDirNames(p string) ([]string, error) {
	d, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// eachPath makes a probe that prints "PATH RESULT" for each path argument.
func eachPath(check func(p string) string) func([]string) int {
	return func(paths []string) int {
		for _, p := range paths {
			fmt.Printf("%s %s\n", p, check(p))
		}
		return 0
	}
}

func touch(p string) string {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		f.Close()
	}
	return ErrName(err)
}

// readQuoted prints the content, so that a test can look for a secret in it.
func readQuoted(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ErrName(err)
	}
	return fmt.Sprintf("OK %q", b)
}

func list(p string) string {
	names, err := ReadDirNames(p)
	if err != nil {
		return ErrName(err)
	}
	return "OK " + strings.Join(names, ",")
}

func readlink(p string) string {
	t, err := os.Readlink(p)
	if err != nil {
		return ErrName(err)
	}
	return t
}

// FS runs file operations below root ("" for absolute paths) and prints
// "OP RESULT" for each:
//
//	read:P (the outcome)  cat:P (the content)  write:P[:TEXT]  ls:P ([names])
//	rm:P  rodir:P (a 0555 directory holding a file)
func FS(root string, ops []string) {
	for _, op := range ops {
		verb, rest, _ := strings.Cut(op, ":")
		name, text, _ := strings.Cut(rest, ":")
		p := filepath.Join(root, name)
		var res string
		switch verb {
		case "read":
			_, err := os.ReadFile(p)
			res = ErrName(err)
		case "cat":
			b, err := os.ReadFile(p)
			res = string(b)
			if err != nil {
				res = ErrName(err)
			}
		case "write":
			res = ErrName(os.WriteFile(p, []byte(text), 0o644))
		case "ls":
			names, err := ReadDirNames(p)
			res = "[" + strings.Join(names, " ") + "]"
			if err != nil {
				res = ErrName(err)
			}
		case "rm":
			res = ErrName(os.Remove(p))
		case "rodir":
			err := os.Mkdir(p, 0o755)
			if err == nil {
				err = os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o444)
			}
			if err == nil {
				err = os.Chmod(p, 0o555)
			}
			res = ErrName(err)
		default:
			res = "unknown op"
		}
		fmt.Printf("%s %s\n", op, res)
	}
}

// status prints /proc/self/status and whether the process is dumpable.
func status([]string) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	os.Stdout.Write(b)
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("Dumpable:\t%d\n", dumpable)
	return 0
}

// leave leaves processes behind, in sessions of their own, holding stdout,
// and returns 7: what the end of a sandbox must clear up.
func leave([]string) int {
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
}

// connect dials args[0], sends SentByConnect and hangs up.
func connect(args []string) int {
	c, err := net.DialTimeout("tcp", args[0], dialTimeout)
	if err == nil {
		c.Write([]byte(SentByConnect))
		c.Close()
	}
	fmt.Println(ErrName(err))
	return 0
}

// talk dials args[0], sends args[1] and prints what comes back.
func talk(args []string) int {
	c, err := net.DialTimeout("tcp", args[0], dialTimeout)
	if err != nil {
		fmt.Println("dial", ErrName(err))
		return 0
	}
	c.Write([]byte(args[1]))
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	c.Close()
	fmt.Println("OK", string(b))
	return 0
}

// loopback is a server and a client inside the sandbox, over its lo.
func loopback([]string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen", ErrName(err))
		return 0
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("pong"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", l.Addr().String(), dialTimeout)
	if err != nil {
		fmt.Println("dial", ErrName(err))
		return 0
	}
	b, _ := io.ReadAll(c)
	c.Close()
	fmt.Println("OK", string(b))
	return 0
}

func ifaces([]string) int {
	ifs, err := net.Interfaces()
	if err != nil {
		fmt.Println(ErrName(err))
		return 0
	}
	for _, i := range ifs {
		fmt.Printf("%s up=%v\n", i.Name, i.Flags&net.FlagUp != 0)
	}
	return 0
}

// fds prints the open descriptors, read while the directory (one of them)
// is open.
func fds([]string) int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		fmt.Println(ErrName(err))
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		fmt.Printf("%s %s\n", n, readlink("/proc/self/fd/"+n))
	}
	return 0
}

// ptmx opens a pseudo-terminal and prints its number.
func ptmx([]string) int {
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Println(ErrName(err))
		return 0
	}
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPTN)
	f.Close()
	if err != nil {
		fmt.Println(ErrName(err))
		return 0
	}
	fmt.Println("OK", n)
	return 0
}

// TrySyscall makes one system call that safe_bash's profile denies, with
// harmless arguments, and returns its error. Tests make it outside the
// sandbox too, to know what the kernel itself answers.
func TrySyscall(name string) error {
	var errno syscall.Errno
	switch name {
	case "unshare":
		// CLONE_FILES needs no privilege and works in a threaded process:
		// only the profile refuses it.
		return unix.Unshare(unix.CLONE_FILES)
	case "netlink":
		// What `ip` and Go's net.Interfaces use.
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "io_uring_setup":
		// A NULL params pointer: EFAULT from a kernel with io_uring.
		_, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
	case "keyctl":
		// KEYCTL_GET_KEYRING_ID of the session keyring, without creating it.
		ring := unix.KEY_SPEC_SESSION_KEYRING
		_, _, errno = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(ring), 0)
	default:
		return fmt.Errorf("unknown syscall probe %q", name)
	}
	if errno != 0 {
		return errno
	}
	return nil
}
