package pluginrun

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	dir := "/run/user/1000/contextd/p/plugin-dir1"
	for _, tc := range []struct {
		name, network, addr string
		want                error
	}{
		{"socket in the directory", "unix", dir + "/plugin42", nil},
		{"tcp on loopback", "tcp", "127.0.0.1:1234", ErrAddress},
		{"unix, another network name", "unixgram", dir + "/plugin42", ErrAddress},
		{"socket elsewhere", "unix", "/run/user/1000/ssh-agent.sock", ErrAddress},
		{"socket in a sibling directory", "unix", "/run/user/1000/contextd/p/plugin-dir2/plugin42", ErrAddress},
		{"socket below the directory", "unix", dir + "/sub/plugin42", ErrAddress},
		{"dot-dot out of the directory", "unix", dir + "/../plugin-dir2/plugin42", ErrAddress},
		{"relative path", "unix", "plugin42", ErrAddress},
		{"the directory itself", "unix", dir, ErrAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckAddr(dir, tc.network, tc.addr)
			if !errors.Is(err, tc.want) {
				t.Fatalf("CheckAddr(%q, %q) = %q, %v; want %v", tc.network, tc.addr, got, err, tc.want)
			}
			if err == nil && got != filepath.Clean(tc.addr) {
				t.Errorf("CheckAddr returned %q, want %q", got, tc.addr)
			}
		})
	}
}

// TestDialRefusesWhatIsNotASocket: a plugin that swaps its socket for a link
// to another program's socket, or for a plain file, is not connected to.
func TestDialRefusesWhatIsNotASocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "pr") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	other, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	listen := func(path string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	listen(filepath.Join(dir, "good"))
	listen(filepath.Join(other, "agent"))
	if err := os.Symlink(filepath.Join(other, "agent"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := dialIn(ctx, dir, "good")
	if err != nil {
		t.Fatalf("dial the plugin's own socket: %v", err)
	}
	c.Close()
	if c, err := dialIn(ctx, dir, "link"); err == nil {
		c.Close()
		t.Error("dialled through a symlink to another socket")
	}
	if _, err := dialIn(ctx, dir, "file"); !errors.Is(err, ErrNotSocket) {
		t.Errorf("dial a plain file: %v, want ErrNotSocket", err)
	}
}
