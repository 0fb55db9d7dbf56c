package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/plugins"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/internal/syncbuf"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// probeManifest is the runtime's victim: this test binary, as a tool with
// a short timeout.
const probeManifest = `name = "probe"
description = "the plugin runtime's test victim"
schema = '{"type":"object","properties":{"op":{"type":"string"}},"additionalProperties":false}'
[run]
command = ["bin/probe"]
[permissions]
workspace = "read-write"
timeout = "3s"
`

// installProbe lays out a tool store holding the probe, as install would,
// and "broken", whose program is missing.
func installProbe(t *testing.T) toolstore.Store {
	t.Helper()
	store := toolstore.Store{Root: t.TempDir()}
	installTool(t, store, "probe", probeManifest)
	installTool(t, store, "broken", strings.Replace(strings.Replace(probeManifest, `"bin/probe"`, `"bin/missing"`, 1), `"probe"`, `"broken"`, 1))
	return store
}

func installTool(t *testing.T, store toolstore.Store, name, manifest string) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(name, "v1")
	tree := filepath.Join(store.Root, dir, toolstore.TreeDir)
	if err := os.MkdirAll(filepath.Join(tree, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "bin", "probe"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := toolmanifest.Parse([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	approved, err := toolmanifest.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{toolstore.ApprovedName: approved, toolstore.SchemaName: m.Schema.Inline} {
		if err := os.WriteFile(filepath.Join(store.Root, dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := toolstore.TreeHash(tree)
	if err != nil {
		t.Fatal(err)
	}
	err = store.Update(func(l *toolstore.Lock) error {
		l.Tools[name] = &toolstore.Tool{Name: name, Source: "test", Resolved: "tree:x", Checksum: sum, Dir: dir, Installed: time.Now()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// probeCall runs one call of the probe and returns its outcome's error and
// output.
func probeCall(t *testing.T, rt *plugins.Runtime, ws, op string) (string, []string, error) {
	t.Helper()
	c, err := rt.Decode("probe", []byte(`{"op":"`+op+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	o := c.Run(context.Background(), &plugins.Env{Workspace: ws, Session: "s1", Out: &out})
	if o.Plugin == nil || o.Plugin.Checksum == "" {
		t.Errorf("outcome names no plugin: %+v", o.Plugin)
	}
	return out.String(), o.Warnings, o.Err
}

// pidnsOf is the pid namespace a probe output names.
func pidnsOf(t *testing.T, out string) string {
	t.Helper()
	f := strings.Fields(out)
	if len(f) < 3 || f[0] != "pidns" {
		t.Fatalf("probe output %q names no pid namespace", out)
	}
	return f[1]
}

// runOf names the run of the probe an output came from.
func runOf(t *testing.T, out string) string {
	t.Helper()
	pidnsOf(t, out)
	return strings.Fields(out)[2]
}

// killPidNS sends SIGKILL to every process of ours in the pid namespace ns:
// kill -9 of the plugin, as a user (or the OOM killer) would.
func killPidNS(t *testing.T, ns string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	n := 0
	for _, p := range procs {
		if l, err := os.Readlink(p); err == nil && l == ns {
			var pid int
			if _, err := fmt.Sscan(filepath.Base(filepath.Dir(filepath.Dir(p))), &pid); err == nil {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
			}
		}
	}
	return n
}

// The plugin runtime over a real sandbox: an instance is started once and
// kept warm; kill -9 mid-call ends that call with ErrPluginExited and the
// next call starts a fresh instance, saying so; a call that ignores its
// deadline has its instance killed with its scope; an idle instance is
// stopped.
func TestPluginRuntime(t *testing.T) {
	// The pool changes nothing the runtime sees (TestPluginRunsInSandbox
	// runs the start under every variant): with and without a scope.
	for _, v := range variants(t) {
		if v.name == "scope" || v.name == "noscope" {
			t.Run(v.name, func(t *testing.T) { runtimeVariant(t, v) })
		}
	}
}

func runtimeVariant(t *testing.T, v variant) {
	if v.r == nil {
		scopes(t)
	}
	{
		ws := workspace(t)
		// A repository, whose git entries the guard watches.
		if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
		store := installProbe(t)
		cfg := config.Default()
		cfg.Plugins.IdleStop = config.Duration{Duration: 2 * time.Second}
		runDir, err := os.MkdirTemp("", "rt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(runDir) })
		rt := plugins.New(plugins.Options{Store: store, Runner: v.r, Config: cfg, RunDir: runDir, RetryStart: time.Hour,
			Sandbox: &sandboxenv.Builder{Config: cfg, HomeDir: homeDir(t)}})
		t.Cleanup(rt.Close)

		out, _, err := probeCall(t, rt, ws, "pid")
		if err != nil {
			t.Fatalf("first call: %v", err)
		}
		first := runOf(t, out)
		out, _, err = probeCall(t, rt, ws, "pid")
		if err != nil {
			t.Fatalf("second call: %v", err)
		}
		if got := runOf(t, out); got != first {
			t.Errorf("second call ran in %s, the first in %s: the instance was not kept warm", got, first)
		}

		// kill -9 mid-call.
		type ran struct {
			err error
		}
		done := make(chan ran, 1)
		c, _ := rt.Decode("probe", []byte(`{"op":"sleep"}`))
		pr, pw := io.Pipe()
		go func() {
			o := c.Run(context.Background(), &plugins.Env{Workspace: ws, Session: "s1", Out: pw})
			pw.Close()
			done <- ran{o.Err}
		}()
		line := make([]byte, 256)
		n, _ := pr.Read(line)
		go io.Copy(io.Discard, pr)
		if killed := killPidNS(t, pidnsOf(t, string(line[:n]))); killed == 0 {
			t.Fatal("no process of the plugin found to kill")
		}
		r := <-done
		if !errors.Is(r.err, catalog.ErrPluginExited) || !strings.Contains(r.err.Error(), "signal 9") {
			t.Fatalf("the killed call: %v, want ErrPluginExited naming signal 9", r.err)
		}
		out, warns, err := probeCall(t, rt, ws, "pid")
		if err != nil {
			t.Fatalf("the call after the kill: %v", err)
		}
		if runOf(t, out) == first {
			t.Error("the call after the kill ran in the killed instance")
		}
		if len(warns) == 0 || !strings.Contains(warns[0], "ended") {
			t.Errorf("the call after the kill was not told the previous instance ended: %q", warns)
		}

		// A call that ignores its deadline: its instance goes.
		start := time.Now()
		out, _, err = probeCall(t, rt, ws, "hang")
		if !errors.Is(err, catalog.ErrTimeout) {
			t.Fatalf("a hanging call: %v, want ErrTimeout (its output: %q)", err, out)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("a hanging call with a 3s timeout took %v", d)
		}
		out, _, err = probeCall(t, rt, ws, "pid")
		if err != nil {
			t.Fatalf("the call after the hang: %v", err)
		}
		last := pidnsOf(t, out)

		// A planted commondir is put back after the call, and nested agent
		// configuration it created is set aside; the call is told.
		out, warns, err = probeCall(t, rt, ws, "plant")
		if err != nil {
			t.Fatalf("plant: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(ws, ".git", "commondir")); err == nil {
			t.Errorf("the planted .git/commondir stays after the call (output %q, warnings %q)", out, warns)
		}
		if _, err := os.Lstat(filepath.Join(ws, "sub", ".claude", "settings.json")); err == nil {
			t.Errorf("the nested agent configuration stays after the call (warnings %q)", warns)
		}
		if len(warns) < 2 {
			t.Errorf("the call was not told what was put back: %q", warns)
		}
		out, _, err = probeCall(t, rt, ws, "pid")
		if err != nil {
			t.Fatal(err)
		}
		last = pidnsOf(t, out)

		// Idle: the instance's processes are gone once idle_stop passed.
		deadline := time.Now().Add(watchdog)
		for countPidNS(last) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("an idle instance still runs after %v (idle_stop 2s)", watchdog)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if names := rt.Names(); len(names) != 2 {
			t.Errorf("installed tools: %v", names)
		}
		// A tool that cannot start fails with CTXD-E090; the next call
		// gets the same failure without another sandbox.
		for i, want := range []string{"", "the start"} {
			c, err := rt.Decode("broken", []byte(`{"op":"pid"}`))
			if err != nil {
				t.Fatal(err)
			}
			o := c.Run(context.Background(), &plugins.Env{Workspace: ws, Session: "s1", Out: io.Discard})
			if !errors.Is(o.Err, catalog.ErrPluginStart) || !strings.Contains(fmt.Sprint(o.Err), want) {
				t.Errorf("call %d of a tool that cannot start: %v, want ErrPluginStart saying %q", i, o.Err, want)
			}
		}
		// An input its schema refuses never reaches the plugin.
		if _, err := rt.Decode("probe", []byte(`{"nope":1}`)); !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("input outside the schema: %v, want ErrBadInput", err)
		}
		if _, err := rt.Decode("nosuch", []byte(`{}`)); !errors.Is(err, catalog.ErrUnknownTool) {
			t.Errorf("a tool not installed: %v, want ErrUnknownTool", err)
		}
	}
}

// countPidNS counts the processes in the pid namespace ns.
func countPidNS(ns string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	n := 0
	for _, p := range procs {
		if l, err := os.Readlink(p); err == nil && l == ns {
			n++
		}
	}
	return n
}
