// Package runner is the seam where the sandbox plugs in: the daemon sees only the Runner interface.
//
// daemon/sandbox is the runner every call uses (namespaces, seccomp, systemd
// scope); runnertest.Unsandboxed runs a plain child, for the tests of the
// layers above.
package runner

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/sandboxinfo"
)

// Mode says what runs.
type Mode int

const (
	// Exec runs the program at Path with Args.
	Exec Mode = iota
	// Tool runs one of contextd's own file tools (Args: tool name, input JSON,
	// working directory) with contextd's binary in tool mode.
	Tool
)

// Spec is one process to run.
type Spec struct {
	Tool string // the tool making the call: names its seccomp profile, scope and limits
	Mode Mode

	Path string   // Exec: absolute path of the program
	Args []string // Exec: argv including argv[0]; Tool: the tool's arguments
	Dir  string   // working directory (absolute)
	Env  []string // complete environment, KEY=VALUE
	// Stdin is the process's whole standard input (Tool mode: the operation).
	Stdin []byte
	// Input, when set, is streamed to the process's standard input instead of
	// Stdin, for processes that converse (an MCP server). The runner closes the
	// process's stdin when Input reports EOF; the caller must make Input end
	// (close it) once Run returns, or the copying goroutine stays blocked. An
	// *os.File (a pipe's read end) becomes the process's stdin itself, with
	// no copying; the runner then owns and closes it.
	Input io.Reader
	// OutputFile, when set, is the process's stdout itself (a pipe's write
	// end the caller reads): no copying, and Output is not used for stdout.
	// The runner owns and closes it.
	OutputFile *os.File

	// Workspace is the directory the process may write (and the only part of
	// $HOME it sees); Home is hidden.
	Workspace string
	Home      string
	// ReadOnly and ReadWrite are extra host paths to show (from config).
	ReadOnly, ReadWrite []string
	// Pins are workspace paths bound onto themselves so that they cannot
	// be renamed, exchanged or removed (ns.Spec.Pins).
	Pins []string
	// HomeDir, when set, is shown at Home in place of an empty tmpfs: the
	// workspace's persistent scratch home.
	HomeDir string
	// Binds show host files at another path (the scrubbed copies of
	// configuration files, at the files' own paths), read-only.
	Binds []Bind
	// Overlays show host directories (toolchain caches) as the read-only
	// lower layer of an overlay whose upper layer the daemon owns.
	Overlays []Overlay
	// Masks are paths hidden whatever else shows them (the credential
	// deny-list below a shown directory).
	Masks []string
	// Network keeps the host's network instead of a loopback-only namespace.
	Network bool
	// Listen are loopback addresses inside the sandbox's own network
	// namespace ("127.0.0.1:3128") whose connections reach the caller
	// instead of anything in the sandbox: its only way out (the egress
	// proxy). Not with Network.
	Listen []string
	// Serve, required with Listen, is called once the sandbox is set up and
	// before its program runs, with a listener for each address of Listen
	// the sandbox could have (an IPv6 one may be missing). It must not
	// block: it serves them in the background. The runner closes them when
	// Run returns, which ends the serving.
	Serve func([]net.Listener)

	// Output receives stdout (and stderr, when Stderr is nil) as it arrives.
	// Runner calls it from one goroutine at a time.
	Output io.Writer
	// Stderr, when set, receives stderr separately.
	Stderr io.Writer
	// Timeout kills the process and everything it started after this long.
	Timeout time.Duration
	// Limits bound the whole call (all its processes).
	Limits Limits
	// Reserved is what Reserve set going for this call, if anything: Run
	// uses it when the Spec is the one it was reserved for, and releases
	// it otherwise. Either way the caller need not Cancel it after Run.
	Reserved Reservation
	// Started, when set, is called once with the layers in force, after every
	// one of them is in place and the program is released to run; it is not
	// called when the sandbox could not be set up. A caller that talks to a
	// long-running process (an MCP server) learns there what protects it
	// without waiting for Exit.
	Started func(sandboxinfo.Layers)
}

// View is what a spec shows its program of the host: the fields a
// sandbox's surroundings fill (sandboxenv), as `contextd sandbox show
// --json` prints them and the sandbox's debug log records each call's.
type View struct {
	Workspace string    `json:"workspace"`
	Home      string    `json:"home"`
	ReadOnly  []string  `json:"read_only"`
	ReadWrite []string  `json:"read_write"`
	Pins      []string  `json:"pins"`
	HomeDir   string    `json:"home_dir"`
	Binds     []Bind    `json:"binds"`
	Overlays  []Overlay `json:"overlays"`
	Masks     []string  `json:"masks"`
	Network   bool      `json:"host_network"`
	Listen    []string  `json:"listen"`
	Limits    Limits    `json:"limits"`
}

// View is s's view.
func (s *Spec) View() View {
	return View{Workspace: s.Workspace, Home: s.Home, ReadOnly: s.ReadOnly, ReadWrite: s.ReadWrite,
		Pins: s.Pins, HomeDir: s.HomeDir, Binds: s.Binds, Overlays: s.Overlays, Masks: s.Masks,
		Network: s.Network, Listen: s.Listen, Limits: s.Limits}
}

// Bind shows the host path Source at Target, read-only.
type Bind struct{ Source, Target string }

// Overlay shows Lower at its own path, read-only below and writable through
// Upper (Work is overlayfs' work directory, on Upper's file system).
type Overlay struct{ Lower, Upper, Work string }

// Limits of a call; zero fields mean the runner's documented defaults.
type Limits struct {
	MemoryMax       uint64 // bytes
	TasksMax        uint64 // processes and threads
	CPUQuotaPercent int    // 100 = one CPU; 0 = none
}

// Exit is how a process ended, and which protections it ran under.
type Exit struct {
	Code     int  // exit status; 128+N when killed by signal N
	TimedOut bool // killed because Timeout ran out
	Canceled bool // killed because the context ended (caller left, daemon stopping)
	Layers   sandboxinfo.Layers
	// Gone is closed once nothing of the sandbox is left, its mounts
	// included; nil means at return. A runner may return earlier, when
	// every process but the sandbox's own init has ended and the output
	// is complete, rather than wait for the kernel to tear its namespaces
	// down: what must outlive the mounts (a lease on an overlay's upper
	// directory) is released after Gone (AfterGone).
	Gone <-chan struct{}
}

// AfterGone runs release once gone is closed: at once when it is nil or
// closed already, else in a goroutine of its own.
func AfterGone(gone <-chan struct{}, release func()) {
	if gone == nil {
		release()
		return
	}
	select {
	case <-gone:
		release()
	default:
		go func() {
			<-gone
			release()
		}()
	}
}

// Runner runs a process to completion. An error means the process could not be
// started or watched (nothing ran, or its fate is unknown); how the process itself
// ended is in Exit.
type Runner interface {
	Run(ctx context.Context, s Spec) (Exit, error)
}

// Reservation is a call's sandbox process, and its scope, set going by a
// Reserver before the call's Spec was complete, so that their start
// overlaps with the caller's own work for the Spec.
type Reservation interface {
	// Cancel ends it, unless a Run took it: nothing ran in it. Safe to
	// call more than once, and after Run.
	Cancel()
}

// Reserver is a Runner that can reserve a call's sandbox ahead of Run.
type Reserver interface {
	// Reserve starts what it can for a call of early, a Spec of which
	// only Tool, Mode, Workspace, Network, Timeout and Limits are set; nil
	// when it cannot (Run then starts everything itself).
	Reserve(ctx context.Context, early Spec) Reservation
}

// Reserve asks r for a reservation, when r is a Reserver; nil otherwise.
func Reserve(ctx context.Context, r Runner, early Spec) Reservation {
	if rs, ok := r.(Reserver); ok {
		return rs.Reserve(ctx, early)
	}
	return nil
}

// StartError is a Runner's error when the sandbox was ready but the program
// of an Exec spec could not be started in it: it is not there as the process
// would see it, is not executable, or execve refused it (a script whose #!
// interpreter is missing). Nothing ran. It unwraps to Errno and to
// catalog.ErrLaunch, so errors.Is(err, syscall.ENOENT) works.
type StartError struct {
	Path   string        // the program, as Spec.Path named it
	Errno  syscall.Errno // why: ENOENT, EACCES, ENOEXEC...
	Detail string        // what the runner adds ("command not found in PATH ..."), or ""
	// Exec is set when the program was found but execve failed: for a
	// script, ENOENT then means its interpreter is missing.
	Exec bool
}

func (e *StartError) Error() string {
	s := "start " + e.Path
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + ": " + e.Errno.Error()
}

// Unwrap makes errors.Is work for the errno and the catalog class.
func (e *StartError) Unwrap() []error { return []error{e.Errno, catalog.ErrLaunch} }
