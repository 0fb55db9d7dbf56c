// Package listen supplies the daemon's listeners: the sockets systemd passes by
// socket activation (the daemon's own and the HTTP API's, told apart by their
// FileDescriptorName), or, when run by hand, Unix sockets it binds itself at the
// per-user paths with safe permissions, stale-socket cleanup and a lock against a
// second daemon.
package listen

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"
	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

// The fd names the units give (FileDescriptorName=). A unit without the setting
// names its fd after itself, so contextd.socket units written before the names
// existed still pass the main socket as "contextd.socket".
const (
	MainName       = "contextd"
	legacyMainName = "contextd.socket"
	HTTPName       = "http"
)

// HTTPSocketFile is the HTTP API socket's name, beside the daemon's socket.
const HTTPSocketFile = "http.sock"

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

// Set is the daemon's listeners: Main serves the proxy's light protocol and gRPC,
// HTTP the HTTP API.
type Set struct {
	Main *Listener
	HTTP *Listener
}

// Close closes both listeners.
func (s *Set) Close() error {
	return errors.Join(s.Main.Close(), s.HTTP.Close())
}

// HTTPSocketPath is where the HTTP API's socket goes when nothing names it:
// http.sock beside the daemon's socket at mainPath (DefaultSocketPath when empty),
// as contextd-http.socket puts it. A daemon run by hand on a socket of another
// name gets "<name>-http.sock" instead, so that two of them in one directory (or
// one beside the user's own) never contend for one HTTP socket.
func HTTPSocketPath(mainPath string) string {
	if mainPath == "" {
		mainPath = lite.DefaultSocketPath()
	}
	dir, base := filepath.Split(mainPath)
	if base == filepath.Base(lite.DefaultSocketPath()) {
		return filepath.Join(dir, HTTPSocketFile)
	}
	return filepath.Join(dir, strings.TrimSuffix(base, ".sock")+"-"+HTTPSocketFile)
}

// OpenAll returns the daemon's listeners. Under socket activation they are the fds
// systemd passed, by name; an activation that passes no HTTP fd (units from
// before contextd-http.socket) gets an HTTP socket the daemon binds itself, and
// log says so. Run by hand, it binds mainPath (DefaultSocketPath when empty) and
// httpPath (HTTPSocketPath(mainPath) when empty). The activation variables are
// unset, so that no child takes the fds for its own.
func OpenAll(mainPath, httpPath string, log *slog.Logger) (*Set, error) {
	return openFiles(activation.Files(true), mainPath, httpPath, log)
}

// openFiles is OpenAll over the files activation passed (none: not activated).
func openFiles(files []*os.File, mainPath, httpPath string, log *slog.Logger) (*Set, error) {
	named, err := byName(files)
	if err != nil {
		return nil, err
	}
	set := &Set{Main: named[MainName], HTTP: named[HTTPName]}
	switch {
	case set.Main == nil && set.HTTP != nil:
		set.HTTP.Close()
		return nil, fmt.Errorf("socket activation passed an %q fd but no %q one: contextd.socket must set FileDescriptorName=%s (contextd install-units writes it): %w",
			HTTPName, MainName, MainName, catalog.ErrConfig)
	case set.Main == nil:
		if mainPath == "" {
			mainPath = lite.DefaultSocketPath()
		}
		if set.Main, err = Bind(mainPath); err != nil {
			return nil, err
		}
	}
	if set.HTTP != nil {
		return set, nil
	}
	if httpPath == "" {
		httpPath = HTTPSocketPath(set.Main.Path)
	}
	if set.HTTP, err = Bind(httpPath); err != nil {
		set.Main.Close()
		return nil, fmt.Errorf("HTTP API socket: %w", err)
	}
	if set.Main.Activated {
		log.Warn("socket activation passed no HTTP API socket (the units predate contextd-http.socket: run `contextd install-units` or upgrade the package); bound it here, so it answers only while the daemon runs",
			"http_socket", httpPath)
	}
	return set, nil
}

// byName turns the activated files into listeners keyed by MainName and HTTPName.
// Every file must be a Unix stream socket that listens, under one of the known
// names, each name at most once; otherwise none is kept.
func byName(files []*os.File) (map[string]*Listener, error) {
	got := map[string]*Listener{}
	closeAll := func() {
		for _, l := range got {
			l.Close()
		}
	}
	for i, f := range files {
		name := f.Name()
		key := name
		if key == legacyMainName {
			key = MainName
		}
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			closeAll()
			closeFiles(files[i+1:])
			return nil, fmt.Errorf("socket activation passed fd %q, which is not a listening socket (%v): contextd's socket units use ListenStream=: %w", name, err, catalog.ErrConfig)
		}
		ul, ok := ln.(*net.UnixListener)
		switch {
		case key != MainName && key != HTTPName:
			err = fmt.Errorf("socket activation passed fd %q; contextd knows FileDescriptorName=%s (contextd.socket) and FileDescriptorName=%s (contextd-http.socket): %w",
				name, MainName, HTTPName, catalog.ErrConfig)
		case got[key] != nil:
			err = fmt.Errorf("socket activation passed two %q fds; each of contextd's socket units has one ListenStream= and its own FileDescriptorName=: %w", name, catalog.ErrConfig)
		case !ok:
			err = fmt.Errorf("socket activation passed fd %q as a %s socket; contextd listens only on Unix sockets (ListenStream=%%t/contextd/…), never beyond this user: %w",
				name, ln.Addr().Network(), catalog.ErrConfig)
		case !listensForStreams(ul):
			err = fmt.Errorf("socket activation passed fd %q, which is not a listening stream socket: contextd's socket units use ListenStream=: %w", name, catalog.ErrConfig)
		}
		if err != nil {
			ln.Close()
			closeAll()
			closeFiles(files[i+1:])
			return nil, err
		}
		// systemd owns the socket file: never unlink it on exit.
		ul.SetUnlinkOnClose(false)
		got[key] = &Listener{Listener: ul, Path: ul.Addr().String(), Activated: true}
	}
	return got, nil
}

// listensForStreams reports whether ul is a stream socket in the listening state:
// net.FileListener takes a datagram or unconnected socket too, whose Accept only
// fails later.
func listensForStreams(ul *net.UnixListener) bool {
	rc, err := ul.SyscallConn()
	if err != nil {
		return false
	}
	var typ, accepting int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if typ, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE); serr == nil {
			accepting, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
		}
	}); err != nil || serr != nil {
		return false
	}
	return typ == unix.SOCK_STREAM && accepting == 1
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
