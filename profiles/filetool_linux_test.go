//go:build cgo

package profiles_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/seccomp/seccomptest"
)

// The file-tool victims reproduce how a file tool runs in the sandbox: the
// sandbox init loads the tool's profile and execs the contextd binary
// through a descriptor opened beforehand (execveat, AT_EMPTY_PATH); the
// binary, a complete cgo-linked Go program like contextd, starts under the
// filter and does what package workspace does for safe_read and safe_write.

// Environment of the file-tool victims.
const (
	envOp        = "CONTEXTD_FILETOOL_OP"        // read | write
	envWorkspace = "CONTEXTD_FILETOOL_WORKSPACE" // absolute path
	envPath      = "CONTEXTD_FILETOOL_PATH"      // relative to the workspace
	envNoExec    = "CONTEXTD_FILETOOL_NOEXEC"    // "1": load no_exec.json first
	envProbes    = "CONTEXTD_FILETOOL_PROBES"    // "1": try forbidden calls after the operation
)

// filetoolVictim is the sandbox init: load the profile, exec the tool.
func filetoolVictim() int {
	exe, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open /proc/self/exe:", err)
		return 5
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, seccomptest.EnvCase+"=") && !strings.HasPrefix(e, seccomptest.EnvProfile+"=") {
			env = append(env, e)
		}
	}
	env = append(env, seccomptest.EnvCase+"=filetool-child")
	argv := []string{"contextd-tool", os.Getenv(envOp)}
	seccomptest.Load()
	err = execveat(exe, argv, env)
	fmt.Println("execveat:", err)
	return 5
}

func execveat(fd int, argv, env []string) error {
	empty, _ := syscall.BytePtrFromString("")
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	_, _, e := syscall.RawSyscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return e
}

// filetoolChild is the tool, running under the filter from its first
// instruction.
func filetoolChild() int {
	if os.Getenv(envNoExec) == "1" {
		p, err := profiles.Embedded("no_exec")
		if err == nil {
			err = p.Load()
		}
		if err != nil {
			fmt.Println("no_exec:", err)
			return 6
		}
	}
	root, err := unix.Open(os.Getenv(envWorkspace), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open workspace:", err)
		return 6
	}
	switch op := os.Args[1]; op {
	case "read":
		err = toolRead(root, os.Getenv(envPath))
	case "write":
		err = toolWrite(root, os.Getenv(envPath))
	default:
		err = fmt.Errorf("unknown op %q", op)
	}
	if err != nil {
		fmt.Println("FAIL:", err)
		return 7
	}
	fmt.Println("\nOK")
	if os.Getenv(envProbes) == "1" {
		probes()
	}
	return 0
}

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

func openat2(dirfd int, rel string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		return fd, err
	}
}

// toolRead is safe_read: confined open, fstat, read, write to stdout.
func toolRead(root int, rel string) error {
	fd, err := openat2(root, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return fmt.Errorf("openat2: %w", err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", rel)
	}
	_, err = io.Copy(os.Stdout, f)
	return err
}

// toolWrite is safe_write: the data comes on stdin; missing parent
// directories are created; a symlink is followed (readlinkat); the file is
// replaced atomically through a temporary file (openat O_EXCL, write,
// fchmod, fsync, renameat, fsync of the directory); a leftover temporary
// file is removed (unlinkat).
func toolWrite(root int, rel string) error {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	dirRel, base := path.Split(rel)
	if dirRel == "" {
		dirRel = "."
	}
	dirfd, err := openat2(root, dirRel, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		// Create the missing parents one level at a time, each beneath
		// its confined parent, as package workspace does.
		parts := strings.Split(path.Clean(dirRel), "/")
		for i := range parts {
			pfd, err := openat2(root, path.Join(append([]string{"."}, parts[:i]...)...), unix.O_RDONLY|unix.O_DIRECTORY)
			if err != nil {
				return fmt.Errorf("openat2 parent: %w", err)
			}
			err = unix.Mkdirat(pfd, parts[i], 0o755)
			unix.Close(pfd)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("mkdirat: %w", err)
			}
		}
		dirfd, err = openat2(root, dirRel, unix.O_RDONLY|unix.O_DIRECTORY)
	}
	if err != nil {
		return fmt.Errorf("openat2 dir: %w", err)
	}
	defer unix.Close(dirfd)
	mode := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("fstatat: %w", err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dirfd, base, buf)
		if err != nil {
			return fmt.Errorf("readlinkat: %w", err)
		}
		return fmt.Errorf("symlink to %q: not followed in this test", buf[:n])
	default:
		mode = st.Mode & 0o7777
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("getrandom: %w", err)
	}
	tmp := ".contextd-" + base + "-" + hex.EncodeToString(rnd[:])
	// A leftover of an earlier, failed write: removed.
	if fd, err := unix.Openat(dirfd, tmp+".old", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600); err == nil {
		unix.Close(fd)
		if err := unix.Unlinkat(dirfd, tmp+".old", 0); err != nil {
			return fmt.Errorf("unlinkat: %w", err)
		}
	}
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("openat: %w", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write: %w", err)
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		f.Close()
		return fmt.Errorf("fchmod: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		return fmt.Errorf("renameat: %w", err)
	}
	if err := unix.Fsync(dirfd); err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	fmt.Printf("wrote %d bytes", len(data))
	return nil
}

// probes tries calls a file tool never makes and prints their errno.
func probes() {
	runtime.LockOSThread()
	sh, _ := syscall.BytePtrFromString("/bin/sh")
	argv, _ := syscall.SlicePtrFromStrings([]string{"sh", "-c", "echo escaped"})
	env, _ := syscall.SlicePtrFromStrings(nil)
	calls := []struct {
		name string
		nr   uintptr
		args [6]uintptr
	}{
		{"socket", unix.SYS_SOCKET, [6]uintptr{unix.AF_INET, unix.SOCK_STREAM}},
		{"socket_unix", unix.SYS_SOCKET, [6]uintptr{unix.AF_UNIX, unix.SOCK_STREAM}},
		{"ptrace", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_ATTACH, 1}},
		{"mount", unix.SYS_MOUNT, [6]uintptr{}},
		{"unshare", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"fork", unix.SYS_CLONE, [6]uintptr{uintptr(syscall.SIGCHLD) | unix.CLONE_SIGHAND}},
		{"kill", unix.SYS_KILL, [6]uintptr{1, 0}},
		{"execve", unix.SYS_EXECVE, [6]uintptr{uintptr(unsafe.Pointer(sh)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&env[0]))}},
	}
	for _, c := range calls {
		_, _, e := syscall.RawSyscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		fmt.Printf("%s %d\n", c.name, int(e))
	}
}
