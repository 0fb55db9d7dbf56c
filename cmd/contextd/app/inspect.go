package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/inspect"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/wire/lite"
)

// maxInspectEvent bounds one event from the daemon: an event carries one
// message of the session, and tool results can be large.
const maxInspectEvent = 64 << 20

// helloTimeout bounds the wait for the daemon's first answer. Under socket
// activation the daemon may be starting; it answers within a second or two.
const helloTimeout = 30 * time.Second

// commandQueue is how many commands may wait for the socket before the UI
// reports that the daemon is not reading them.
const commandQueue = 64

func inspectCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect [RECORD]",
		Short: "Watch a live `contextd-proxy mcp wrap` session, and hold, edit or drop its messages",
		Long: `inspect attaches a terminal UI to a live MCP wrap session (the newest one, or the
one whose record id is given): every message between the agent and the server, requests
paired with their responses, filters by direction, kind and method or tool name.

With intercept on (key i), messages are held until you forward them (f), edit them in
$EDITOR and forward the result (m), or drop them (d). s saves what was received to a JSON
file in the current directory; r sends the selected client request to the server again.
? lists every key. It needs a terminal of at least 50x12 and no mouse; 80x24 over SSH works.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("%s takes at most one argument, a record id: %w", c.CommandPath(), catalog.ErrUsage)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			record := ""
			if len(args) == 1 {
				record = args[0]
			}
			return runInspect(c.Context(), record, c.InOrStdin(), c.OutOrStdout())
		},
	}
}

// runInspect attaches to the session and runs the UI until the user quits.
func runInspect(ctx context.Context, record string, in io.Reader, out io.Writer) error {
	if !isTerminal(in) || !isTerminal(out) {
		return fmt.Errorf("contextd inspect is interactive: run it in a terminal (over SSH, ssh -t): %w", catalog.ErrUsage)
	}
	conn, hello, err := attachInspect(client.SocketPath(), record)
	if err != nil {
		return err
	}
	defer conn.Close()

	queue := make(chan lite.InspectCommand, commandQueue)
	m := inspect.New(*hello, inspect.Options{Send: func(c lite.InspectCommand) error {
		select {
		case queue <- c:
			return nil
		default:
			return fmt.Errorf("%d commands are waiting for the daemon, which is not reading them: %w", commandQueue, catalog.ErrConnectionLost)
		}
	}})
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))

	// One goroutine reads events, one writes commands: the UI never waits
	// for the socket, and commands keep the order they were given in.
	go func() {
		for {
			var ev lite.InspectEvent
			if err := lite.Read(conn, &ev, maxInspectEvent); err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
					err = nil
				}
				p.Send(inspect.ClosedMsg{Err: err})
				return
			}
			p.Send(inspect.EventMsg{Event: ev})
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case c := <-queue:
				if err := lite.Write(conn, c); err != nil {
					p.Send(inspect.ClosedMsg{Err: err})
					return
				}
			case <-stop:
				return
			}
		}
	}()

	if _, err := p.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("inspect: %v: %w", ctx.Err(), catalog.ErrInterrupted)
		}
		return fmt.Errorf("inspect: terminal: %v: %w", err, catalog.ErrIO)
	}
	return nil
}

// attachInspect connects to the daemon and asks for the session; it returns
// once the daemon has said hello, or with the daemon's refusal (no live
// wrap session, or no such record) as a catalog error.
func attachInspect(path, record string) (net.Conn, *lite.InspectHello, error) {
	c, err := client.Request(path, &lite.Request{Inspect: &lite.Inspect{Record: record}})
	if err != nil {
		return nil, nil, err
	}
	conn := c.Net()
	conn.SetReadDeadline(time.Now().Add(helloTimeout))
	// The first answer is a Hello, or an Error (an InspectEvent and an Event
	// carry an error in the same field, so an older daemon's refusal of a
	// request it does not know reads the same way).
	var ev lite.InspectEvent
	if err := lite.Read(conn, &ev, maxInspectEvent); err != nil {
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, nil, fmt.Errorf("inspect: no answer from the daemon at %s in %s: %w", path, helloTimeout, catalog.ErrDaemonUnavailable)
		}
		if refused := c.Refused(err); refused != nil {
			return nil, nil, refused
		}
		return nil, nil, fmt.Errorf("inspect: the daemon at %s closed the connection without answering (%v); a daemon older than `contextd inspect` does this: restart it (systemctl --user restart contextd.service): %w",
			path, err, catalog.ErrConnectionLost)
	}
	conn.SetReadDeadline(time.Time{})
	switch {
	case ev.Error != nil:
		conn.Close()
		return nil, nil, catalog.FromDetail(ev.Error)
	case ev.Hello == nil:
		conn.Close()
		return nil, nil, fmt.Errorf("inspect: the daemon answered with something other than a hello: %w", catalog.ErrInternal)
	}
	return conn, ev.Hello, nil
}

// isTerminal reports whether f is a terminal (a TCGETS ioctl succeeds).
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(fd.Fd()), unix.TCGETS)
	return err == nil
}
