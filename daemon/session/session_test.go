package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

// statLine builds a /proc/PID/stat line with the given comm, ppid and start time.
func statLine(pid int, comm string, ppid int, start uint64) string {
	// Fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime ...
	return fmt.Sprintf("%d (%s) S %d 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 1000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, ppid, start)
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		want  proc
		isErr bool
	}{
		{"plain", statLine(10, "bash", 9, 12345), proc{9, "bash", 12345}, false},
		{"space in comm", statLine(10, "Web Content", 3, 7), proc{3, "Web Content", 7}, false},
		{"paren in comm", statLine(10, "a) S 99 (b", 4, 8), proc{4, "a) S 99 (b", 8}, false},
		{"only parens", statLine(10, ")()(", 5, 9), proc{5, ")()(", 9}, false},
		{"trailing paren", statLine(10, "x)", 6, 10), proc{6, "x)", 10}, false},
		{"empty comm", statLine(10, "", 2, 11), proc{2, "", 11}, false},
		{"numbers in comm", statLine(10, "1 2 3 4 5", 7, 12), proc{7, "1 2 3 4 5", 12}, false},
		{"large start time", statLine(10, "x", 1, 1<<62), proc{1, "x", 1 << 62}, false},
		{"no parens", "10 bash S 9 1 1", proc{}, true},
		{"no close paren", "10 (bash S 9 1 1 0", proc{}, true},
		{"close before open", "10 )bash( S 9", proc{}, true},
		{"short", "10 (bash) S 9 1 1", proc{}, true},
		{"empty", "", proc{}, true},
		{"bad ppid", strings.Replace(statLine(10, "x", 9, 1), " S 9 ", " S nine ", 1), proc{}, true},
		{"bad start", strings.Replace(statLine(10, "x", 9, 4242), " 4242 ", " -1 ", 1), proc{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if tt.isErr {
				if err == nil {
					t.Fatalf("parseStat(%q) = %+v, want an error", tt.line, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStat(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
			}
		})
	}
}

// The parser agrees with the kernel on this very process.
func TestParseStatRealProc(t *testing.T) {
	p, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", p.ppid, os.Getppid())
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	if p.comm != strings.TrimSuffix(string(comm), "\n") {
		t.Errorf("comm %q, want %q", p.comm, comm)
	}
	if p.startTime == 0 {
		t.Error("start time 0")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"claude-2024.05.01_run:7@host", true},
		{strings.Repeat("x", MaxLen), true},
		{"a-0123456789abcdef", true},
		{"", false},
		{strings.Repeat("x", MaxLen+1), false},
		{"has space", false},
		{"a/b", false},
		{"../etc", false},
		{"tab\there", false},
		{"new\nline", false},
		{"nul\x00", false},
		{"ünïcode", false},
		{"日本", false},
		{"semi;colon", false},
		{"$(id)", false},
		{"a=b", false},
	}
	for _, tt := range tests {
		err := Validate(tt.id)
		if tt.ok && err != nil {
			t.Errorf("Validate(%q): %v", tt.id, err)
		}
		if !tt.ok && !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("Validate(%q) = %v, want %s", tt.id, err, catalog.ErrBadInput.Code)
		}
	}
}

var idRE = regexp.MustCompile(`^a-[0-9a-f]{16}$`)

// start runs name (a copy of /bin/sh under that name, so /proc shows it as the
// process's comm) with script in a process group of its own, killed at cleanup.
func start(t *testing.T, dir, name, script string) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		sh, err := os.ReadFile("/bin/sh")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, sh, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	return cmd
}

// childOf waits for a child of pid whose comm is comm, and returns its pid.
func childOf(t *testing.T, pid int, comm string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, f := range strings.Fields(string(b)) {
			var c int
			fmt.Sscan(f, &c)
			if p, err := readProc(c); err == nil && p.comm == comm {
				return c
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s child of %d appeared", comm, pid)
	return 0
}

func TestDeriveRealProcesses(t *testing.T) {
	self1, err := Derive(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self2, err := Derive(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self1 != self2 || !idRE.MatchString(self1) {
		t.Fatalf("Derive(self) = %q then %q, want one stable a-<16 hex>", self1, self2)
	}

	dir := t.TempDir()
	// This test process is the "agent" of a proxy that runs under a shell: the shell
	// is passed through, the agent is us.
	viaShell := start(t, dir, "sh", "sleep 30; :")
	proxy := childOf(t, viaShell.Process.Pid, "sleep")
	fromProxy, err := Derive(proxy)
	if err != nil {
		t.Fatal(err)
	}
	fromShell, err := Derive(viaShell.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if fromProxy != fromShell {
		t.Errorf("the same agent behind a shell gives %q and %q", fromProxy, fromShell)
	}
	if again, _ := Derive(proxy); again != fromProxy {
		t.Errorf("not stable: %q then %q", fromProxy, again)
	}
	if fromProxy == self1 {
		t.Errorf("a proxy under this process and this process itself share the id %q, though their agents differ", self1)
	}

	// Another agent process (not a shell): its proxies get another id, and two of
	// its proxies share one.
	agentB := start(t, dir, "agent-b", "sleep 30 & sleep 30; wait")
	deadline := time.Now().Add(5 * time.Second)
	var kids []int
	for len(kids) < 2 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", agentB.Process.Pid, agentB.Process.Pid))
		kids = nil
		for _, f := range strings.Fields(string(b)) {
			var c int
			fmt.Sscan(f, &c)
			if p, err := readProc(c); err == nil && p.comm == "sleep" {
				kids = append(kids, c)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(kids) < 2 {
		t.Fatalf("agent-b has children %v", kids)
	}
	b1, err1 := Derive(kids[0])
	b2, err2 := Derive(kids[1])
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if b1 != b2 {
		t.Errorf("two proxies of one agent: %q and %q", b1, b2)
	}
	if b1 == fromProxy || b1 == self1 {
		t.Errorf("another agent got the same id %q", b1)
	}
	if want := idFor(t, agentB.Process.Pid); b1 != want {
		t.Errorf("id %q is not the agent's pid and start time (%q)", b1, want)
	}
	if want := idFor(t, os.Getpid()); fromProxy != want {
		t.Errorf("id %q, want the test process's %q", fromProxy, want)
	}
}

// idFor computes the id of agent pid the way Derive documents it, through a fake
// /proc where pid's child is a proxy.
func idFor(t *testing.T, agent int) string {
	t.Helper()
	p, err := readProc(agent)
	if err != nil {
		t.Fatal(err)
	}
	fake := t.TempDir()
	writeStat(t, fake, 2, statLine(2, "contextd-proxy", agent, 1))
	writeStat(t, fake, agent, statLine(agent, "agent", 1, p.startTime))
	old := procRoot
	procRoot = fake
	defer func() { procRoot = old }()
	id, err := Derive(2)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func writeStat(t *testing.T, root string, pid int, line string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The walk over a made-up process tree: shells and wrappers are passed through,
// the first other process is the agent, and pid reuse changes the id.
func TestDeriveWalk(t *testing.T) {
	fake := t.TempDir()
	old := procRoot
	procRoot = fake
	t.Cleanup(func() { procRoot = old })
	for _, p := range []struct {
		pid, ppid int
		comm      string
		start     uint64
	}{
		{1, 0, "init", 1},
		{50, 1, "sshd", 5},
		{100, 50, "claude", 1000},
		{110, 100, "bash", 1100},
		{120, 110, "timeout", 1200},
		{130, 120, "env", 1300},
		{140, 130, "contextd-proxy", 1400},
		{150, 100, "contextd-proxy", 1500}, // directly under the agent
		{160, 1, "contextd-proxy", 1600},   // orphan: no agent above
		{170, 999, "contextd-proxy", 1700}, // parent gone
		{180, 110, "sh", 1800},             // only shells above, up to the agent
		{190, 180, "bash", 1900},
		{200, 190, "contextd-proxy", 2000},
	} {
		writeStat(t, fake, p.pid, statLine(p.pid, p.comm, p.ppid, p.start))
	}
	derive := func(pid int) string {
		t.Helper()
		id, err := Derive(pid)
		if err != nil {
			t.Fatalf("Derive(%d): %v", pid, err)
		}
		return id
	}
	agent := derive(140)
	for _, pid := range []int{150, 200, 110} {
		if got := derive(pid); got != agent {
			t.Errorf("Derive(%d) = %q, want the agent's %q", pid, got, agent)
		}
	}
	if derive(160) == agent || derive(170) == agent {
		t.Error("a proxy without that agent got its id")
	}
	if first, again := derive(160), derive(160); first != again {
		t.Errorf("unstable id: %q then %q", first, again)
	}
	// The agent restarts with the same pid: a new start time, a new session.
	writeStat(t, fake, 100, statLine(100, "claude", 50, 999999))
	if derive(140) == agent {
		t.Error("a restarted agent (same pid, new start time) kept the old session")
	}
	if _, err := Derive(4242); err == nil {
		t.Error("Derive of a missing process succeeded")
	}
	writeStat(t, fake, 300, "garbage")
	if _, err := Derive(300); err == nil {
		t.Error("Derive with a malformed stat succeeded")
	}
}
