package toolplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/internal/ids"
)

var (
	// ErrStart: the plugin did not complete the handshake (wrong cookie or
	// protocol version, not a plugin, exited or hung at start).
	ErrStart = errors.New("tool plugin did not start")
	// ErrExited: the plugin's process ended, or its connection broke, during
	// a call.
	ErrExited = errors.New("tool plugin exited during the call")
	// ErrFailed: the plugin failed the call itself (a panic in the tool, or a
	// call that ended without its result).
	ErrFailed = errors.New("tool plugin failed the call")
	// ErrCallEnded: a ToolHost request named a call that is not running.
	ErrCallEnded = errors.New("no such call running in this plugin")
)

// deadlineSkew is how much sooner than the daemon's a call's deadline may
// end the plugin's side of it.
const deadlineSkew = time.Second

// stderrTail bounds how much of a plugin's stderr a start error quotes.
const stderrTail = 2048

// Config says how to start one plugin.
type Config struct {
	// Cmd is the plugin's command, started as a plain child process unless
	// Sandboxed is set; only its environment is handed on, the daemon's own
	// is not.
	Cmd *exec.Cmd
	// Handshake defaults to Handshake; a test changes it to see a mismatch
	// refused.
	Handshake *plugin.HandshakeConfig
	// StartTimeout bounds the handshake; 0 means 10 seconds.
	StartTimeout time.Duration
	// Logger receives go-plugin's own log lines; nil discards them.
	Logger hclog.Logger
	// Sandboxed, when set, starts the plugin through it instead of Cmd.
	Sandboxed *Sandboxed
}

// Sandboxed starts a plugin through a go-plugin runner of the caller's (the
// daemon's sandbox), whose socket directory is made under SocketBase.
type Sandboxed struct {
	// RunnerFunc is go-plugin's ClientConfig.RunnerFunc.
	RunnerFunc func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error)
	// SocketBase is where go-plugin makes the instance's socket directory;
	// "" means os.TempDir.
	SocketBase string
	// Dial, when set, replaces go-plugin's dialer of the plugin's address,
	// to check what it connects to at the moment of the dial.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Abort ends the plugin's sandbox at once. Kill calls it when the
	// plugin does not stop within KillGrace of being asked: go-plugin's
	// graceful stop waits on the plugin's answer, which a plugin can
	// withhold.
	Abort func()
}

// KillGrace is how long a plugin has to stop when asked, before its
// sandbox is ended.
const KillGrace = 3 * time.Second

// maxRecvMsg bounds one message from a plugin: go-plugin allows 2 GiB, in
// the daemon's memory, not the plugin's.
const maxRecvMsg = 4 << 20

// Client is one started plugin. Calls may run on it concurrently.
type Client struct {
	pc     *plugin.Client
	remote *Remote
	hosts  *hostRouter
	hostID uint32
	abort  func()
}

// Start starts the plugin and completes the handshake; the plugin's protocol
// version must be ProtocolVersion (or cfg's), or Start fails with ErrStart.
func Start(cfg Config) (*Client, error) {
	hs := Handshake
	if cfg.Handshake != nil {
		hs = *cfg.Handshake
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	stderr := &tail{max: stderrTail}
	pcfg := &plugin.ClientConfig{
		HandshakeConfig:  hs,
		Plugins:          plugin.PluginSet{PluginName: &Plugin{}},
		Cmd:              cfg.Cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     timeout,
		Stderr:           stderr,
		Logger:           logger,
	}
	pcfg.GRPCDialOptions = []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsg))}
	var abort func()
	if sb := cfg.Sandboxed; sb != nil {
		pcfg.Cmd = nil
		pcfg.RunnerFunc = sb.RunnerFunc
		pcfg.UnixSocketConfig = &plugin.UnixSocketConfig{TempDir: sb.SocketBase}
		if sb.Dial != nil {
			pcfg.GRPCDialOptions = append(pcfg.GRPCDialOptions, grpc.WithContextDialer(sb.Dial))
		}
		abort = sb.Abort
	}
	pc := plugin.NewClient(pcfg)
	remote, err := dispense(pc, hs.ProtocolVersion)
	if err != nil {
		killWithin(pc, abort)
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("%w: %w; its stderr: %s", ErrStart, err, msg)
		}
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	c := &Client{pc: pc, remote: remote, hosts: &hostRouter{calls: map[string]ToolHostServer{}}, abort: abort}
	c.hostID = remote.Broker.NextId()
	go remote.Broker.AcceptAndServe(c.hostID, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		RegisterToolHostServer(s, c.hosts)
		return s
	})
	return c, nil
}

// dispense completes the handshake and checks the version it settled on.
func dispense(pc *plugin.Client, version uint) (*Remote, error) {
	rpc, err := pc.Client()
	if err != nil {
		return nil, err
	}
	if got := pc.NegotiatedVersion(); got != int(version) {
		return nil, fmt.Errorf("plugin speaks protocol version %d, contextd speaks %d", got, version)
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		return nil, err
	}
	remote, ok := raw.(*Remote)
	if !ok {
		return nil, fmt.Errorf("plugin dispensed %T", raw)
	}
	return remote, nil
}

// Call is one call's request, as the daemon fills it in.
type Call struct {
	Input     []byte
	Session   string
	Workspace string
	// Host serves the plugin's ToolHost requests for this call; nil refuses
	// them.
	Host ToolHostServer
}

// Execute runs one call. text receives each text frame as it arrives; an
// error from it cancels the call. The call's context ends the plugin's: its
// deadline travels with the request, and cancelling it cancels the stream.
func (c *Client) Execute(ctx context.Context, call Call, text func([]byte) error) (*Final, error) {
	id := ids.New()
	c.hosts.add(id, call.Host)
	defer c.hosts.remove(id)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := &ExecuteRequest{
		InputJson:    call.Input,
		Session:      call.Session,
		Workspace:    call.Workspace,
		HostBrokerId: c.hostID,
		CallId:       id,
	}
	if d, ok := ctx.Deadline(); ok {
		req.DeadlineUnixNano = d.UnixNano()
	}
	stream, err := c.remote.Tool.Execute(ctx, req)
	if err != nil {
		return nil, c.callError(ctx, err)
	}
	for {
		f, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the stream ended without a result", ErrFailed)
		}
		if err != nil {
			return nil, c.callError(ctx, err)
		}
		if fin := f.GetFinal(); fin != nil {
			return fin, nil
		}
		if err := text(f.GetText()); err != nil {
			return nil, err
		}
	}
}

// callError names why a call's stream broke: the caller's context, the
// plugin's process, or the plugin's own failure.
func (c *Client) callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("tool plugin call: %w", context.Cause(ctx))
	}
	if code := status.Code(err); code == codes.DeadlineExceeded || code == codes.Canceled {
		// The deadline crossed as grpc-timeout, a little shorter than
		// what is left here when it was sent: the plugin's side can end
		// the stream just before this side's context does. Let it.
		if _, ok := ctx.Deadline(); ok {
			t := time.NewTimer(deadlineSkew)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return fmt.Errorf("tool plugin call: %w", context.Cause(ctx))
			case <-t.C:
			}
		}
	}
	if c.pc.Exited() || status.Code(err) == codes.Unavailable {
		return fmt.Errorf("%w: %w", ErrExited, err)
	}
	return fmt.Errorf("%w: %s", ErrFailed, status.Convert(err).Message())
}

// Exited reports whether the plugin's process has ended.
func (c *Client) Exited() bool { return c.pc.Exited() }

// Pid is the plugin's process id (0 once it is gone, and 0 for a Sandboxed
// start: go-plugin knows no host pid of a process it did not exec).
func (c *Client) Pid() int {
	if rc := c.pc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Kill stops the plugin (a graceful shutdown, then a kill) and returns once
// its process is gone.
func (c *Client) Kill() { killWithin(c.pc, c.abort) }

// killWithin is go-plugin's Kill, bounded: past KillGrace the sandbox is
// ended through abort, which also ends the graceful stop's wait.
func killWithin(pc *plugin.Client, abort func()) {
	done := make(chan struct{})
	go func() {
		pc.Kill()
		close(done)
	}()
	if abort == nil {
		<-done
		return
	}
	t := time.NewTimer(KillGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		abort()
		<-done
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
