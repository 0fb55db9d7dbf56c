// Package listen supplies the daemon's listener: the socket systemd passes by socket
// activation, or, when run by hand, a Unix socket it binds itself at the per-user
// path with safe permissions, stale-socket cleanup and a lock against a second daemon.
package listen

import (
	"fmt"
	"net"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

// Listener is what the daemon serves on, and how it got it.
type Listener struct {
	net.Listener
	Path      string // socket path, when known
	Activated bool   // passed in by systemd socket activation
	release   func()
}

// Close closes the socket and, for a socket the daemon bound itself, removes it and
// releases the lock. A socket-activated listener stays with systemd.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	if l.release != nil {
		l.release()
		l.release = nil
	}
	return err
}

// Open returns the socket-activated listener when systemd passed one, otherwise
// binds path (DefaultSocketPath when empty).
func Open(path string) (*Listener, error) {
	lns, err := activation.Listeners()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	var got []net.Listener
	for _, ln := range lns {
		if ln != nil {
			got = append(got, ln)
		}
	}
	switch len(got) {
	case 0:
		if path == "" {
			path = lite.DefaultSocketPath()
		}
		return Bind(path)
	case 1:
		ul, ok := got[0].(*net.UnixListener)
		if !ok {
			got[0].Close()
			return nil, fmt.Errorf("socket activation passed a %s socket; contextd needs a Unix stream socket (ListenStream=%%t/contextd/contextd.sock): %w",
				got[0].Addr().Network(), catalog.ErrConfig)
		}
		// systemd owns the socket file: never unlink it on exit.
		ul.SetUnlinkOnClose(false)
		return &Listener{Listener: ul, Path: ul.Addr().String(), Activated: true}, nil
	default:
		for _, ln := range got {
			ln.Close()
		}
		return nil, fmt.Errorf("socket activation passed %d sockets; contextd.socket must have exactly one ListenStream: %w", len(got), catalog.ErrConfig)
	}
}
