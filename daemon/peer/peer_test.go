package peer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/contextd/contextd/daemon/peer"
	"github.com/contextd/contextd/internal/syncbuf"
	"github.com/contextd/contextd/peercred"
	"github.com/contextd/contextd/wire"
	"github.com/contextd/contextd/wire/grpcclient"
)

// The test binary doubles as a client process (possibly of another uid):
//
//	CTXD_PEER_HELPER=raw  CTXD_PEER_SOCK=PATH: connect, send nothing, print how the
//	                      first read ended ("EOF 0" or "DATA n").
//	CTXD_PEER_HELPER=grpc CTXD_PEER_SOCK=PATH CTXD_PEER_WANT=UID: call Status and
//	                      print "OK <what the server saw>" or "ERR <error>".
const helperEnv = "CTXD_PEER_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode, os.Getenv("CTXD_PEER_SOCK")))
	}
	os.Exit(m.Run())
}

func helperMain(mode, sock string) int {
	switch mode {
	case "raw":
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Println("DIAL", err)
			return 2
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(make([]byte, 4096))
		switch {
		case errors.Is(err, io.EOF):
			fmt.Println("EOF", n)
		case err != nil && n == 0:
			fmt.Println("ERR", err)
		default:
			fmt.Println("DATA", n)
		}
		return 0
	case "grpc":
		want, _ := strconv.ParseUint(os.Getenv("CTXD_PEER_WANT"), 10, 32)
		reply, err := status(sock, uint32(want))
		if err != nil {
			fmt.Println("ERR", err)
			return 0
		}
		fmt.Println("OK", reply.Version)
		return 0
	}
	return 2
}

// status calls Status over a fresh connection checked with grpcclient.Credentials(want).
func status(sock string, want uint32, opts ...grpc.CallOption) (*wire.StatusReply, error) {
	cc, err := grpc.NewClient("passthrough:///contextd",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}),
		grpc.WithTransportCredentials(grpcclient.Credentials(want)),
	)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return wire.NewToolsClient(cc).Status(ctx, &wire.StatusRequest{}, opts...)
}

// statusServer is a minimal wire.Tools service: Status reports the caller the
// handler saw through the connection's AuthInfo.
type statusServer struct {
	wire.UnimplementedToolsServer
	calls atomic.Int32
}

func (s *statusServer) Status(ctx context.Context, _ *wire.StatusRequest) (*wire.StatusReply, error) {
	s.calls.Add(1)
	p, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return nil, errors.New("no gRPC peer")
	}
	cred, ok := p.AuthInfo.(peer.Cred)
	if !ok {
		return nil, fmt.Errorf("AuthInfo is %T, not peer.Cred", p.AuthInfo)
	}
	if c2, ok := peer.FromContext(ctx); !ok || c2 != cred {
		return nil, errors.New("peer.FromContext disagrees with the gRPC peer")
	}
	if cred.AuthType() != "unix-peercred" {
		return nil, fmt.Errorf("auth type %q", cred.AuthType())
	}
	return &wire.StatusReply{Version: cred.String(), Pid: cred.PID}, nil
}

// records returns the JSON log records written to log so far.
func records(t *testing.T, log *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(log.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

type server struct {
	sock string
	log  *syncbuf.Buffer
	svc  *statusServer
}

// serve runs a gRPC server with the peer check on a fresh socket in dir.
func serve(t *testing.T, dir string, allowed []uint32) *server {
	t.Helper()
	s := &server{sock: filepath.Join(dir, "s.sock"), log: &syncbuf.Buffer{}, svc: &statusServer{}}
	ln, err := net.Listen("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(s.log, nil))
	srv := grpc.NewServer(grpc.Creds(peer.ServerCredentials()))
	wire.RegisterToolsServer(srv, s.svc)
	done := make(chan struct{})
	go func() { srv.Serve(peer.NewListener(ln, allowed, logger)); close(done) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return s
}

func TestSameUIDCredentialsReachHandler(t *testing.T) {
	s := serve(t, t.TempDir(), nil)
	var clientSide grpcpeer.Peer
	reply, err := status(s.sock, uint32(os.Getuid()), grpc.Peer(&clientSide))
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	want := peer.Cred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if reply.Version != want.String() || reply.Pid != want.PID {
		t.Errorf("handler saw %q, want %q", reply.Version, want)
	}
	// The client's handshake read the server's credentials too.
	if c, ok := clientSide.AuthInfo.(peer.Cred); !ok || c != want {
		t.Errorf("client-side AuthInfo %#v, want %v", clientSide.AuthInfo, want)
	}

	// A separate process: the pid is the caller's own, not the daemon's.
	cmd, out := helper(t, "", "grpc", s.sock, "CTXD_PEER_WANT="+strconv.Itoa(os.Getuid()))
	wantChild := peer.Cred{PID: int32(cmd.Process.Pid), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if out != "OK "+wantChild.String() {
		t.Errorf("child process: %q, want OK %s", out, wantChild)
	}
	if n := s.svc.calls.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
	for _, r := range records(t, s.log) {
		if r["level"] != "INFO" && r["level"] != "DEBUG" {
			t.Errorf("unexpected log record for allowed callers: %v", r)
		}
	}
}

// helper runs the test binary as a client. With bin empty it runs os.Args[0] as
// ourselves; otherwise bin with cred.
func helper(t *testing.T, bin, mode, sock string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	return helperAs(t, bin, nil, mode, sock, env...)
}

func helperAs(t *testing.T, bin string, cred *syscall.Credential, mode, sock string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	if bin == "" {
		bin = os.Args[0]
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append([]string{helperEnv + "=" + mode, "CTXD_PEER_SOCK=" + sock, "PATH=/usr/bin:/bin"}, env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper %s: %v\n%s", mode, err, out.String())
	}
	return cmd, strings.TrimSpace(out.String())
}

// A caller of another uid is cut off before a byte is exchanged, and the refusal is
// logged with its pid and uid; the same uid passes when the configuration allows it.
func TestOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid (CI runs this as root)")
	}
	const other = 65534 // nobody
	base, err := os.MkdirTemp("", "ctxd-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copySelf(t, base)
	nobody := &syscall.Credential{Uid: other, Gid: other}

	newServer := func(t *testing.T, allowed []uint32) *server {
		dir, err := os.MkdirTemp(base, "srv")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		s := serve(t, dir, allowed)
		if err := os.Chmod(s.sock, 0o777); err != nil { // the socket's mode is not what is tested
			t.Fatal(err)
		}
		return s
	}

	t.Run("refused", func(t *testing.T) {
		s := newServer(t, nil)
		cmd, out := helperAs(t, bin, nobody, "raw", s.sock)
		if out != "EOF 0" {
			t.Fatalf("client of uid %d read %q, want EOF before any byte", other, out)
		}
		var found bool
		for _, r := range records(t, s.log) {
			if r["msg"] == "refused peer: uid not allowed" &&
				r["peer_pid"] == float64(cmd.Process.Pid) && r["peer_uid"] == float64(other) && r["level"] == "WARN" {
				found = true
			}
		}
		if !found {
			t.Errorf("no refusal with peer_pid=%d peer_uid=%d in the log:\n%s", cmd.Process.Pid, other, s.log.String())
		}
		// A gRPC client of that uid gets nowhere either, and the handler never runs.
		_, out = helperAs(t, bin, nobody, "grpc", s.sock, "CTXD_PEER_WANT=0")
		if !strings.HasPrefix(out, "ERR") {
			t.Errorf("refused gRPC client: %q", out)
		}
		if n := s.svc.calls.Load(); n != 0 {
			t.Errorf("handler ran %d times for a refused peer", n)
		}
		// The listener keeps serving after refusals.
		if reply, err := status(s.sock, 0); err != nil || !strings.Contains(reply.Version, "uid=0 ") {
			t.Errorf("same-uid call after refusals: %v %v", reply, err)
		}
	})

	t.Run("allowlisted", func(t *testing.T) {
		s := newServer(t, []uint32{12345, other})
		cmd, out := helperAs(t, bin, nobody, "grpc", s.sock, "CTXD_PEER_WANT=0")
		want := peer.Cred{PID: int32(cmd.Process.Pid), UID: other, GID: other}
		if out != "OK "+want.String() {
			t.Errorf("allowlisted client: %q, want OK %s", out, want)
		}
		// Raw, the accepted client hears the server's HTTP/2 preface: the EOF above
		// is the refusal, not the protocol.
		_, out = helperAs(t, bin, nobody, "raw", s.sock)
		if !strings.HasPrefix(out, "DATA ") {
			t.Errorf("allowlisted raw client read %q, want server data", out)
		}
		for _, r := range records(t, s.log) {
			if strings.HasPrefix(fmt.Sprint(r["msg"]), "refused") {
				t.Errorf("allowlisted peer refused: %v", r)
			}
		}
	})
}

func copySelf(t *testing.T, dir string) string {
	t.Helper()
	in, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, "peer.test")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// A gRPC server given ServerCredentials but a listener without the peer check must
// not serve: no AuthInfo, no call.
func TestServerCredentialsFailClosed(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, err := peer.ServerCredentials().ServerHandshake(a); err == nil {
		t.Error("ServerHandshake accepted a connection that did not come through Listener")
	}
	uc := unixPair(t)
	if _, _, err := peer.ServerCredentials().ServerHandshake(uc); err == nil {
		t.Error("ServerHandshake accepted a raw Unix connection")
	}
	if _, _, err := peer.ServerCredentials().ClientHandshake(context.Background(), "", uc); err == nil {
		t.Error("server credentials used as a client")
	}
	if _, _, err := grpcclient.Credentials(0).ServerHandshake(uc); err == nil {
		t.Error("client credentials used as a server")
	}

	sock := filepath.Join(t.TempDir(), "bare.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	svc := &statusServer{}
	srv := grpc.NewServer(grpc.Creds(peer.ServerCredentials()))
	wire.RegisterToolsServer(srv, svc)
	go srv.Serve(ln) // not wrapped in peer.Listener
	defer srv.Stop()
	if reply, err := status(sock, uint32(os.Getuid())); err == nil {
		t.Fatalf("call served without the peer check: %v", reply)
	}
	if svc.calls.Load() != 0 {
		t.Error("handler ran without peer credentials")
	}
}

// A listener on a socket that has no SO_PEERCRED (TCP) refuses every connection.
func TestListenerWithoutPeerCredentialsRefuses(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	pl := peer.NewListener(tcp, nil, slog.New(slog.NewJSONHandler(log, nil)))
	defer pl.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := pl.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("TCP client read %d, %v; want EOF", n, err)
	}
	pl.Close()
	if c, ok := <-accepted; ok {
		t.Fatalf("Accept returned a connection without credentials: %v", c)
	}
	var found bool
	for _, r := range records(t, log) {
		found = found || r["msg"] == "refused connection: cannot read peer credentials"
	}
	if !found {
		t.Errorf("refusal not logged: %s", log.String())
	}
}

func unixPair(t *testing.T) *net.UnixConn {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f0, f1 := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer f0.Close()
	defer f1.Close()
	c0, err := net.FileConn(f0)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := net.FileConn(f1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c0.Close(); c1.Close() })
	return c0.(*net.UnixConn)
}

func TestRead(t *testing.T) {
	c := unixPair(t)
	got, err := peercred.Read(c)
	if err != nil {
		t.Fatal(err)
	}
	want := peer.Cred{PID: int32(os.Getpid()), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if got != want {
		t.Errorf("Read = %v, want %v", got, want)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := peercred.Read(a); err == nil {
		t.Error("Read of a non-Unix connection succeeded")
	}
}

// The client refuses a server that runs as another uid, before sending anything.
func TestClientCredentialsRefusesOtherServer(t *testing.T) {
	s := serve(t, t.TempDir(), nil)
	self := uint32(os.Getuid())
	other := self + 1

	c, err := net.Dial("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = grpcclient.Credentials(other).ClientHandshake(context.Background(), "contextd", c)
	var ident *peercred.ErrServerIdentity
	if !errors.As(err, &ident) {
		t.Fatalf("handshake with a server of uid %d while expecting %d: %v", self, other, err)
	}
	if ident.Got != self || ident.Want != other {
		t.Errorf("ErrServerIdentity %+v, want Got %d Want %d", ident, self, other)
	}
	if !strings.Contains(ident.Error(), fmt.Sprintf("uid %d, not uid %d", self, other)) {
		t.Errorf("message %q", ident.Error())
	}

	// Through gRPC the call fails and never reaches the handler.
	if _, err := status(s.sock, other); err == nil || !strings.Contains(err.Error(), "served by uid") {
		t.Errorf("Status against a server of another uid: %v", err)
	}
	if n := s.svc.calls.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
	// Not a Unix socket: no credentials to check, refused.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, err := grpcclient.Credentials(self).ClientHandshake(context.Background(), "", a); err == nil {
		t.Error("client handshake over a non-Unix connection succeeded")
	}
}

func TestFromContextWithoutPeer(t *testing.T) {
	if _, ok := peer.FromContext(context.Background()); ok {
		t.Error("FromContext without a peer succeeded")
	}
	ctx := grpcpeer.NewContext(context.Background(), &grpcpeer.Peer{AuthInfo: otherAuth{}})
	if _, ok := peer.FromContext(ctx); ok {
		t.Error("FromContext accepted foreign AuthInfo")
	}
	ctx = grpcpeer.NewContext(context.Background(), &grpcpeer.Peer{})
	if _, ok := peer.FromContext(ctx); ok {
		t.Error("FromContext accepted a peer without AuthInfo")
	}
}

type otherAuth struct{}

func (otherAuth) AuthType() string { return "other" }

var _ credentials.AuthInfo = otherAuth{}
