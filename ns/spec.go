package ns

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Mode says what the sandbox finally executes.
const (
	// ModeExec executes Spec.Argv[0] (looked up in the PATH of Spec.Env when it
	// has no slash) with Spec.Argv and Spec.Env.
	ModeExec = "exec"
	// ModeTestProbe executes the running binary itself, through a descriptor
	// opened before the sandbox hid it, with argv[0] = TestProbeArgv0
	// followed by Spec.Argv. Only tests select it: a test binary runs its own
	// probes as the sandboxed program, after the same last steps and exec as
	// a ModeExec command. The daemon runs its tools in ModeFunc.
	ModeTestProbe = "test-probe"
	// ModeFunc runs the function the binary registered with InitWith
	// (Hooks.Func) inside the init itself, with Spec.Argv as its arguments:
	// the same last steps, no second exec of the binary (which costs a Go
	// start-up of 10 ms or more per call). See "Func mode" in the package doc.
	ModeFunc = "func"
)

// TestProbeArgv0 is argv[0] of the binary a ModeTestProbe sandbox executes;
// the test binary's main dispatches on it.
const TestProbeArgv0 = "contextd-tool"

// DefaultHostname is the sandbox's hostname when Spec.Hostname is empty.
const DefaultHostname = "contextd"

// DefaultReadOnly lists the host paths visible read-only when Spec.ReadOnly is
// nil. Each is used only if it exists; one that is a symbolic link (as /bin,
// /lib, /sbin, /lib64 on merged-/usr systems) is recreated as the same link.
var DefaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// Spec describes one sandboxed process. It travels to the sandbox init as
// JSON on an inherited pipe, never in argv or the environment (both are
// visible to every process of the user).
type Spec struct {
	// Argv is the command (ModeExec) or the tool's arguments after argv[0]
	// (ModeTestProbe, ModeFunc). Required.
	Argv []string `json:"argv"`
	// Env is the complete environment of the command; nothing else is
	// inherited. The caller filters it (allowlist, no credentials).
	Env []string `json:"env"`
	// Dir is the working directory; absolute, and it must be visible inside
	// the sandbox (the workspace or below, or a read-only path). Default:
	// Workspace.
	Dir string `json:"dir,omitempty"`
	// Workspace is bind-mounted read-write at its own path. Required,
	// absolute, an existing directory, not "/" and not Home itself.
	Workspace string `json:"workspace"`
	// Home is the user's home directory. It is covered by an empty tmpfs
	// (mode 0700, owned by the user), so nothing of the real home is visible
	// except the workspace or other paths listed here that lie below it.
	// Optional.
	Home string `json:"home,omitempty"`
	// HomeDir, set together with Home, is a host directory bind-mounted
	// read-write at Home instead of the empty tmpfs: a scratch home that
	// outlives the call, so that the caches tools keep under $HOME stay warm
	// from one call to the next. It must be an existing directory owned by
	// the caller (checked when the sandbox opens it), and neither Home, nor
	// an ancestor of Home, nor in the Workspace. Everything else that lies
	// below Home is still mounted on top of it. Optional.
	HomeDir string `json:"homeDir,omitempty"`
	// ReadOnly are host paths bind-mounted read-only at their own path.
	// nil means DefaultReadOnly; an empty, non-nil slice means none.
	// Missing paths are skipped.
	ReadOnly []string `json:"readOnly"`
	// ReadWrite are extra host paths bind-mounted read-write (from config).
	// Missing paths are skipped.
	ReadWrite []string `json:"readWrite,omitempty"`
	// Pins are paths inside Workspace bound read-write onto themselves: a
	// mount point cannot be renamed, exchanged or removed (EBUSY), so the
	// command can change what is in them but not replace them (the
	// workspace's .git, which the host's git trusts). Each must still
	// resolve inside Workspace when the sandbox opens it, or the sandbox
	// does not start (a path swapped for a link since the caller listed it
	// must not show anything else read-write); a missing one or a symbolic
	// link is skipped. Absolute.
	Pins []string `json:"pins,omitempty"`
	// Binds show host files or directories at another path (Bind).
	Binds []Bind `json:"binds,omitempty"`
	// Overlays show host directories through an overlay whose writes go
	// elsewhere (Overlay).
	Overlays []Overlay `json:"overlays,omitempty"`
	// Masks are paths that are never visible, whatever else in the spec
	// shows them: mounted last, each covers what the sandbox's tree has at
	// that path (an empty directory or file nobody can read). See "The file
	// system" in the package doc for how symbolic links are handled.
	// Absolute.
	Masks []string `json:"masks,omitempty"`
	// Hostname of the sandbox's UTS namespace. Default DefaultHostname.
	Hostname string `json:"hostname,omitempty"`
	// Network false (the default) gives the sandbox a new network namespace
	// with only the loopback interface, up. True keeps the host's network
	// namespace: an opt-in the caller must record (audit).
	Network bool `json:"network,omitempty"`
	// Listen are loopback TCP addresses ("127.0.0.1:3128", "[::1]:4873")
	// the init listens on in the sandbox's own network namespace, once lo
	// is up, and hands to the daemon with its ready message (Child.
	// Listeners): the daemon serves them, so a connection made inside
	// reaches the daemon and nothing else (the egress proxy). The command
	// never holds them. Only with Network false; at most MaxListen.
	Listen []string `json:"listen,omitempty"`
	// Seccomp is the seccomp profile (JSON, see package seccomp). Required:
	// a sandbox is never started without one.
	Seccomp []byte `json:"seccomp"`
	// Rlimits are applied on top of DefaultRlimits (an entry here replaces
	// the default of the same resource).
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Mode is ModeExec (default), ModeFunc or ModeTestProbe.
	Mode string `json:"mode,omitempty"`
}

// Bind shows the host file or directory Source at Target inside the
// sandbox: for example a copy of ~/.npmrc with its secrets replaced, made by
// the daemon, shown at ~/.npmrc. Source must exist (the daemon lists only
// sources it made or checked). Missing parent directories of Target are
// created, but only on the sandbox's own file systems (its tmpfs mounts, a
// HomeDir), never inside a bind-mounted host tree.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Writable makes the bind read-write; it is read-only by default.
	Writable bool `json:"writable,omitempty"`
}

// Overlay shows the host directory Lower at Target through an overlayfs
// whose writes go to Upper: the sandbox reads the user's files (a toolchain
// cache) and may change what it sees, but Lower itself is never written
// through the overlay (so the spec must not show Lower read-write anywhere
// else either). Upper and Work are host directories the daemon made, on
// the same file system; the daemon keeps them out of the sandbox's view
// (not checked here: writes to them behind overlayfs's back give undefined
// results in the overlay, though never in Lower). A missing Lower skips the
// overlay, and Target is then masked (see Spec.Masks). If the mount fails,
// the sandbox does not start; ProbeOverlay says beforehand whether
// overlays work for this user.
type Overlay struct {
	Lower string `json:"lower"`
	Upper string `json:"upper"`
	Work  string `json:"work"`
	// Target is where the overlay is shown. Default: Lower.
	Target string `json:"target,omitempty"`
}

// Rlimit is one resource limit. Resource is the name without the RLIMIT_
// prefix: AS, CORE, CPU, DATA, FSIZE, MEMLOCK, NOFILE, NPROC, STACK, ...
// Values above the hard limit the daemon itself has are lowered to it (an
// unprivileged process cannot raise a hard limit).
type Rlimit struct {
	Resource string `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// RlimInfinity is RLIM_INFINITY, for Rlimit.Soft/Hard.
const RlimInfinity = ^uint64(0)

// DefaultRlimits are applied to every sandbox unless Spec.Rlimits names the
// same resource:
//   - CORE 0: no core dumps (a core of a process that read secrets would land
//     in the workspace);
//   - NOFILE 4096/4096: enough for compilers and test runners, and a fixed
//     value rather than whatever the Go runtime raised the daemon's soft limit
//     to.
//
// Process count, memory and CPU are left to the systemd scope (TasksMax,
// MemoryMax, CPUQuota, RuntimeMaxSec), which counts the whole call, not one
// process; NPROC can still be set per tool.
var DefaultRlimits = []Rlimit{
	{Resource: "CORE", Soft: 0, Hard: 0},
	{Resource: "NOFILE", Soft: 4096, Hard: 4096},
}

// withDefaults returns a copy of s with defaults filled in, or the first
// problem found. It only checks the form of the spec; whether paths exist is
// found out by the sandbox init, which reports it as a SetupError.
func (s *Spec) withDefaults() (*Spec, *SetupError) {
	return s.normalize(false)
}

// normalize is withDefaults; precompiled says the seccomp filter came
// compiled (wireSpec.BPF), so Seccomp may be empty.
func (s *Spec) normalize(precompiled bool) (*Spec, *SetupError) {
	if s == nil {
		return nil, invalid("no spec")
	}
	c := *s
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, invalid("argv is empty")
	}
	switch c.Mode {
	case "":
		c.Mode = ModeExec
	case ModeExec, ModeTestProbe, ModeFunc:
	default:
		return nil, invalid(fmt.Sprintf("unknown mode %q", c.Mode))
	}
	if len(c.Seccomp) == 0 && !precompiled {
		// Fail closed: never run without a filter.
		return nil, invalid("no seccomp profile")
	}
	if !filepath.IsAbs(c.Workspace) {
		return nil, invalid(fmt.Sprintf("workspace %q is not an absolute path", c.Workspace))
	}
	c.Workspace = filepath.Clean(c.Workspace)
	if c.Workspace == "/" {
		return nil, invalid("workspace is /")
	}
	if c.Home != "" {
		if !filepath.IsAbs(c.Home) {
			return nil, invalid(fmt.Sprintf("home %q is not an absolute path", c.Home))
		}
		c.Home = filepath.Clean(c.Home)
		if c.Home == c.Workspace {
			// The workspace would make the whole home (~/.ssh, ~/.aws, ...)
			// visible and writable: refuse rather than silently narrow it.
			return nil, invalid("workspace is the home directory; use a project directory below it")
		}
		if c.Home == "/" {
			return nil, invalid("home is /")
		}
	}
	if c.HomeDir != "" {
		if e := checkHomeDir(&c); e != nil {
			return nil, e
		}
	}
	if c.Dir == "" {
		c.Dir = c.Workspace
	}
	if !filepath.IsAbs(c.Dir) {
		return nil, invalid(fmt.Sprintf("dir %q is not an absolute path", c.Dir))
	}
	c.Dir = filepath.Clean(c.Dir)
	if c.ReadOnly == nil {
		c.ReadOnly = DefaultReadOnly
	}
	for _, list := range [][]string{c.ReadOnly, c.ReadWrite, c.Pins} {
		for _, p := range list {
			if err := checkExtraPath(p); err != nil {
				return nil, err
			}
		}
	}
	if err := checkExtraPath(c.Workspace); err != nil {
		return nil, err
	}
	if err := c.normalizeViews(); err != nil {
		return nil, err
	}
	if e := checkListen(&c); e != nil {
		return nil, e
	}
	if c.Hostname == "" {
		c.Hostname = DefaultHostname
	}
	if len(c.Hostname) > 64 {
		return nil, invalid("hostname longer than 64 bytes")
	}
	rl, err := mergeRlimits(c.Rlimits)
	if err != nil {
		return nil, err
	}
	c.Rlimits = rl
	return &c, nil
}

// checkHomeDir checks the form of c.HomeDir and cleans it. The sandbox
// init checks the same again on the resolved paths, and that the directory
// exists and belongs to the caller.
func checkHomeDir(c *Spec) *SetupError {
	if c.Home == "" {
		return invalid("homeDir without home")
	}
	if !filepath.IsAbs(c.HomeDir) {
		return invalid(fmt.Sprintf("homeDir %q is not an absolute path", c.HomeDir))
	}
	c.HomeDir = filepath.Clean(c.HomeDir)
	if err := checkExtraPath(c.HomeDir); err != nil {
		return err
	}
	return checkHomeDirPlace(c.HomeDir, c.Home, c.Workspace)
}

// checkHomeDirPlace refuses a scratch home that would show the real home
// (it is Home or above it) or hide the workspace's files in a scratch area
// (it lies in the workspace).
func checkHomeDirPlace(dir, home, workspace string) *SetupError {
	switch {
	case dir == home:
		return invalid("homeDir is the home directory itself")
	case within(home, dir):
		return invalid(fmt.Sprintf("homeDir %s contains the home directory %s", dir, home))
	case within(dir, workspace):
		return invalid(fmt.Sprintf("homeDir %s is in the workspace %s", dir, workspace))
	}
	return nil
}

// within says whether p is dir or lies below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// normalizeViews checks and cleans Binds, Overlays and Masks, on copies of
// the caller's slices.
func (c *Spec) normalizeViews() *SetupError {
	clean := func(what, p string) (string, *SetupError) {
		if !filepath.IsAbs(p) {
			return "", invalid(fmt.Sprintf("%s %q is not an absolute path", what, p))
		}
		p = filepath.Clean(p)
		if err := checkExtraPath(p); err != nil {
			return "", err
		}
		return p, nil
	}
	var err *SetupError
	if c.Binds != nil {
		binds := make([]Bind, len(c.Binds))
		for i, b := range c.Binds {
			if b.Source, err = clean("bind source", b.Source); err != nil {
				return err
			}
			if b.Target, err = clean("bind target", b.Target); err != nil {
				return err
			}
			binds[i] = b
		}
		c.Binds = binds
	}
	if c.Overlays != nil {
		overlays := make([]Overlay, len(c.Overlays))
		for i, o := range c.Overlays {
			if o.Lower, err = clean("overlay lower", o.Lower); err != nil {
				return err
			}
			if o.Upper, err = clean("overlay upper", o.Upper); err != nil {
				return err
			}
			if o.Work, err = clean("overlay work", o.Work); err != nil {
				return err
			}
			if o.Target == "" {
				o.Target = o.Lower
			}
			if o.Target, err = clean("overlay target", o.Target); err != nil {
				return err
			}
			// Other overlaps (a layer inside another) are refused by the
			// kernel at mount time, on the resolved paths.
			if o.Upper == o.Work {
				return invalid(fmt.Sprintf("overlay %s: upper and work are the same directory", o.Target))
			}
			overlays[i] = o
		}
		c.Overlays = overlays
	}
	if c.Masks != nil {
		masks := make([]string, len(c.Masks))
		for i, m := range c.Masks {
			if masks[i], err = clean("mask", m); err != nil {
				return err
			}
		}
		c.Masks = masks
	}
	return nil
}

// checkExtraPath refuses paths that would collide with what the sandbox
// mounts itself (/, /proc, /dev).
func checkExtraPath(p string) *SetupError {
	if !filepath.IsAbs(p) {
		return invalid(fmt.Sprintf("path %q is not absolute", p))
	}
	p = filepath.Clean(p)
	if p == "/" {
		return invalid("path / cannot be mounted into the sandbox")
	}
	for _, reserved := range []string{"/proc", "/dev"} {
		if p == reserved || strings.HasPrefix(p, reserved+"/") {
			return invalid(fmt.Sprintf("path %q is under %s, which the sandbox provides itself", p, reserved))
		}
	}
	return nil
}

// mergeRlimits lays the caller's limits over DefaultRlimits.
func mergeRlimits(extra []Rlimit) ([]Rlimit, *SetupError) {
	out := append([]Rlimit(nil), DefaultRlimits...)
	for _, r := range extra {
		name := strings.TrimPrefix(strings.ToUpper(r.Resource), "RLIMIT_")
		if _, ok := rlimitResources[name]; !ok {
			return nil, invalid(fmt.Sprintf("unknown rlimit %q", r.Resource))
		}
		if r.Soft > r.Hard {
			return nil, invalid(fmt.Sprintf("rlimit %s: soft %d above hard %d", name, r.Soft, r.Hard))
		}
		r.Resource = name
		replaced := false
		for i := range out {
			if out[i].Resource == name {
				out[i] = r
				replaced = true
			}
		}
		if !replaced {
			out = append(out, r)
		}
	}
	return out, nil
}

// rlimitResources maps names to RLIMIT_* numbers (Linux, all architectures
// Go supports use the generic numbering except for a few on mips/sparc,
// which contextd does not target).
var rlimitResources = map[string]int{
	"CPU":        0,
	"FSIZE":      1,
	"DATA":       2,
	"STACK":      3,
	"CORE":       4,
	"RSS":        5,
	"NPROC":      6,
	"NOFILE":     7,
	"MEMLOCK":    8,
	"AS":         9,
	"LOCKS":      10,
	"SIGPENDING": 11,
	"MSGQUEUE":   12,
	"NICE":       13,
	"RTPRIO":     14,
	"RTTIME":     15,
}

// MaxListen bounds Spec.Listen: every address is a descriptor on the sync
// socket's one message.
const MaxListen = 16

// checkListen checks Spec.Listen: loopback literals with a port, no
// duplicates, in a network namespace of the sandbox's own.
func checkListen(c *Spec) *SetupError {
	if len(c.Listen) == 0 {
		return nil
	}
	if c.Network {
		return invalid("listen needs the sandbox's own network namespace (network is set)")
	}
	if len(c.Listen) > MaxListen {
		return invalid(fmt.Sprintf("more than %d listen addresses", MaxListen))
	}
	seen := map[string]bool{}
	for _, a := range c.Listen {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
			return invalid(fmt.Sprintf("listen address %q is not a loopback address with a port", a))
		}
		if seen[ap.String()] {
			return invalid(fmt.Sprintf("listen address %q given twice", a))
		}
		seen[ap.String()] = true
	}
	return nil
}
