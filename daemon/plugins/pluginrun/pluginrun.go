// Package pluginrun starts a go-plugin plugin through contextd's runner, so inside a sandbox, with its Unix socket in a directory the sandbox shares at the same path.
package pluginrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	plugrunner "github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/sandboxinfo"
)

var (
	// ErrAddress: the plugin announced an address the daemon cannot or will
	// not reach: not a unix socket, or not one in the instance's socket
	// directory (TCP inside the sandbox's network namespace is unreachable,
	// and a socket elsewhere is none of this plugin's).
	ErrAddress = errors.New("plugin announced an address outside its socket directory")
	// ErrNotSocket: at dial time the announced name is not a socket (it was
	// replaced, for instance by a symlink to another program's socket).
	ErrNotSocket = errors.New("plugin's announced address is not a unix socket")
	// ErrEnded: the runner ended before the plugin started.
	ErrEnded = errors.New("plugin sandbox ended before the plugin started")
)

// handedOn are go-plugin's variables that reach the plugin besides the
// cookie; anything else in the command go-plugin describes (the daemon's
// own environment, should SkipHostEnv be forgotten) stays out.
var handedOn = map[string]bool{"PLUGIN_PROTOCOL_VERSIONS": true, "PLUGIN_UNIX_SOCKET_DIR": true}

// Starter runs one plugin instance. Its RunnerFunc goes in go-plugin's
// ClientConfig.RunnerFunc, its Dial in GRPCDialOptions (as a context
// dialer), so that the connection goes to the socket the plugin announced,
// checked at the moment of the dial.
type Starter struct {
	r         runner.Runner
	spec      runner.Spec
	cookieKey string

	mu   sync.Mutex
	proc *process
}

// New returns a Starter for spec (Path, Args, the view and the sandbox's
// environment filled in by the caller; Mode, Output and the Started hook are
// set here) under r. cookieKey names the handshake's cookie variable, the
// one variable of go-plugin's that is not a PLUGIN_ one.
func New(r runner.Runner, spec runner.Spec, cookieKey string) *Starter {
	return &Starter{r: r, spec: spec, cookieKey: cookieKey}
}

// RunnerFunc has the signature of go-plugin's ClientConfig.RunnerFunc. dir
// is the socket directory go-plugin made: it is bound read-write into the
// sandbox at the same path, since a pathname socket belongs to the file
// system and not to the sandbox's network namespace.
func (s *Starter) RunnerFunc(_ hclog.Logger, cmd *exec.Cmd, dir string) (plugrunner.Runner, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("socket directory %q is not absolute", dir)
	}
	spec := s.spec
	spec.Mode = runner.Exec
	spec.Env = append([]string(nil), spec.Env...)
	for _, kv := range cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		if handedOn[k] || k == s.cookieKey {
			spec.Env = append(spec.Env, kv)
		}
	}
	spec.ReadWrite = append(append([]string(nil), spec.ReadWrite...), dir)
	p := &process{r: s.r, spec: spec, dir: filepath.Clean(dir), name: filepath.Base(spec.Path)}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return p, nil
}

// Dial connects to the address the plugin announced. The name is opened
// without following a link, relative to the socket directory, and must be
// a socket; the connect goes through that very file, so a swap between the
// check and the connect cannot redirect it.
func (s *Starter) Dial(ctx context.Context, _ string) (net.Conn, error) {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("%w: the plugin was not started", ErrAddress)
	}
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	if addr == "" {
		return nil, fmt.Errorf("%w: the plugin announced no address", ErrAddress)
	}
	return dialIn(ctx, p.dir, filepath.Base(addr))
}

// dialIn connects to the socket name in dir, refusing anything but a
// socket there.
func dialIn(ctx context.Context, dir, name string) (net.Conn, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open socket directory %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s in %s: %w", name, dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotSocket, name, dir)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
}

// CheckAddr refuses a handshake address that is not a unix socket directly
// in dir, and returns the cleaned path.
func CheckAddr(dir, network, addr string) (string, error) {
	if network != "unix" {
		return "", fmt.Errorf("%w: network %q (listen on a unix socket in $PLUGIN_UNIX_SOCKET_DIR; TCP inside the sandbox is unreachable)", ErrAddress, network)
	}
	clean := filepath.Clean(addr)
	if !filepath.IsAbs(addr) || filepath.Dir(clean) != filepath.Clean(dir) {
		return "", fmt.Errorf("%w: %q is not in %s (listen on a unix socket in $PLUGIN_UNIX_SOCKET_DIR)", ErrAddress, addr, dir)
	}
	return clean, nil
}

// process is one plugin under the runner, as go-plugin's runner.Runner.
type process struct {
	r    runner.Runner
	spec runner.Spec
	dir  string
	name string

	stdout, stderr *os.File // read ends; go-plugin reads both

	cancel  context.CancelFunc
	started chan sandboxinfo.Layers
	done    chan struct{}
	exit    runner.Exit
	err     error
	layers  sandboxinfo.Layers

	mu   sync.Mutex
	addr string
}

// Start runs the plugin in the background and returns once its sandbox is
// in place and the program runs, or with ErrEnded when the runner ended
// first.
func (p *process) Start(ctx context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	p.stdout, p.stderr = outR, errR
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.started = make(chan sandboxinfo.Layers, 1)
	p.done = make(chan struct{})
	spec := p.spec
	spec.OutputFile = outW // the runner owns and closes it
	spec.Stderr = errW
	spec.Started = func(l sandboxinfo.Layers) { p.started <- l }
	go func() {
		defer close(p.done)
		p.exit, p.err = p.r.Run(runCtx, spec)
		outW.Close()
		errW.Close()
	}()
	select {
	case l := <-p.started:
		p.layers = l
		return nil
	case <-p.done:
		select {
		case l := <-p.started:
			p.layers = l
			return nil
		default:
		}
		outR.Close()
		errR.Close()
		if p.err != nil {
			return fmt.Errorf("%w: %w", ErrEnded, p.err)
		}
		return fmt.Errorf("%w: exit status %d", ErrEnded, p.exit.Code)
	case <-ctx.Done():
		cancel()
		<-p.done
		outR.Close()
		errR.Close()
		return fmt.Errorf("%w: %w", ErrEnded, ctx.Err())
	}
}

// Diagnose adds nothing: go-plugin hands the plugin's stderr to its
// ClientConfig.Stderr, which quotes it in a start error.
func (p *process) Diagnose(context.Context) string { return "" }

func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() io.ReadCloser { return p.stderr }
func (p *process) Name() string          { return p.name }

// Wait blocks until the runner has ended the sandbox.
func (p *process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.err != nil {
		return p.err
	}
	if p.exit.Code != 0 {
		return fmt.Errorf("plugin exited with status %d", p.exit.Code)
	}
	return nil
}

// Kill ends the sandbox, and every process in it, and waits until it is
// gone; the pipes' read ends go with it.
func (p *process) Kill(context.Context) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	<-p.done
	p.stdout.Close()
	p.stderr.Close()
	return nil
}

// ID names the instance by its scope, or by its program when the runner has
// no scopes.
func (p *process) ID() string {
	if p.layers.Scope != "" {
		return p.layers.Scope
	}
	return p.name
}

// PluginToHost accepts only a unix socket in the socket directory, which is
// the same path on both sides of the bind.
func (p *process) PluginToHost(network, addr string) (string, string, error) {
	clean, err := CheckAddr(p.dir, network, addr)
	if err != nil {
		return "", "", err
	}
	p.mu.Lock()
	p.addr = clean
	p.mu.Unlock()
	return network, clean, nil
}

// HostToPlugin hands the daemon's broker listeners, which go-plugin makes
// in the same socket directory, to the plugin unchanged.
func (p *process) HostToPlugin(network, addr string) (string, string, error) {
	clean, err := CheckAddr(p.dir, network, addr)
	if err != nil {
		return "", "", err
	}
	return network, clean, nil
}

// Abort ends the instance's sandbox without waiting (toolplugin's
// Sandboxed.Abort): what go-plugin's graceful stop waits for then ends too.
func (s *Starter) Abort() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil && p.cancel != nil {
		p.cancel()
	}
}

// Ended says how the instance's sandbox ended; ok is false while it runs
// (or before it started).
func (s *Starter) Ended() (exit runner.Exit, err error, ok bool) {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.done == nil {
		return runner.Exit{}, nil, false
	}
	select {
	case <-p.done:
		return p.exit, p.err, true
	default:
		return runner.Exit{}, nil, false
	}
}

// Layers is what the runner applied to the instance, once it started.
func (s *Starter) Layers() sandboxinfo.Layers {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return sandboxinfo.Layers{}
	}
	return s.proc.layers
}
