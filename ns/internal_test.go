//go:build linux

package ns

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func TestWithDefaults(t *testing.T) {
	s := &Spec{Argv: []string{"true"}, Workspace: "/w/./x/", Seccomp: []byte("{}")}
	c, err := s.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeExec || c.Hostname != DefaultHostname || c.Workspace != "/w/x" || c.Dir != "/w/x" {
		t.Errorf("defaults: %+v", c)
	}
	if !reflect.DeepEqual(c.ReadOnly, DefaultReadOnly) {
		t.Errorf("ReadOnly %v", c.ReadOnly)
	}
	if !reflect.DeepEqual(c.Rlimits, DefaultRlimits) {
		t.Errorf("Rlimits %v", c.Rlimits)
	}
	if s.Mode != "" || s.ReadOnly != nil {
		t.Error("withDefaults changed its receiver")
	}

	s.ReadOnly = []string{}
	s.Rlimits = []Rlimit{{Resource: "rlimit_nofile", Soft: 10, Hard: 20}, {Resource: "AS", Soft: 1 << 30, Hard: 1 << 30}}
	c, err = s.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ReadOnly) != 0 {
		t.Errorf("an empty ReadOnly must stay empty: %v", c.ReadOnly)
	}
	want := []Rlimit{{"CORE", 0, 0}, {"NOFILE", 10, 20}, {"AS", 1 << 30, 1 << 30}}
	if !reflect.DeepEqual(c.Rlimits, want) {
		t.Errorf("Rlimits %v, want %v", c.Rlimits, want)
	}

	bad := []func(*Spec){
		func(s *Spec) { s.Argv = nil },
		func(s *Spec) { s.Argv = []string{""} },
		func(s *Spec) { s.Mode = "shell" },
		func(s *Spec) { s.Seccomp = nil },
		func(s *Spec) { s.Workspace = "" },
		func(s *Spec) { s.Workspace = "/" },
		func(s *Spec) { s.Workspace = "/dev/shm/x" },
		func(s *Spec) { s.Home = "/w/x" },
		func(s *Spec) { s.Home = "rel" },
		func(s *Spec) { s.Dir = "rel" },
		func(s *Spec) { s.ReadOnly = []string{"/proc/1"} },
		func(s *Spec) { s.ReadWrite = []string{"/"} },
		func(s *Spec) { s.ReadWrite = []string{"tmp"} },
		func(s *Spec) { s.Hostname = string(make([]byte, 65)) },
		func(s *Spec) { s.Rlimits = []Rlimit{{Resource: "NOFILE", Soft: 2, Hard: 1}} },
		func(s *Spec) { s.Rlimits = []Rlimit{{Resource: "FOO"}} },
		func(s *Spec) { s.HomeDir = "/scratch" }, // without Home
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "scratch" },
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "/h/u/" },
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "/h" },
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "/" },
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "/w/x/.scratch" },
		func(s *Spec) { s.Home, s.HomeDir = "/h/u", "/dev/shm/h" },
		func(s *Spec) { s.Binds = []Bind{{Source: "rel", Target: "/t"}} },
		func(s *Spec) { s.Binds = []Bind{{Source: "/s", Target: ""}} },
		func(s *Spec) { s.Binds = []Bind{{Source: "/s", Target: "/proc/sys"}} },
		func(s *Spec) { s.Binds = []Bind{{Source: "/s", Target: "/"}} },
		func(s *Spec) { s.Overlays = []Overlay{{Lower: "/l", Upper: "/u", Work: ""}} },
		func(s *Spec) { s.Overlays = []Overlay{{Lower: "l", Upper: "/u", Work: "/w"}} },
		func(s *Spec) { s.Overlays = []Overlay{{Lower: "/l", Upper: "/u/", Work: "/u"}} },
		func(s *Spec) { s.Overlays = []Overlay{{Lower: "/l", Upper: "/u", Work: "/w", Target: "/dev/l"}} },
		func(s *Spec) { s.Masks = []string{"rel"} },
		func(s *Spec) { s.Masks = []string{"/"} },
	}
	for i, edit := range bad {
		s := &Spec{Argv: []string{"true"}, Workspace: "/w/x", Seccomp: []byte("{}")}
		edit(s)
		_, err := s.withDefaults()
		if err == nil || err.Step != StepValidate || !errors.Is(err, ErrSetup) {
			t.Errorf("case %d: %v, want a validate error", i, err)
		}
	}
	if _, err := (*Spec)(nil).withDefaults(); err == nil {
		t.Error("nil spec accepted")
	}

	// The views are cleaned, on copies; an overlay's target defaults to
	// its lower directory.
	s = &Spec{Argv: []string{"true"}, Workspace: "/w/x", Seccomp: []byte("{}"), Home: "/h/u", HomeDir: "/c/homes/x/",
		Binds:    []Bind{{Source: "/s/./npmrc", Target: "/h/u/.npmrc/"}},
		Overlays: []Overlay{{Lower: "/h/u/go/pkg/mod/", Upper: "/c/u", Work: "/c/w"}},
		Masks:    []string{"/h/u/.ssh/"},
	}
	c, err = s.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.HomeDir != "/c/homes/x" || c.Binds[0] != (Bind{Source: "/s/npmrc", Target: "/h/u/.npmrc"}) ||
		c.Overlays[0] != (Overlay{Lower: "/h/u/go/pkg/mod", Upper: "/c/u", Work: "/c/w", Target: "/h/u/go/pkg/mod"}) ||
		c.Masks[0] != "/h/u/.ssh" {
		t.Errorf("views: %+v", c)
	}
	if s.Binds[0].Target != "/h/u/.npmrc/" || s.Overlays[0].Target != "" || s.Masks[0] != "/h/u/.ssh/" {
		t.Error("withDefaults changed its receiver's slices")
	}
}

func TestSetupErrorMessage(t *testing.T) {
	e := &SetupError{Step: StepMounts, Syscall: "mount", Path: "workspace /w", Errno: syscall.EPERM}
	if got, want := e.Error(), "sandbox setup failed at step mounts (workspace /w): mount: operation not permitted (EPERM)"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if !errors.Is(e, syscall.EPERM) || !errors.Is(e, ErrSetup) {
		t.Error("Is")
	}
	e = &SetupError{Step: StepValidate, Msg: "no seccomp profile"}
	if got := e.Error(); got != "sandbox setup failed at step validate: no seccomp profile" {
		t.Errorf("got %q", got)
	}
}

// The init must not run the command when the daemon goes away before the
// release (here: it closes its end of the sync socket).
func TestInitStopsWhenDaemonCloses(t *testing.T) {
	ws := t.TempDir()
	marker := filepath.Join(ws, "ran")
	c, err := Start(&Spec{
		Argv:      []string{"touch", marker},
		Env:       []string{"PATH=/usr/bin:/bin"},
		Workspace: ws,
		Seccomp:   []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`),
	}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err != nil {
		t.Fatal(err)
	}
	c.sync.Close()
	code, _, err := c.Wait()
	var se *SetupError
	if !errors.As(err, &se) || se.Step != StepSync || code != -1 {
		t.Errorf("Wait: %d %v, want a sync setup error", code, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a release")
	}
}
