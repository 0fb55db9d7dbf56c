//go:build cgo

package profiles_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/seccomp"
	"github.com/contextd/contextd/seccomp/seccomptest"
)

// Victims: this test binary re-executed (seccomptest.Run) loads a profile
// and is watched under it.
func TestMain(m *testing.M) {
	seccomptest.Main(map[string]seccomptest.Case{
		"sh":             shVictim,
		"threads":        threadsVictim,
		"filetool":       filetoolVictim,
		"filetool-child": filetoolChild,
	})
	os.Exit(m.Run())
}

const envScript = "CONTEXTD_TEST_SCRIPT"

// shVictim loads the profile and execs /bin/sh -c $CONTEXTD_TEST_SCRIPT.
func shVictim() int {
	seccomptest.Load()
	err := syscall.Exec("/bin/sh", []string{"sh", "-c", os.Getenv(envScript)}, os.Environ())
	fmt.Println("exec /bin/sh:", err)
	return 5
}

// threadsVictim loads the profile, then runs goroutines on OS threads
// created under the filter.
func threadsVictim() int {
	seccomptest.Load()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // forces a new OS thread per goroutine
			s := 0
			for j := 0; j < 100000; j++ {
				s += j % (i + 1)
			}
			mu.Lock()
			sum += s
			mu.Unlock()
		}()
	}
	wg.Wait()
	tasks, _ := filepath.Glob("/proc/self/task/*")
	fmt.Printf("threads ok %d %d\n", len(tasks), sum)
	return 0
}

// embeddedJSON is the embedded profile as shipped, for victims.
func embeddedJSON(t *testing.T, tool string) []byte {
	t.Helper()
	js, err := profiles.EmbeddedJSON(tool)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestEmbeddedCompile: every name in the embedded profiles resolves on this
// machine, except the ones that do not exist on its architecture: a typo
// would show here (in a deny group Compile would even fail).
func TestEmbeddedCompile(t *testing.T) {
	for _, tool := range profiles.Tools() {
		p, err := profiles.Embedded(tool)
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Compile()
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		skipped := f.Skipped()
		f.Release()
		want := []string(nil)
		if tool == "safe_bash" || tool == "mcp-server" || tool == "plugin" || tool == "tool_fetch" || tool == "tool_build" {
			want = []string{"pciconfig_iobase", "pciconfig_read", "pciconfig_write"}
		}
		if runtime.GOARCH == "amd64" && fmt.Sprint(skipped) != fmt.Sprint(want) {
			t.Errorf("%s: names left out of the filter: %v, want %v", tool, skipped, want)
		}
		t.Logf("%s: left out on %s: %v", tool, runtime.GOARCH, skipped)
	}
}

// call is one system call by name, for the oracle tests.
type call struct {
	name string
	args [6]uint64
	// kernelToo: the kernel's own answer may equal the filter's (obsolete
	// calls answer ENOSYS anyway); otherwise the control run must differ,
	// or the case would prove nothing.
	kernelToo bool
}

// recent are calls libseccomp 2.5.4 does not know by name.
var recent = map[string]uintptr{"open_tree_attr": unix.SYS_OPEN_TREE_ATTR}

func sysnr(t *testing.T, name string) (uintptr, bool) {
	t.Helper()
	if nr, ok := recent[name]; ok {
		return nr, true
	}
	nr, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return uintptr(nr), nr >= 0 // negative: not on this architecture
}

// checkCalls makes the calls in a victim under the embedded profile of tool
// and in a control victim without filter, and checks each outcome against
// the profile read as the format defines it (decide): a denied call returns
// the profile's errno, and the kernel alone would have answered differently;
// an allowed call returns what the kernel alone returns.
func checkCalls(t *testing.T, tool string, calls []call) {
	t.Helper()
	p := embedded(t, tool)
	var raw []seccomptest.Call
	var kept []call
	for _, c := range calls {
		nr, ok := sysnr(t, c.name)
		if !ok {
			continue
		}
		raw = append(raw, seccomptest.Call{Nr: nr, Args: c.args})
		kept = append(kept, c)
	}
	filtered := seccomptest.Calls(t, embeddedJSON(t, tool), raw)
	control := seccomptest.Calls(t, nil, raw)
	for i, c := range kept {
		d := decide(p, c.name, c.args)
		got, ctl := filtered[i], control[i]
		switch d.action {
		case seccomp.ActAllow:
			if got.Errno != ctl.Errno {
				t.Errorf("%s%x: %v under %s, %v without: the filter should let it through", c.name, c.args, got, tool, ctl)
			}
		case seccomp.ActErrno:
			if got.Errno != syscall.Errno(d.errno) {
				t.Errorf("%s%x: %v under %s, want errno %d", c.name, c.args, got, tool, d.errno)
			}
			if !c.kernelToo && ctl.Errno == got.Errno {
				t.Errorf("%s%x: %v without the filter too: the case proves nothing", c.name, c.args, ctl)
			}
		default:
			t.Fatalf("%s: unexpected action %s", c.name, d.action)
		}
	}
}

const (
	bad      = 0x7fffffff // an fd or pid that does not exist
	sighand  = 0x800      // CLONE_SIGHAND without CLONE_VM: clone fails with EINVAL before doing anything
	afInet   = 2
	afInet6  = 10
	sockRaw  = 3
	sockPack = 10
)

// TestSafeBashBlocks: each call safe_bash denies, made for real under the
// filter, with arguments that make it fail harmlessly if the filter let it
// through (this machine runs the tests as root).
func TestSafeBashBlocks(t *testing.T) {
	t.Parallel()
	checkCalls(t, "safe_bash", safeBashDenied())
}

// TestMCPServerBlocks: mcp-server and plugin deny everything safe_bash
// denies, and their own groups on top; ordinary calls still pass. A plugin
// binds and accepts on its unix socket.
func TestMCPServerBlocks(t *testing.T) {
	t.Parallel()
	const none = 0xffffffff // -1 as a uid/gid: EINVAL, or a no-op, without the filter
	calls := append(safeBashDenied(),
		call{name: "setuid", args: [6]uint64{none}}, call{name: "setgid", args: [6]uint64{none}},
		call{name: "setreuid", args: [6]uint64{none, none}}, call{name: "setregid", args: [6]uint64{none, none}},
		call{name: "setresuid", args: [6]uint64{none, none, none}}, call{name: "setresgid", args: [6]uint64{none, none, none}},
		call{name: "setfsuid", args: [6]uint64{none}}, call{name: "setfsgid", args: [6]uint64{none}},
		call{name: "setgroups", args: [6]uint64{0x7fffffff}}, call{name: "capset"},
		call{name: "mknod"}, call{name: "mknodat", args: [6]uint64{bad}}, call{name: "chroot"},
		call{name: "fanotify_init", args: [6]uint64{0xffffffff}}, call{name: "fanotify_mark", args: [6]uint64{bad}},
		call{name: "ioctl", args: [6]uint64{bad, unix.TIOCSTI}}, call{name: "ioctl", args: [6]uint64{bad, unix.TIOCLINUX}},
		// Allowed: other ioctls, the ordinary process calls.
		call{name: "ioctl", args: [6]uint64{bad, unix.TCGETS}}, call{name: "getpid"}, call{name: "getuid"},
		call{name: "socket", args: [6]uint64{afInet, unix.SOCK_STREAM}},
		call{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}},
	)
	checkCalls(t, "mcp-server", calls)
	checkCalls(t, "plugin", calls)
}

// safeBashDenied: each call safe_bash denies, with arguments that fail
// harmlessly should the filter let it through.
func safeBashDenied() []call {
	calls := []call{
		{name: "io_uring_setup"}, {name: "io_uring_enter", args: [6]uint64{bad}}, {name: "io_uring_register", args: [6]uint64{bad}},
		{name: "clone3"},
		{name: "keyctl", args: [6]uint64{0x7fff}}, {name: "add_key"}, {name: "request_key"},
		{name: "bpf", args: [6]uint64{0x7fff}},
		{name: "ptrace", args: [6]uint64{unix.PTRACE_ATTACH, bad}}, {name: "ptrace", args: [6]uint64{unix.PTRACE_SEIZE, bad}},
		{name: "process_vm_readv", args: [6]uint64{bad}}, {name: "process_vm_writev", args: [6]uint64{bad}},
		{name: "process_madvise", args: [6]uint64{bad}}, {name: "kcmp", args: [6]uint64{bad, bad}}, {name: "pidfd_getfd", args: [6]uint64{bad}},
		{name: "mount"}, {name: "umount2"}, {name: "pivot_root"}, {name: "fsopen"}, {name: "fsconfig", args: [6]uint64{bad}},
		{name: "fsmount", args: [6]uint64{bad}}, {name: "fspick", args: [6]uint64{bad}}, {name: "move_mount", args: [6]uint64{bad}},
		{name: "open_tree", args: [6]uint64{bad}}, {name: "mount_setattr", args: [6]uint64{bad}}, {name: "open_tree_attr", args: [6]uint64{bad}},
		// CLONE_SIGHAND: EINVAL in a multi-threaded process, so the
		// control run creates nothing.
		{name: "unshare", args: [6]uint64{unix.CLONE_NEWUSER}}, {name: "unshare", args: [6]uint64{unix.CLONE_NEWNS | sighand}},
		{name: "unshare", args: [6]uint64{unix.CLONE_NEWNET | sighand}}, {name: "setns", args: [6]uint64{bad}},
		{name: "userfaultfd", args: [6]uint64{0xffff}}, {name: "perf_event_open"},
		{name: "kexec_load", args: [6]uint64{0, 0, 0, 0xffff0000}}, {name: "kexec_file_load", args: [6]uint64{bad, bad, 0, 0, 0xffff}},
		{name: "init_module"}, {name: "finit_module", args: [6]uint64{bad}}, {name: "delete_module"},
		{name: "reboot"}, {name: "swapon"}, {name: "swapoff"}, {name: "acct", args: [6]uint64{1}},
		{name: "quotactl"}, {name: "quotactl_fd", args: [6]uint64{bad}},
		{name: "settimeofday"}, {name: "clock_settime", args: [6]uint64{0x7fff}}, {name: "clock_adjtime", args: [6]uint64{0x7fff}}, {name: "adjtimex"},
		{name: "open_by_handle_at", args: [6]uint64{bad}}, {name: "name_to_handle_at", args: [6]uint64{bad}},
		{name: "syslog", args: [6]uint64{10}}, {name: "vhangup"}, {name: "iopl", args: [6]uint64{4}},
		{name: "ioperm", args: [6]uint64{0x10000, 1, 1}}, {name: "modify_ldt", args: [6]uint64{99}}, {name: "lookup_dcookie", kernelToo: true},
		{name: "create_module", kernelToo: true}, {name: "uselib", kernelToo: true}, {name: "ustat", kernelToo: true},
		{name: "sysfs", args: [6]uint64{99}, kernelToo: true}, {name: "_sysctl", kernelToo: true}, {name: "nfsservctl", kernelToo: true},
		{name: "socket", args: [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE}},
		{name: "socket", args: [6]uint64{unix.AF_PACKET, unix.SOCK_RAW, 0x0300}},
		{name: "socket", args: [6]uint64{unix.AF_VSOCK, unix.SOCK_STREAM}},
		{name: "socket", args: [6]uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}},
		{name: "socket", args: [6]uint64{afInet, sockRaw, unix.IPPROTO_ICMP}},
		{name: "socket", args: [6]uint64{afInet6, sockRaw | unix.SOCK_NONBLOCK, unix.IPPROTO_ICMPV6}},
		{name: "socket", args: [6]uint64{afInet, sockPack, 0x0300}},
		{name: "socketpair", args: [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW}},
		{name: "personality", args: [6]uint64{0x0400000 /* READ_IMPLIES_EXEC */}}, {name: "personality", args: [6]uint64{0x0040000 /* ADDR_NO_RANDOMIZE */}},
		{name: "personality", args: [6]uint64{0}}, // restore, should one have got through
	}
	for _, ns := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
		calls = append(calls, call{name: "clone", args: [6]uint64{ns | sighand | uint64(unix.SIGCHLD)}})
	}
	return calls
}

// TestSafeBashAllows: what must keep working is not touched by the filter.
func TestSafeBashAllows(t *testing.T) {
	t.Parallel()
	checkCalls(t, "safe_bash", []call{
		{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}},
		{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_DGRAM}},
		{name: "socket", args: [6]uint64{afInet, unix.SOCK_STREAM}},
		{name: "socket", args: [6]uint64{afInet, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, unix.IPPROTO_ICMP}}, // ping socket
		{name: "socket", args: [6]uint64{afInet6, unix.SOCK_DGRAM}},
		{name: "socketpair", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}},
		{name: "personality", args: [6]uint64{0xffffffff}}, {name: "personality", args: [6]uint64{8}},
		{name: "personality", args: [6]uint64{0x20008}}, {name: "personality", args: [6]uint64{0}},
		{name: "clone", args: [6]uint64{sighand | uint64(unix.SIGCHLD)}},
		{name: "seccomp", args: [6]uint64{unix.SECCOMP_GET_ACTION_AVAIL}},
		{name: "landlock_create_ruleset", args: [6]uint64{0, 0, 1}},
		{name: "getpid"}, {name: "prctl", args: [6]uint64{unix.PR_GET_NO_NEW_PRIVS}},
	})
}

// TestSafeBashSweeps: the personality and socket-family rules over many
// values, in the kernel.
func TestSafeBashSweeps(t *testing.T) {
	t.Parallel()
	var calls []call
	for _, v := range personalitySamples() {
		calls = append(calls, call{name: "personality", args: [6]uint64{v}}, call{name: "personality"})
	}
	for _, f := range socketFamilies() {
		// Type 11 is invalid: without the filter every family below AF_MAX
		// fails with EINVAL, so nothing is created.
		calls = append(calls, call{name: "socket", args: [6]uint64{f, 11}}, call{name: "socketpair", args: [6]uint64{f, 11}})
	}
	checkCalls(t, "safe_bash", calls)
}

// TestSafeBashRuns: ordinary programs work under safe_bash: a shell with
// pipes, fork, exec and a background job, Go threads, glibc threads and
// posix_spawn (clone3 refused with ENOSYS, glibc falls back to clone); and
// the process is in seccomp mode 2 with no_new_privs, across exec.
func TestSafeBashRuns(t *testing.T) {
	t.Parallel()
	prof := embeddedJSON(t, "safe_bash")
	cprobe := buildCProbe(t)
	script := `echo ok | cat; ls / >/dev/null && echo ls-ok; sleep 0.01 & wait; echo waited; ` +
		`grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -d '\t'; ` + cprobe
	r := seccomptest.Run(t, "sh", prof, envScript+"="+script)
	want := "ok\nls-ok\nwaited\nNoNewPrivs:1\nSeccomp:2\ncprobe threads=42 spawn=0 fork=7\n"
	if r.ExitCode != 0 || r.Stdout != want {
		t.Errorf("sh under safe_bash: exit %d signal %v\nstdout %q\nwant   %q\nstderr %s", r.ExitCode, r.Signal, r.Stdout, want, r.Stderr)
	}
	r = seccomptest.Run(t, "threads", prof)
	if r.ExitCode != 0 || !strings.HasPrefix(r.Stdout, "threads ok ") {
		t.Errorf("Go threads under safe_bash: %+v", r)
	}
}

// buildCProbe compiles a C program that creates a thread with
// pthread_create, starts /bin/true with posix_spawn and forks; glibc tries
// clone3 for the first two.
func buildCProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "cprobe.c")
	os.WriteFile(src, []byte(`#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static void *thr(void *a) { return a; }
int main(void) {
	pthread_t t; void *r = 0; pid_t pid; int st = -1, sp = -1;
	if (pthread_create(&t, NULL, thr, (void *)42) != 0) { puts("pthread_create failed"); return 1; }
	pthread_join(t, &r);
	char *argv[] = {"true", NULL};
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid) sp = WEXITSTATUS(st);
	pid = fork();
	if (pid == 0) _exit(7);
	waitpid(pid, &st, 0);
	printf("cprobe threads=%ld spawn=%d fork=%d\n", (long)r, sp, WEXITSTATUS(st));
	return 0;
}
`), 0o644)
	bin := filepath.Join(dir, "cprobe")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc" // cgo, which this package needs, needs it too
	}
	if out, err := exec.Command(cc, "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return bin
}

// TestFileTools: safe_read and safe_write let the tool do its work, run as
// it will be (exec of a complete Go program under the filter), and deny
// everything else; no_exec takes exec back.
func TestFileTools(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "dir"), 0o755)
	os.WriteFile(filepath.Join(ws, "dir", "file.txt"), []byte("the content\n"), 0o640)
	os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old"), 0o600)
	env := []string{envWorkspace + "=" + ws, envNoExec + "=1", envProbes + "=1"}
	// Everything the probes try: with no_exec stacked, all of them fail with EPERM.
	probes := "socket 1\nsocket_unix 1\nptrace 1\nmount 1\nunshare 1\nfork 1\nkill 1\nexecve 1\n"

	r := seccomptest.Run(t, "filetool", embeddedJSON(t, "safe_read"), append(env, envOp+"=read", envPath+"=dir/file.txt")...)
	if want := "the content\n\nOK\n" + probes; r.ExitCode != 0 || r.Stdout != want {
		t.Errorf("safe_read: exit %d signal %v\nstdout %q\nwant   %q\nstderr %s", r.ExitCode, r.Signal, r.Stdout, want, r.Stderr)
	}
	// The confinement is openat2's: .. is refused, and the filter allows that.
	r = seccomptest.Run(t, "filetool", embeddedJSON(t, "safe_read"), append(env, envOp+"=read", envPath+"=../x")...)
	if !strings.Contains(r.Stdout, "openat2: invalid cross-device link") {
		t.Errorf("safe_read of ../x: %+v", r)
	}

	for _, c := range []struct{ path, mode string }{{"new/sub/file.txt", "-rw-r--r--"}, {"old.txt", "-rw-------"}} {
		r := seccomptest.RunInput(t, "filetool", embeddedJSON(t, "safe_write"), []byte("new data"), append(env, envOp+"=write", envPath+"="+c.path)...)
		if want := "wrote 8 bytes\nOK\n" + probes; r.ExitCode != 0 || r.Stdout != want {
			t.Errorf("safe_write %s: exit %d signal %v\nstdout %q\nwant   %q\nstderr %s", c.path, r.ExitCode, r.Signal, r.Stdout, want, r.Stderr)
			continue
		}
		fi, err := os.Stat(filepath.Join(ws, c.path))
		data, _ := os.ReadFile(filepath.Join(ws, c.path))
		if err != nil || string(data) != "new data" || fi.Mode().String() != c.mode {
			t.Errorf("safe_write %s: %q %v %v, want mode %s", c.path, data, fi.Mode(), err, c.mode)
		}
	}
	left, _ := filepath.Glob(filepath.Join(ws, "*", ".contextd-*"))
	if left2, _ := filepath.Glob(filepath.Join(ws, ".contextd-*")); len(left)+len(left2) != 0 {
		t.Errorf("temporary files left: %v %v", left, left2)
	}
}

// TestFileToolsDeny: the allowlists in the plain victim: what a file tool
// never does fails with EPERM (ENOSYS for clone3).
func TestFileToolsDeny(t *testing.T) {
	t.Parallel()
	calls := []call{
		{name: "socket", args: [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}}, {name: "socket", args: [6]uint64{afInet, unix.SOCK_STREAM}},
		{name: "ptrace", args: [6]uint64{unix.PTRACE_ATTACH, bad}}, {name: "mount"}, {name: "unshare", args: [6]uint64{unix.CLONE_NEWUSER}},
		{name: "bpf", args: [6]uint64{0x7fff}}, {name: "io_uring_setup"}, {name: "kill", args: [6]uint64{bad}},
		{name: "clone", args: [6]uint64{sighand | uint64(unix.SIGCHLD)}}, {name: "clone3"}, {name: "execve"},
		{name: "connect", args: [6]uint64{bad}}, {name: "chdir"}, {name: "getdents64", args: [6]uint64{bad}},
		{name: "prctl", args: [6]uint64{unix.PR_SET_DUMPABLE, 1}}, {name: "setuid", args: [6]uint64{0xffffffff}},
		{name: "memfd_create"}, {name: "truncate"},
		// allowed
		{name: "getpid"}, {name: "close", args: [6]uint64{bad}}, {name: "fstat", args: [6]uint64{bad}},
	}
	checkCalls(t, "safe_read", calls)
	checkCalls(t, "safe_write", append(calls, call{name: "renameat", args: [6]uint64{bad}}, call{name: "fchmod", args: [6]uint64{bad}}))
}
