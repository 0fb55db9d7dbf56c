//go:build cgo

package seccomp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	. "github.com/contextd/contextd/seccomp"
	"github.com/contextd/contextd/seccomp/seccomptest"
)

// Victims: this test binary re-executed (seccomptest.Run) loads a profile
// and is watched making real system calls under it.
func TestMain(m *testing.M) {
	seccomptest.Main(map[string]seccomptest.Case{
		"trap":           trapVictim,
		"kill":           killVictim,
		"threads":        threadsVictim,
		"tsync-conflict": tsyncConflictVictim,
	})
	os.Exit(m.Run())
}

// getppid ignores its arguments, but the filter sees them: a harmless call
// to test comparisons with. It never fails on its own.
const probe = unix.SYS_GETPPID

const probeErrno = syscall.EXFULL // an errno no probe returns by itself

func probeProfile(t *testing.T, groups ...Syscall) []byte {
	t.Helper()
	p := &Profile{DefaultAction: ActAllow, Syscalls: groups}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TestArgOps checks each comparison in the kernel against its meaning, at
// boundaries of both 32-bit halves.
func TestArgOps(t *testing.T) {
	t.Parallel()
	const v = 0x1_0000_0005
	values := []uint64{0, 1, 4, 5, 6, 0xffff_ffff, 0x1_0000_0000, 0x1_0000_0004, v, 0x1_0000_0006, 0x2_0000_0005, 1<<63 | 5, 1<<64 - 1}
	ops := []struct {
		op        Operator
		value, v2 uint64
		holds     func(x uint64) bool
	}{
		{OpEqual, v, 0, func(x uint64) bool { return x == v }},
		{OpNotEqual, v, 0, func(x uint64) bool { return x != v }},
		{OpLessThan, v, 0, func(x uint64) bool { return x < v }},
		{OpLessEqual, v, 0, func(x uint64) bool { return x <= v }},
		{OpGreaterThan, v, 0, func(x uint64) bool { return x > v }},
		{OpGreaterEqual, v, 0, func(x uint64) bool { return x >= v }},
		// Masked: Value is the mask, ValueTwo the wanted masked value.
		{OpMaskedEqual, 0x1_0000_0006, 0x1_0000_0004, func(x uint64) bool { return x&0x1_0000_0006 == 0x1_0000_0004 }},
		{OpMaskedEqual, 0x7e02_0000, 0, func(x uint64) bool { return x&0x7e02_0000 == 0 }},
	}
	for _, o := range ops {
		t.Run(fmt.Sprintf("%s_%#x_%#x", o.op, o.value, o.v2), func(t *testing.T) {
			t.Parallel()
			for idx := uint(0); idx <= MaxArgIndex; idx += 5 { // first and last argument
				prof := probeProfile(t, Syscall{Comment: "probe", Names: []string{"getppid"}, Action: ActErrno,
					ErrnoRet: uint(probeErrno), Args: []Arg{{Index: idx, Value: o.value, ValueTwo: o.v2, Op: o.op}}})
				var calls []seccomptest.Call
				for _, x := range values {
					c := seccomptest.Call{Nr: probe}
					c.Args[idx] = x
					calls = append(calls, c)
				}
				out := seccomptest.Calls(t, prof, calls)
				for i, x := range values {
					want := syscall.Errno(0)
					if o.holds(x) {
						want = probeErrno
					}
					if out[i].Errno != want {
						t.Errorf("arg %d = %#x: %v, want errno %d", idx, x, out[i], want)
					}
				}
			}
		})
	}
}

// TestAndOr: the args of one group are ANDed; groups naming the same call
// are ORed.
func TestAndOr(t *testing.T) {
	t.Parallel()
	prof := probeProfile(t,
		Syscall{Comment: "and", Names: []string{"getppid"}, Action: ActErrno, ErrnoRet: uint(probeErrno),
			Args: []Arg{{Index: 0, Value: 1, Op: OpEqual}, {Index: 1, Value: 2, Op: OpEqual}}},
		Syscall{Comment: "or", Names: []string{"getppid"}, Action: ActErrno, ErrnoRet: uint(probeErrno),
			Args: []Arg{{Index: 2, Value: 7, Op: OpEqual}}})
	cases := []struct {
		args [6]uint64
		hit  bool
	}{
		{[6]uint64{1, 2}, true}, {[6]uint64{1, 0}, false}, {[6]uint64{0, 2}, false},
		{[6]uint64{0, 0, 7}, true}, {[6]uint64{1, 2, 7}, true}, {[6]uint64{}, false},
	}
	var calls []seccomptest.Call
	for _, c := range cases {
		calls = append(calls, seccomptest.Call{Nr: probe, Args: c.args})
	}
	out := seccomptest.Calls(t, prof, calls)
	for i, c := range cases {
		if hit := out[i].Errno == probeErrno; hit != c.hit {
			t.Errorf("args %v: %v, want hit=%v", c.args, out[i], c.hit)
		}
	}
}

// TestErrnoRet: a group's errno is its errnoRet, else defaultErrnoRet, else
// EPERM; the default action uses defaultErrnoRet too.
func TestErrnoRet(t *testing.T) {
	t.Parallel()
	g := func(name string, errno uint) Syscall {
		return Syscall{Comment: name, Names: []string{name}, Action: ActErrno, ErrnoRet: errno}
	}
	run := func(p *Profile) []seccomptest.Outcome {
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return seccomptest.Calls(t, js, []seccomptest.Call{{Nr: unix.SYS_GETPPID}, {Nr: unix.SYS_GETUID}, {Nr: unix.SYS_GETGID}})
	}
	out := run(&Profile{DefaultAction: ActAllow, Syscalls: []Syscall{g("getppid", 0), g("getuid", 13)}})
	if out[0].Errno != syscall.EPERM || out[1].Errno != syscall.EACCES || out[2].Errno != 0 {
		t.Errorf("no defaultErrnoRet: %v, want EPERM, EACCES, success", out)
	}
	out = run(&Profile{DefaultAction: ActAllow, DefaultErrnoRet: 38, Syscalls: []Syscall{g("getppid", 0), g("getuid", 13)}})
	if out[0].Errno != syscall.ENOSYS || out[1].Errno != syscall.EACCES {
		t.Errorf("defaultErrnoRet 38: %v, want ENOSYS, EACCES", out)
	}
}

// trapVictim makes a trapped call. The Go runtime turns a synchronous
// SIGSYS into a crash report, which is what the test looks for.
func trapVictim() int {
	seccomptest.Load()
	_, _, e := syscall.RawSyscall(probe, 0x5157, 0, 0)
	fmt.Println("returned, errno", int(e))
	return 0
}

// TestTrap: SCMP_ACT_TRAP delivers SIGSYS with si_code SYS_SECCOMP (1) to
// the thread (the process is not killed by the kernel: Go's handler runs).
func TestTrap(t *testing.T) {
	t.Parallel()
	prof := probeProfile(t, Syscall{Comment: "trap", Names: []string{"getppid"}, Action: ActTrap,
		Args: []Arg{{Index: 0, Value: 0x5157, Op: OpEqual}}})
	r := seccomptest.Run(t, "trap", prof)
	if r.Signal != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "SIGSYS: bad system call") || !strings.Contains(r.Stderr, "sigcode=1") {
		t.Errorf("trap victim: %+v", r)
	}
}

func killVictim() int {
	seccomptest.Load()
	fmt.Println("before")
	os.Stdout.Sync()
	syscall.RawSyscall(probe, 0x5157, 0, 0)
	fmt.Println("after")
	return 0
}

func TestKillProcess(t *testing.T) {
	t.Parallel()
	prof := probeProfile(t, Syscall{Comment: "kill", Names: []string{"getppid"}, Action: ActKillProcess,
		Args: []Arg{{Index: 0, Value: 0x5157, Op: OpEqual}}})
	r := seccomptest.Run(t, "kill", prof)
	if r.Signal != syscall.SIGSYS || r.Stdout != "before\n" {
		t.Errorf("kill victim: %+v, want killed by SIGSYS after printing before", r)
	}
	// LOG lets the call run.
	prof = probeProfile(t, Syscall{Comment: "log", Names: []string{"getppid"}, Action: ActLog,
		Args: []Arg{{Index: 0, Value: 0x5157, Op: OpEqual}}})
	if r := seccomptest.Run(t, "kill", prof); r.ExitCode != 0 || r.Stdout != "before\nafter\n" {
		t.Errorf("log victim: %+v", r)
	}
}

// TestBadArch: a system call through an ABI the profile does not list (x32
// here: the syscall number with bit 30 set, same audit arch as x86_64) kills
// the process; without the filter the kernel just says ENOSYS.
func TestBadArch(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists only on x86_64") // never on the project's machines
	}
	call := []seccomptest.Call{{Nr: 0x4000_0000 | unix.SYS_GETPID}}
	if out := seccomptest.Calls(t, nil, call); out[0].Errno != syscall.ENOSYS && out[0].Errno != 0 {
		t.Fatalf("x32 getpid without a filter: %v", out[0])
	}
	prof := probeProfile(t, Syscall{Comment: "anything", Names: []string{"ptrace"}, Action: ActErrno})
	js, _ := json.Marshal(call)
	r := seccomptest.RunInput(t, "calls", prof, js)
	if r.Signal != syscall.SIGSYS {
		t.Errorf("x32 getpid under an x86_64-only filter: %+v, want killed by SIGSYS", r)
	}
}

// threadsVictim starts threads, loads the filter on one of them and reports
// the seccomp mode and no_new_privs of every thread of the process.
func threadsVictim() int {
	ready := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			runtime.LockOSThread() // keep a distinct OS thread alive
			ready <- struct{}{}
			select {}
		}()
		<-ready
	}
	seccomptest.Load()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) < 5 {
		fmt.Println("tasks:", len(tasks), err)
		return 1
	}
	for _, st := range tasks {
		m, err := seccomptest.Status(st, "Seccomp", "NoNewPrivs")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Printf("%s %s\n", m["Seccomp"], m["NoNewPrivs"])
	}
	return 0
}

// TestAllThreads: TSYNC puts every thread of the process under the filter,
// with no_new_privs, not only the one that called Load.
func TestAllThreads(t *testing.T) {
	t.Parallel()
	prof := probeProfile(t, Syscall{Comment: "anything", Names: []string{"ptrace"}, Action: ActErrno})
	r := seccomptest.Run(t, "threads", prof)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.ExitCode != 0 || len(lines) < 5 {
		t.Fatalf("threads victim: %+v", r)
	}
	for _, l := range lines {
		if l != "2 1" {
			t.Errorf("a thread has Seccomp/NoNewPrivs %q, want \"2 1\" (all: %q)", l, lines)
		}
	}
	// Control: without the filter the same victim reports 0 0.
	r = seccomptest.Run(t, "threads", nil)
	if !strings.HasPrefix(r.Stdout, "0 0\n") {
		t.Errorf("control threads victim: %+v", r)
	}
}

// tsyncConflictVictim gives one thread a filter of its own (without TSYNC),
// then calls Load on another: the kernel cannot synchronize the threads, and
// Load must fail rather than leave a thread unfiltered.
func tsyncConflictVictim() int {
	runtime.LockOSThread()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // this thread is never given back
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- err
			return
		}
		allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
		prog := unix.SockFprog{Len: 1, Filter: &allow[0]}
		done <- unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
		select {}
	}()
	if err := <-done; err != nil {
		fmt.Println("setup:", err)
		return 1
	}
	p, err := Parse([]byte(os.Getenv(seccomptest.EnvProfile)))
	if err != nil {
		fmt.Println("parse:", err)
		return 1
	}
	err = p.Load()
	m, _ := seccomptest.Status("/proc/thread-self/status", "Seccomp")
	fmt.Printf("ErrLoad=%v seccomp=%s err=%v\n", errors.Is(err, ErrLoad), m["Seccomp"], err)
	return 0
}

func TestLoadFailsClosed(t *testing.T) {
	t.Parallel()
	prof := probeProfile(t, Syscall{Comment: "anything", Names: []string{"ptrace"}, Action: ActErrno})
	r := seccomptest.Run(t, "tsync-conflict", prof)
	if !strings.HasPrefix(r.Stdout, "ErrLoad=true seccomp=0 ") || !strings.Contains(r.Stdout, "seccomp_load") {
		t.Errorf("tsync-conflict victim: %+v; want Load to fail with ErrLoad and this thread unfiltered", r)
	}
}
