package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/plugins/pluginrun"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/pluginsdk"
	"github.com/contextd/contextd/wire/toolplugin"
)

// A go-plugin tool started through pluginrun runs in a real sandbox and is
// reached over its socket in the shared directory; so does the broker
// connection back to the daemon's ToolHost.
//
// The plugin is this test binary: the test user cannot build one (the module
// cache is under root's home), and the staged binary is readable by it.
// TestMain serves nsTool when the handshake's cookie is set.

// servePluginIfAsked serves nsTool when this binary was started as a plugin.
func servePluginIfAsked() {
	if os.Getenv(toolplugin.Handshake.MagicCookieKey) == toolplugin.Handshake.MagicCookieValue {
		pluginsdk.Serve(nsTool{})
		os.Exit(0)
	}
}

// nsTool reports the pid namespace it runs in and asks the daemon's ToolHost
// to scrub a word, so that the broker's way back is used too.
type nsTool struct{}

// With an "op" in its input it is the victim of the runtime's tests
// (pluginruntime_test.go): "pid" reports its pid namespace only, "sleep"
// waits for its context, "hang" ignores it.
func (nsTool) Execute(ctx context.Context, input json.RawMessage, out pluginsdk.Output) (pluginsdk.Result, error) {
	pidNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return pluginsdk.Result{}, err
	}
	var in struct{ Op string }
	json.Unmarshal(input, &in)
	switch in.Op {
	case "pid":
		fmt.Fprintf(out, "pidns %s %s\n", pidNS, instanceID)
		return pluginsdk.Result{}, nil
	case "sleep":
		fmt.Fprintf(out, "pidns %s %s\n", pidNS, instanceID)
		<-ctx.Done()
		return pluginsdk.Result{}, ctx.Err()
	case "hang":
		time.Sleep(time.Hour)
	case "plant":
		// What the host's git and agents would run: a commondir pointing
		// git elsewhere, and agent configuration in a nested directory.
		wd, _ := os.Getwd()
		errs := []error{os.WriteFile(filepath.Join(wd, ".git", "commondir"), []byte("../planted\n"), 0o644),
			os.MkdirAll(filepath.Join(wd, "sub", ".claude"), 0o755),
			os.WriteFile(filepath.Join(wd, "sub", ".claude", "settings.json"), []byte(`{"hooks":{}}`), 0o644)}
		fmt.Fprintf(out, "planted %v\n", errs)
		return pluginsdk.Result{}, nil
	}
	scrubbed, err := pluginsdk.CallOf(ctx).Host.Scrub(ctx, "secret")
	if err != nil {
		return pluginsdk.Result{}, err
	}
	fmt.Fprintf(out, "pid %d\n", os.Getpid())
	return pluginsdk.Result{Data: map[string]string{"pidns": pidNS, "scrubbed": scrubbed}}, nil
}

// instanceID tells one run of the probe from another (a namespace's inode
// number is used again once it is freed).
var instanceID = fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())

// redactor is the daemon's ToolHost in the test: it scrubs every text to a
// fixed mark.
type redactor struct {
	toolplugin.UnimplementedToolHostServer
}

func (redactor) Scrub(context.Context, *toolplugin.ScrubRequest) (*toolplugin.ScrubReply, error) {
	return &toolplugin.ScrubReply{Text: []byte("[redacted]")}, nil
}

func TestPluginRunsInSandbox(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	forVariants(t, func(t *testing.T, v variant) {
		ws := workspace(t)
		home := homeDir(t)
		base, err := os.MkdirTemp("", "pl") // short: a socket path has 108 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		spec := runner.Spec{
			Tool: "mcp-server", Path: self, Args: []string{filepath.Base(self)},
			Dir: ws, Workspace: ws, Home: home,
			Env:      []string{"PATH=/usr/bin:/bin", "HOME=" + home},
			ReadOnly: append(append([]string(nil), ns.DefaultReadOnly...), filepath.Dir(self)),
			Timeout:  watchdog,
		}
		st := pluginrun.New(v.r, spec, toolplugin.Handshake.MagicCookieKey)
		c, err := toolplugin.Start(toolplugin.Config{
			StartTimeout: 30 * time.Second,
			Sandboxed:    &toolplugin.Sandboxed{RunnerFunc: st.RunnerFunc, SocketBase: base, Dial: st.Dial},
		})
		if err != nil {
			t.Fatalf("start the plugin in the sandbox: %v", err)
		}
		killed := false
		t.Cleanup(func() {
			if !killed {
				c.Kill()
			}
		})
		wantLayers(t, v, st.Layers(), "mcp-server", false)

		ctx, cancel := context.WithTimeout(context.Background(), watchdog)
		defer cancel()
		var text strings.Builder
		fin, err := c.Execute(ctx, toolplugin.Call{Input: []byte(`{}`), Host: redactor{}}, func(b []byte) error {
			text.Write(b)
			return nil
		})
		if err != nil {
			t.Fatalf("Execute: %v", err)
		}
		if fin.GetError() != "" {
			t.Fatalf("the tool failed: %s", fin.GetError())
		}
		var data struct{ PidNS, Scrubbed string }
		if err := json.Unmarshal(fin.GetDataJson(), &data); err != nil {
			t.Fatalf("result data %q: %v", fin.GetDataJson(), err)
		}
		if data.PidNS == "" || data.PidNS == hostNS {
			t.Errorf("plugin's pid namespace %q, want one other than the test's %q", data.PidNS, hostNS)
		}
		if data.Scrubbed != "[redacted]" {
			t.Errorf("ToolHost.Scrub through the broker gave %q, want [redacted]", data.Scrubbed)
		}
		if !strings.HasPrefix(text.String(), "pid ") {
			t.Errorf("streamed text %q, want the plugin's pid line", text.String())
		}

		c.Kill()
		killed = true
		if !c.Exited() {
			t.Error("plugin not exited after Kill")
		}
		if scope := st.Layers().Scope; v.scoped {
			waitUnitGone(t, scope)
		}
		if left, _ := os.ReadDir(base); len(left) != 0 {
			t.Errorf("socket directory left after Kill: %v", left)
		}
	})
}
