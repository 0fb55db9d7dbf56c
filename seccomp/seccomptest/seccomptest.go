//go:build linux

// Package seccomptest runs victims for seccomp tests: the test binary re-executed under a real filter, making real system calls, watched from the parent.
package seccomptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/seccomp"
)

// Environment of a victim.
const (
	EnvCase    = "CONTEXTD_SECCOMP_VICTIM"  // the case to run; set only in victims
	EnvProfile = "CONTEXTD_SECCOMP_PROFILE" // the profile JSON; empty: no filter (a control run)
)

// Call is one raw system call a victim makes.
type Call struct {
	Nr   uintptr   `json:"nr"`
	Args [6]uint64 `json:"args,omitempty"`
}

// Outcome is what a Call returned.
type Outcome struct {
	Ret   uint64        `json:"ret"`
	Errno syscall.Errno `json:"errno"`
}

func (o Outcome) String() string {
	if o.Errno != 0 {
		return fmt.Sprintf("errno %d (%v)", int(o.Errno), o.Errno)
	}
	return fmt.Sprintf("ret %d", o.Ret)
}

// Case is a victim: it runs in the re-executed test binary and returns the
// exit code. Use Load to apply the profile at the right moment.
type Case func() int

// Main is called first thing in TestMain: in a victim it runs the case named
// by EnvCase and exits; otherwise it returns. The built-in case "calls" loads
// the profile and makes the calls read as JSON []Call from stdin, printing
// one JSON Outcome per line.
func Main(cases map[string]Case) {
	name := os.Getenv(EnvCase)
	if name == "" {
		return
	}
	if name == "calls" {
		os.Exit(callsCase())
	}
	c, ok := cases[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "victim: unknown case %q\n", name)
		os.Exit(3)
	}
	os.Exit(c())
}

// Load, in a victim, locks the goroutine to its thread and loads the profile
// from EnvProfile (none for a control run). It exits the victim with code 4
// if that fails.
func Load() {
	runtime.LockOSThread()
	js := os.Getenv(EnvProfile)
	if js == "" {
		return
	}
	p, err := seccomp.Parse([]byte(js))
	if err == nil {
		err = p.Load()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim: load:", err)
		os.Exit(4)
	}
}

func callsCase() int {
	var calls []Call
	if err := json.NewDecoder(os.Stdin).Decode(&calls); err != nil {
		fmt.Fprintln(os.Stderr, "victim: calls:", err)
		return 3
	}
	Load()
	// Print after all calls: the filter may forbid nothing in write(2), but
	// keep the calls back to back anyway.
	out := make([]Outcome, len(calls))
	for i, c := range calls {
		r, _, e := syscall.RawSyscall6(c.Nr, uintptr(c.Args[0]), uintptr(c.Args[1]), uintptr(c.Args[2]),
			uintptr(c.Args[3]), uintptr(c.Args[4]), uintptr(c.Args[5]))
		out[i] = Outcome{Ret: uint64(r), Errno: e}
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	for _, o := range out {
		enc.Encode(o)
	}
	w.Flush()
	return 0
}

// Result is how a victim ended.
type Result struct {
	Stdout, Stderr string
	ExitCode       int            // -1 if killed by a signal
	Signal         syscall.Signal // the killing signal, if any
}

// Run starts the test binary as victim c with the profile (nil: control run)
// and extra environment, waits (10 s at most) and returns how it ended.
func Run(t testing.TB, c string, profile []byte, env ...string) Result {
	t.Helper()
	return RunInput(t, c, profile, nil, env...)
}

// RunInput is Run with stdin.
func RunInput(t testing.TB, c string, profile, stdin []byte, env ...string) Result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvCase+"="+c, EnvProfile+"="+string(profile))
	cmd.Env = append(cmd.Env, env...)
	// A session of its own: no controlling terminal for calls such as
	// vhangup to act on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("victim %s: timed out; stdout %q stderr %q", c, stdout.String(), stderr.String())
	}
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		r.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			r.Signal = ws.Signal()
		}
	default:
		t.Fatalf("victim %s: %v", c, err)
	}
	return r
}

// Calls runs the "calls" victim and returns one Outcome per call. The victim
// must exit normally.
func Calls(t testing.TB, profile []byte, calls []Call) []Outcome {
	t.Helper()
	js, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	r := RunInput(t, "calls", profile, js)
	if r.ExitCode != 0 {
		t.Fatalf("calls victim: exit %d signal %v; stderr: %s", r.ExitCode, r.Signal, r.Stderr)
	}
	var out []Outcome
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		var o Outcome
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("calls victim: bad line %q: %v", line, err)
		}
		out = append(out, o)
	}
	if len(out) != len(calls) {
		t.Fatalf("calls victim: %d outcomes for %d calls; stdout %q stderr %q", len(out), len(calls), r.Stdout, r.Stderr)
	}
	return out
}

// Status returns the named fields of /proc/self/status (e.g. "Seccomp",
// "NoNewPrivs") of the calling thread's process, or of the task given by
// path (e.g. "/proc/self/task/123/status").
func Status(path string, fields ...string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				m[k] = strings.TrimSpace(v)
			}
		}
	}
	return m, nil
}
