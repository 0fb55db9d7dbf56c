package listen

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/systemd"
)

// passed is one socket as systemd would pass it: its kind and its fd name.
type passed struct {
	kind string // "unix", "tcp", "unixgram"
	name string
}

// activationFiles makes real sockets in dir as systemd would pass them: each fd
// named, the socket file left for systemd (never unlinked by us).
func activationFiles(t *testing.T, dir string, socks []passed) ([]*os.File, []string) {
	t.Helper()
	var files []*os.File
	var paths []string
	for i, s := range socks {
		path := filepath.Join(dir, fmt.Sprintf("%d.sock", i))
		if i == 0 && strings.HasPrefix(s.name, "contextd") {
			// Where contextd.socket puts it: an HTTP socket bound by the
			// daemon goes beside it as http.sock.
			path = filepath.Join(dir, "contextd.sock")
		}
		var f *os.File
		var err error
		switch s.kind {
		case "unix":
			var ln *net.UnixListener
			if ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"}); err == nil {
				ln.SetUnlinkOnClose(false)
				f, err = ln.File()
				ln.Close()
			}
		case "tcp":
			var ln *net.TCPListener
			if ln, err = net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}); err == nil {
				f, err = ln.File()
				ln.Close()
			}
		case "unixgram":
			var c *net.UnixConn
			if c, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"}); err == nil {
				f, err = c.File()
				c.Close()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		// The name is what activation.Files gives from LISTEN_FDNAMES.
		fd, err := unix.Dup(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		files = append(files, os.NewFile(uintptr(fd), s.name))
		paths = append(paths, path)
	}
	return files, paths
}

func TestOpenFilesByName(t *testing.T) {
	cases := []struct {
		name     string
		socks    []passed
		wantErr  error
		wantMain int  // index in socks of the main socket, -1: bound by hand
		wantHTTP int  // the same for the HTTP socket
		warned   bool // the log says the HTTP socket was bound here
	}{
		{"both names", []passed{{"unix", "contextd"}, {"unix", "http"}}, nil, 0, 1, false},
		{"both, http first", []passed{{"unix", "http"}, {"unix", "contextd"}}, nil, 1, 0, false},
		{"old unit name, no http fd", []passed{{"unix", "contextd.socket"}}, nil, 0, -1, true},
		{"old unit name with http", []passed{{"unix", "contextd.socket"}, {"unix", "http"}}, nil, 0, 1, false},
		{"no http fd", []passed{{"unix", "contextd"}}, nil, 0, -1, true},
		{"not activated", nil, nil, -1, -1, false},
		{"unknown name", []passed{{"unix", "contextd"}, {"unix", "api"}}, catalog.ErrConfig, 0, 0, false},
		{"unnamed fd", []passed{{"unix", "LISTEN_FD_3"}}, catalog.ErrConfig, 0, 0, false},
		{"two main fds", []passed{{"unix", "contextd"}, {"unix", "contextd.socket"}}, catalog.ErrConfig, 0, 0, false},
		{"two http fds", []passed{{"unix", "contextd"}, {"unix", "http"}, {"unix", "http"}}, catalog.ErrConfig, 0, 0, false},
		{"http without main", []passed{{"unix", "http"}}, catalog.ErrConfig, 0, 0, false},
		{"tcp main", []passed{{"tcp", "contextd"}, {"unix", "http"}}, catalog.ErrConfig, 0, 0, false},
		{"tcp http", []passed{{"unix", "contextd"}, {"tcp", "http"}}, catalog.ErrConfig, 0, 0, false},
		{"datagram", []passed{{"unixgram", "contextd"}}, catalog.ErrConfig, 0, 0, false},
		{"datagram http", []passed{{"unix", "contextd"}, {"unixgram", "http"}}, catalog.ErrConfig, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "contextd")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			files, paths := activationFiles(t, dir, c.socks)
			fds := make([]int, len(files))
			for i, f := range files {
				fds[i] = int(f.Fd())
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			mainPath := filepath.Join(dir, "contextd.sock")
			set, err := openFiles(files, mainPath, "", log)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), "socket") {
					t.Fatalf("openFiles: %v, want %v", err, c.wantErr)
				}
				// Nothing passed in is left open on a refusal.
				for _, fd := range fds {
					if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
						t.Errorf("fd %d still open after the refusal", fd)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			check := func(what string, l *Listener, want int, boundAt string) {
				t.Helper()
				wantPath, activated := boundAt, false
				if want >= 0 {
					wantPath, activated = paths[want], true
				}
				if l.Path != wantPath || l.Activated != activated {
					t.Errorf("%s: path %s activated %v, want %s %v", what, l.Path, l.Activated, wantPath, activated)
				}
				conn, err := net.Dial("unix", l.Path)
				if err != nil {
					t.Fatalf("%s does not accept: %v", what, err)
				}
				conn.Close()
			}
			check("main", set.Main, c.wantMain, mainPath)
			check("http", set.HTTP, c.wantHTTP, filepath.Join(dir, "http.sock"))
			if got := strings.Contains(logged.String(), "no HTTP API socket"); got != c.warned {
				t.Errorf("log warns of a self-bound HTTP socket: %v, want %v\n%s", got, c.warned, logged.String())
			}
		})
	}
}

// A socket systemd passed stays with systemd: closing the set leaves its file.
func TestActivatedSocketsSurviveClose(t *testing.T) {
	dir := t.TempDir()
	files, paths := activationFiles(t, dir, []passed{{"unix", "contextd"}, {"unix", "http"}})
	set, err := openFiles(files, "", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	set.Close()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("activated socket %s removed on close: %v", p, err)
		}
	}
}

// A daemon run by hand binds both sockets, the HTTP one beside the main one,
// and a second daemon on the same paths is refused without disturbing them.
func TestOpenAllByHand(t *testing.T) {
	t.Setenv("LISTEN_FDS", "")
	t.Setenv("LISTEN_PID", "")
	dir := filepath.Join(t.TempDir(), "d")
	mainPath := filepath.Join(dir, "s.sock")
	set, err := OpenAll(mainPath, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, l := range []*Listener{set.Main, set.HTTP} {
		var st syscall.Stat_t
		if err := syscall.Stat(l.Path, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK || st.Mode&0o777 != 0o600 || l.Activated {
			t.Fatalf("%s: mode %o activated %v: %v", l.Path, st.Mode, l.Activated, err)
		}
	}
	if want := filepath.Join(dir, "s-http.sock"); set.HTTP.Path != want {
		t.Errorf("HTTP socket at %s, want %s", set.HTTP.Path, want)
	}
	if _, err := OpenAll(mainPath, "", slog.New(slog.DiscardHandler)); !errors.Is(err, catalog.ErrAlreadyRunning) {
		t.Fatalf("second daemon: %v, want ErrAlreadyRunning", err)
	}
	// An HTTP path taken by another daemon refuses the start and frees the main one.
	other := filepath.Join(dir, "other.sock")
	if _, err := OpenAll(other, set.HTTP.Path, slog.New(slog.DiscardHandler)); !errors.Is(err, catalog.ErrAlreadyRunning) {
		t.Fatalf("HTTP path in use: %v, want ErrAlreadyRunning", err)
	}
	if _, err := os.Lstat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("main socket left behind after the HTTP socket failed: %v", err)
	}
}

func TestHTTPSocketPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	for in, want := range map[string]string{
		"":                                      "/run/user/1000/contextd/http.sock",
		"/run/user/1000/contextd/contextd.sock": "/run/user/1000/contextd/http.sock",
		"/tmp/x/contextd.sock":                  "/tmp/x/http.sock",
		"/run/user/1000/bench-a.sock":           "/run/user/1000/bench-a-http.sock",
		"/tmp/x/socket":                         "/tmp/x/socket-http.sock",
	} {
		if got := HTTPSocketPath(in); got != want {
			t.Errorf("HTTPSocketPath(%q) = %s, want %s", in, got, want)
		}
	}
}

// The units contextd installs name their fds as OpenAll expects, at the paths
// HTTPSocketPath gives.
func TestUnitsNameTheirFds(t *testing.T) {
	want := map[string][2]string{
		"contextd.socket":      {MainName, "%t/contextd/contextd.sock"},
		"contextd-http.socket": {HTTPName, "%t/contextd/" + HTTPSocketFile},
	}
	for _, u := range systemd.Units("/usr/bin/contextd") {
		w, ok := want[u.Name]
		if !ok {
			continue
		}
		delete(want, u.Name)
		if !strings.Contains(u.Content, "\nFileDescriptorName="+w[0]+"\n") || !strings.Contains(u.Content, "\nListenStream="+w[1]+"\n") {
			t.Errorf("%s does not pass fd %q at %s:\n%s", u.Name, w[0], w[1], u.Content)
		}
	}
	for name := range want {
		t.Errorf("systemd.Units has no %s", name)
	}
}

// childEnv marks the test binary re-run as a socket-activated daemon.
const childEnv = "CONTEXTD_LISTEN_TEST_CHILD"

// Through the real protocol: fds 3 and 4 with LISTEN_FDS, LISTEN_FDNAMES and
// LISTEN_PID, in a process of their own (fds 3+ of this one are the runtime's).
func TestOpenAllFromActivationEnv(t *testing.T) {
	dir := t.TempDir()
	files, paths := activationFiles(t, dir, []passed{{"unix", "http"}, {"unix", "contextd"}})
	cmd := exec.Command(os.Args[0], "-test.run=^TestActivatedChild$", "-test.v")
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), childEnv+"=1", "LISTEN_FDS=2", "LISTEN_FDNAMES=http:contextd")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := fmt.Sprintf("main=%s http=%s activated=true,true env=", paths[1], paths[0])
	if !strings.Contains(string(out), want+"\n") {
		t.Fatalf("child did not report %q:\n%s", want, out)
	}
}

// TestActivatedChild is TestOpenAllFromActivationEnv's daemon side.
func TestActivatedChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestOpenAllFromActivationEnv")
	}
	// systemd sets LISTEN_PID to the pid it execs; only the child knows its own.
	os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	set, err := OpenAll("", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	fmt.Printf("main=%s http=%s activated=%v,%v env=%s\n", set.Main.Path, set.HTTP.Path, set.Main.Activated, set.HTTP.Activated,
		os.Getenv("LISTEN_FDS")+os.Getenv("LISTEN_FDNAMES")+os.Getenv("LISTEN_PID"))
}
