package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/sandboxinfo"
)

const sandboxCheck = "complete sandbox (`true` under safe_bash's profile)"

var profileTools = []string{"safe_bash", "safe_read", "safe_write", "no_exec", "mcp-server", "plugin"}

// diagnose runs Diagnose and checks what every finding must have: a name of
// its own, a detail, and a fix when it failed.
func diagnose(t *testing.T) map[string]Check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	checks := Diagnose(ctx)
	m := map[string]Check{}
	for _, c := range checks {
		if c.Layer == "" || c.Detail == "" {
			t.Errorf("check without a name or a detail: %+v", c)
		}
		if _, dup := m[c.Layer]; dup {
			t.Errorf("two checks named %q", c.Layer)
		}
		if !c.OK && c.Fix == "" {
			t.Errorf("failed check %q says no fix: %+v", c.Layer, c)
		}
		m[c.Layer] = c
	}
	t.Logf("%d checks:", len(checks))
	for _, c := range checks {
		t.Logf("  %-55s ok=%-5v required=%-5v %s", c.Layer, c.OK, c.Required, c.Detail)
	}
	return m
}

// wantNames checks which checks Diagnose made.
func wantNames(t *testing.T, got map[string]Check, withManager bool) {
	t.Helper()
	want := []string{"unprivileged user namespaces", "openat2 path confinement"}
	for _, tool := range profileTools {
		want = append(want, "seccomp profile "+tool)
	}
	want = append(want, "systemd user manager (per-call scopes)")
	if withManager {
		want = append(want, "CPU quota per call")
	}
	want = append(want, sandboxCheck)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("checks %q, want %q", names, want)
	}
}

// sandboxLayers decodes the layers the sandbox check reports it ran under.
func sandboxLayers(t *testing.T, c Check) sandboxinfo.Layers {
	t.Helper()
	var l doctorLayers
	js, ok := strings.CutPrefix(c.Detail, "ran: ")
	if !ok || json.Unmarshal([]byte(js), &l) != nil {
		t.Fatalf("sandbox check detail %q is not \"ran: <layers>\"", c.Detail)
	}
	return sandboxinfo.Layers(l)
}

// On this machine (a user manager is up, see TestMain) every layer the
// sandbox needs works, and Diagnose says so by using each: the namespaces,
// openat2, every profile, the user manager, and a complete sandbox in a
// scope.
func TestDiagnose(t *testing.T) {
	mgr := scopes(t)
	// Diagnose's own Runner names its one scope contextd-safe_bash-<pid>-1
	// each time: a rerun in this process (-count) waits until the last one
	// is unloaded.
	waitUnitGone(t, fmt.Sprintf("contextd-safe_bash-%d-1.scope", os.Getpid()))
	got := diagnose(t)
	wantNames(t, got, true)
	for name, c := range got {
		if c.Required && !c.OK {
			t.Errorf("required check %q failed on this machine: %s (fix: %s)", name, c.Detail, c.Fix)
		}
	}
	for _, tool := range profileTools {
		c := got["seccomp profile "+tool]
		if want := "loads and compiles (" + profileSource(t, tool) + ")"; !c.Required || c.Detail != want {
			t.Errorf("profile check of %s: %+v, want required with detail %q", tool, c, want)
		}
	}
	if c := got["unprivileged user namespaces"]; !c.Required {
		t.Errorf("user namespaces not required: %+v", c)
	}
	m := got["systemd user manager (per-call scopes)"]
	if !m.OK || m.Required || !strings.Contains(m.Detail, "delegated controllers:") {
		t.Errorf("user manager check %+v, want OK (not required) naming the delegated controllers", m)
	}
	q := got["CPU quota per call"]
	if ok, _ := mgr.CPUQuota(); q.OK != ok || q.Required {
		t.Errorf("CPU quota check %+v, the manager says %v; want the same, not required", q, ok)
	}
	c := got[sandboxCheck]
	if !c.Required {
		t.Errorf("sandbox check not required: %+v", c)
	}
	l := sandboxLayers(t, c)
	if !l.Namespaces || l.Seccomp != profileSource(t, "safe_bash") || !strings.HasPrefix(l.Scope, "contextd-safe_bash-") || l.ScopeNote != "" || l.Network {
		t.Errorf("sandbox check ran under %+v, want namespaces, safe_bash's profile, a scope, no network", l)
	}
}

// Without a user manager the scope layer is reported missing (a warning, not
// required) and the complete sandbox still runs, saying why it had no scope.
func TestDiagnoseWithoutUserManager(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no bus socket in it
	got := diagnose(t)
	wantNames(t, got, false)
	m := got["systemd user manager (per-call scopes)"]
	if m.OK || m.Required || !strings.Contains(m.Detail, "no bus socket") {
		t.Errorf("user manager check %+v, want failed, not required, saying there is no bus socket", m)
	}
	c := got[sandboxCheck]
	if !c.OK {
		t.Fatalf("sandbox check without a user manager: %+v", c)
	}
	if l := sandboxLayers(t, c); !l.Namespaces || l.Seccomp == "" || l.Scope != "" || l.ScopeNote != "no user manager" {
		t.Errorf("sandbox check ran under %+v, want namespaces, seccomp, no scope and its note", l)
	}
}

// Diagnose loads profiles with the loader every call uses, and runs the
// sandbox for real: a broken override fails its check, and one that loads
// but breaks ordinary programs fails the sandbox check.
func TestDiagnoseProfileOverrides(t *testing.T) {
	noExec, err := profiles.EmbeddedJSON("no_exec")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		files  map[string]string
		failed []string // the required checks that must fail, no others
		detail map[string]string
	}{
		{"valid override", map[string]string{"mcp-server.json": allowAll}, nil,
			map[string]string{"seccomp profile mcp-server": "loads and compiles ($DIR/mcp-server.json)"}},
		{"broken safe_read", map[string]string{"safe_read.json": "{"},
			[]string{"seccomp profile safe_read"},
			map[string]string{"seccomp profile safe_read": "$DIR/safe_read.json"}},
		{"broken safe_bash", map[string]string{"safe_bash.json": `{"defaultAction":"SCMP_ACT_NOPE"}`},
			[]string{"seccomp profile safe_bash", sandboxCheck},
			map[string]string{sandboxCheck: "seccomp profile for safe_bash"}},
		{"safe_bash forbids exec", map[string]string{"safe_bash.json": string(noExec)},
			[]string{sandboxCheck},
			map[string]string{"seccomp profile safe_bash": "loads and compiles ($DIR/safe_bash.json)", sandboxCheck: "step exec"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := overrideProfiles(t, tt.files)
			// The scope layer is not what this is about.
			t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
			got := diagnose(t)
			var failed []string
			for name, c := range got {
				if c.Required && !c.OK {
					failed = append(failed, name)
				}
			}
			slices.Sort(failed)
			slices.Sort(tt.failed)
			if !slices.Equal(failed, tt.failed) {
				t.Errorf("failed required checks %q, want %q", failed, tt.failed)
			}
			for name, want := range tt.detail {
				want = strings.ReplaceAll(want, "$DIR", dir)
				if c := got[name]; !strings.Contains(c.Detail, want) {
					t.Errorf("check %q: detail %q, want it to contain %q", name, c.Detail, want)
				}
			}
			for _, name := range failed {
				if strings.HasPrefix(name, "seccomp profile ") && !strings.Contains(got[name].Fix, dir) {
					t.Errorf("check %q: fix %q does not name the directory searched, %s", name, got[name].Fix, dir)
				}
			}
		})
	}
}

// The doctor's probe leaves nothing behind: its throwaway workspace is gone.
func TestDiagnoseCleansUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	var ran bool
	for _, c := range Diagnose(ctx) {
		if c.Layer == sandboxCheck {
			ran = c.OK
		}
	}
	if !ran {
		t.Fatal("the sandbox check did not pass")
	}
	left, err := filepath.Glob(filepath.Join(tmp, "*"))
	if err != nil || len(left) != 0 {
		t.Errorf("left in TMPDIR: %v (%v)", left, err)
	}
}
