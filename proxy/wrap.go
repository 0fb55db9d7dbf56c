package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/wire/lite"
)

const wrapUsage = `usage: contextd-proxy mcp wrap [--name NAME] -- COMMAND [ARGS...]
       contextd-proxy mcp wrap [--name NAME] --url URL [--sse]`

// errWrapHelp is parseWrap's answer to --help: runWrap prints the usage and
// succeeds.
var errWrapHelp = errors.New("help asked for")

// wrapArgs is a parsed `mcp wrap` command line.
type wrapArgs struct {
	name    string
	url     string
	sse     bool
	command []string
}

func parseWrap(args []string) (*wrapArgs, error) {
	w := &wrapArgs{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, error) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("mcp wrap: %s needs a value\n%s: %w", a, wrapUsage, catalog.ErrUsage)
			}
			i++
			return args[i], nil
		}
		var err error
		switch flag, _, _ := strings.Cut(a, "="); flag {
		case "--":
			w.command = args[i+1:]
			i = len(args)
		case "--name":
			w.name, err = val()
		case "--url":
			w.url, err = val()
		case "--sse":
			w.sse = true
		case "-h", "--help":
			return nil, errWrapHelp
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("mcp wrap: unknown option %s\n%s: %w", a, wrapUsage, catalog.ErrUsage)
			}
			w.command = args[i:]
			i = len(args)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case w.url == "" && len(w.command) == 0:
		return nil, fmt.Errorf("mcp wrap: name the server: a command after --, or --url\n%s: %w", wrapUsage, catalog.ErrUsage)
	case w.url != "" && len(w.command) > 0:
		return nil, fmt.Errorf("mcp wrap: a command or --url, not both\n%s: %w", wrapUsage, catalog.ErrUsage)
	case w.sse && w.url == "":
		return nil, fmt.Errorf("mcp wrap: --sse goes with --url\n%s: %w", wrapUsage, catalog.ErrUsage)
	}
	if w.name == "" {
		w.name = defaultServerName(w.command, w.url)
	}
	return w, nil
}

// defaultServerName names a server after what starts it: the last word of
// the command that is not an option or a runner (npx, node, uvx, python…),
// without a version or scope; or the URL's host.
func defaultServerName(command []string, url string) string {
	if url != "" {
		h := url
		if _, rest, ok := strings.Cut(h, "://"); ok {
			h = rest
		}
		h, _, _ = strings.Cut(h, "/")
		return sanitizeName(h)
	}
	name := filepath.Base(command[0])
	for _, a := range command[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		name = a
		break
	}
	name = strings.TrimPrefix(name, "@")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".js"), ".py")
	return sanitizeName(name)
}

func sanitizeName(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "server"
	}
	return b.String()
}

// runWrap connects the agent's stdio to an MCP server through the daemon,
// which launches the server in a sandbox (or reaches the URL) and passes
// every message through its rules. This process only copies bytes: each
// message is read, checked and recorded once, in the daemon.
func runWrap(ctx context.Context, args []string, sio IO) (int, error) {
	w, err := parseWrap(args)
	if errors.Is(err, errWrapHelp) {
		fmt.Fprintln(sio.Stdout, wrapUsage)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, fmt.Errorf("working directory: %v: %w", err, catalog.ErrBadInput)
	}
	conn, ready, err := client.OpenWrap(client.SocketPath(), &lite.Wrap{Name: w.name, Command: w.command, URL: w.url, SSE: w.sse,
		Cwd: cwd, Env: CallerEnv(), Session: os.Getenv("CONTEXTD_SESSION")})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	for _, warn := range ready.Warnings {
		fmt.Fprintf(sio.Stderr, "contextd: warning: %s\n", warn)
	}
	if sb := ready.Sandbox; sb != nil && sb.Scope == "" && sb.ScopeNote != "" {
		fmt.Fprintf(sio.Stderr, "contextd: note: server runs without a systemd scope: %s\n", sb.ScopeNote)
	}
	ended, err := pump(ctx, conn, sio)
	// The server's failure, when it had one, is the reason for whatever
	// else happened: the client then closed, or stopped this process.
	if f := WrapFailure(client.SocketPath(), ready.Record); f != nil {
		return 0, f
	}
	if ended {
		fmt.Fprintln(sio.Stderr, "contextd: the MCP server ended; its exit and stderr are in the daemon's log (journalctl --user -u contextd)")
	}
	return 0, err
}

// WrapFailure asks the daemon at sock why the wrap session record ended,
// and returns the server's failure (it could not start, or exited early),
// or nil. The daemon has answered the client's requests with it already;
// this is for the person reading the agent's log, or for contextd-proxy mcp
// to report the server as unavailable.
func WrapFailure(sock, record string) error {
	if record == "" {
		return nil
	}
	conn, err := client.Dial(sock)
	if err != nil {
		return nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var end lite.WrapEnd
	if err := conn.Admin(ctx, lite.OpWrapEnd, lite.WrapEndArgs{Record: record}, &end); err != nil {
		return nil
	}
	return catalog.FromDetail(end.Failure)
}

// pump copies stdin to the daemon and the daemon to stdout until the daemon
// ends the conversation. The end of stdin is passed on as a half-close, so
// the server sees its stdin end and the last answers still come back. ended
// reports a conversation the daemon ended while the client still talked.
func pump(ctx context.Context, conn net.Conn, sio IO) (ended bool, err error) {
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, sio.Stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
		up <- err
	}()
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(sio.Stdout, conn)
		down <- err
	}()
	select {
	case err := <-down:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return false, fmt.Errorf("mcp wrap: connection to the daemon: %v: %w", err, catalog.ErrConnectionLost)
		}
		select {
		case <-up:
			return false, nil
		case <-time.After(200 * time.Millisecond):
			// The server ended while the client still talked to it (a
			// command that exits at once, a crash).
			return true, nil
		}
	case <-ctx.Done():
		return false, fmt.Errorf("mcp wrap: %v: %w", ctx.Err(), catalog.ErrInterrupted)
	}
}
