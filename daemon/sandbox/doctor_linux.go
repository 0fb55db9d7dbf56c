package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/daemon/scope"
	"github.com/contextd/contextd/ns"
	"github.com/contextd/contextd/profiles"
)

// Check is one finding of Diagnose.
type Check struct {
	Layer    string // what was checked
	OK       bool
	Detail   string // what was found
	Fix      string // what to do, when not OK
	Required bool   // without it calls are refused (fail closed)
}

// Diagnose checks each layer the sandbox needs by using it, not by reading
// settings: it creates a user namespace, compiles every profile, asks the user
// manager for its controllers, and runs `true` in a complete sandbox.
func Diagnose(ctx context.Context) []Check {
	var out []Check
	out = append(out, checkUserNS())
	out = append(out, checkOpenat2())
	for _, tool := range []string{"safe_bash", "safe_read", "safe_write", "no_exec", "mcp-server", "plugin"} {
		out = append(out, checkProfile(tool))
	}
	scopes, c := checkUserManager(ctx)
	out = append(out, c...)
	out = append(out, checkSandbox(ctx, scopes))
	if scopes != nil {
		scopes.Close()
	}
	return out
}

func checkUserNS() Check {
	c := Check{Layer: "unprivileged user namespaces", Required: true}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	err := cmd.Run()
	if err == nil {
		c.OK, c.Detail = true, "a user+mount+pid+net namespace can be created"
		return c
	}
	c.Detail = fmt.Sprintf("clone(CLONE_NEWUSER|...) failed: %v", err)
	switch {
	case readTrim("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		c.Fix = "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+): install contextd's AppArmor profile (the Debian package does), or `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`"
	case readTrim("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		c.Fix = "`sudo sysctl kernel.unprivileged_userns_clone=1` (and set it in /etc/sysctl.d/ to keep it)"
	case readTrim("/proc/sys/user/max_user_namespaces") == "0":
		c.Fix = "`sudo sysctl user.max_user_namespaces=15000`"
	default:
		c.Fix = "check that the kernel has CONFIG_USER_NS and that no LSM or container runtime forbids user namespaces"
	}
	return c
}

func checkOpenat2() Check {
	c := Check{Layer: "openat2 path confinement", Required: true}
	fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err != nil {
		c.Detail = fmt.Sprintf("openat2: %v", err)
		c.Fix = "Linux 5.6 or newer is needed; under systemd, RestrictSUIDSGID= also makes openat2 fail: remove it from a drop-in"
		return c
	}
	unix.Close(fd)
	c.OK, c.Detail = true, "RESOLVE_BENEATH works"
	return c
}

func checkProfile(tool string) Check {
	c := Check{Layer: "seccomp profile " + tool, Required: true}
	p, source, err := profiles.Load(tool)
	if err == nil {
		var f interface{ Release() }
		f, err = p.Compile()
		if err == nil {
			f.Release()
		}
	}
	if err != nil {
		c.Detail = err.Error()
		c.Fix = fmt.Sprintf("fix or remove the override (searched: %s); `contextd doctor` uses the same loader as every call", strings.Join(profiles.Dirs(), ", "))
		return c
	}
	c.OK, c.Detail = true, "loads and compiles ("+source+")"
	return c
}

func checkUserManager(ctx context.Context) (*scope.Manager, []Check) {
	c := Check{Layer: "systemd user manager (per-call scopes)"}
	m, err := scope.Connect(ctx)
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "without it calls run in namespaces under seccomp, but with no memory/task limit per call; log in through a session with a user manager (or `loginctl enable-linger $USER`) and make sure dbus-user-session is installed"
		return nil, []Check{c}
	}
	c.OK, c.Detail = true, "reachable over D-Bus; delegated controllers: "+strings.Join(m.Controllers(), " ")
	q := Check{Layer: "CPU quota per call"}
	var why string
	q.OK, why = m.CPUQuota()
	if q.OK {
		q.Detail = "the cpu controller is delegated"
	} else {
		q.Detail, q.Fix = why, "only needed for cpu_quota_percent; delegate the cpu controller to user@.service (Delegate=cpu cpuset io memory pids)"
	}
	return m, []Check{c, q}
}

func checkSandbox(ctx context.Context, scopes *scope.Manager) Check {
	c := Check{Layer: "complete sandbox (`true` under safe_bash's profile)", Required: true}
	home, _ := os.UserHomeDir()
	ws, err := os.MkdirTemp("", "contextd-doctor-")
	if err != nil {
		c.Detail, c.Fix = err.Error(), "make sure $TMPDIR (or /tmp) is writable"
		return c
	}
	defer os.RemoveAll(ws)
	r := &Runner{Scopes: scopes, ScopeNote: "no user manager"}
	var out bytes.Buffer
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ex, err := r.Run(cctx, runnerSpec(ws, home, &out))
	if err != nil {
		c.Detail = err.Error()
		var se *ns.SetupError
		if errors.As(err, &se) {
			c.Detail = fmt.Sprintf("setup step %q failed: %v", se.Step, se)
		}
		c.Fix = "the layer named above failed; every call is refused until it works (fail closed)"
		return c
	}
	if ex.Code != 0 {
		c.Detail = fmt.Sprintf("`true` exited %d: %s", ex.Code, strings.TrimSpace(out.String()))
		c.Fix = "the seccomp profile or the mounts break ordinary programs; check overrides of safe_bash.json"
		return c
	}
	// The detail has always shown every field by its Go name, zero or not;
	// the layers' own JSON (the light protocol's) leaves the empty ones out.
	layers, _ := json.Marshal(doctorLayers(ex.Layers))
	c.OK, c.Detail = true, "ran: "+string(layers)
	return c
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// runnerSpec is the doctor's probe: `true` in a throwaway workspace.
func runnerSpec(ws, home string, out *bytes.Buffer) runner.Spec {
	return runner.Spec{
		Tool: "safe_bash", Mode: runner.Exec, Path: "/bin/true", Args: []string{"true"},
		Dir: ws, Workspace: ws, Home: home, Env: []string{"PATH=/usr/bin:/bin"},
		Output: out, Timeout: 20 * time.Second,
	}
}

// doctorLayers is sandboxinfo.Layers without its JSON names, as doctor's
// detail shows them.
type doctorLayers struct {
	Namespaces bool
	Seccomp    string
	Scope      string
	ScopeNote  string
	Network    bool
}
