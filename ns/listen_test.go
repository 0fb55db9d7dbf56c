package ns_test

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/ns"
)

// TestListenReachesDaemon: a connection made inside the sandbox to an
// address of Spec.Listen is accepted by whoever holds Child.Listeners (the
// daemon's egress proxy), and the command itself holds no such socket.
func TestListenReachesDaemon(t *testing.T) {
	ws := t.TempDir()
	s := toolSpec(t, ws, "talk", "127.0.0.1:3128", "ping")
	s.Listen = []string{"127.0.0.1:3128", "[::1]:3128"}
	var wg sync.WaitGroup
	var got string
	var addrs []string
	r := runWith(t, s, func(c *ns.Child) {
		if err := c.Ready(); err != nil {
			t.Errorf("ready: %v", err)
			return
		}
		ls := c.Listeners()
		if len(ls) == 0 || ls[0].Addr != "127.0.0.1:3128" {
			t.Fatalf("listeners: %+v", ls)
		}
		for _, l := range ls {
			addrs = append(addrs, l.Addr)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				for _, l := range ls {
					l.Close()
				}
			}()
			conn, err := ls[0].Accept()
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			b, _ := io.ReadAll(conn)
			got = string(b)
			conn.Write([]byte("pong:" + got))
			conn.Close()
		}()
	})
	wg.Wait()
	if r.err != nil || r.code != 0 {
		t.Fatalf("code %d err %v: %s %s", r.code, r.err, r.out, r.errOut)
	}
	if strings.TrimSpace(r.out) != "OK pong:ping" || got != "ping" {
		t.Fatalf("inside: %q, daemon got %q", r.out, got)
	}
	t.Logf("listening: %v", addrs)
}

// TestListenNotInCommand: the listening sockets never reach the command.
func TestListenNotInCommand(t *testing.T) {
	ws := t.TempDir()
	s := toolSpec(t, ws, "fds")
	s.Listen = []string{"127.0.0.1:3128"}
	r := runWith(t, s, func(c *ns.Child) {
		if err := c.Ready(); err == nil {
			for _, l := range c.Listeners() {
				l.Close()
			}
		}
	})
	if r.err != nil || r.code != 0 {
		t.Fatalf("code %d err %v: %s", r.code, r.err, r.errOut)
	}
	if strings.Contains(r.out, "socket:") {
		t.Fatalf("the command holds a socket:\n%s", r.out)
	}
}

// TestListenRefused: addresses that are not loopback, or a spec that keeps
// the host's network, are refused before anything starts.
func TestListenRefused(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		name    string
		listen  []string
		network bool
	}{
		{"not loopback", []string{"0.0.0.0:3128"}, false},
		{"no port", []string{"127.0.0.1:0"}, false},
		{"not an address", []string{"localhost:3128"}, false},
		{"twice", []string{"127.0.0.1:1", "127.0.0.1:1"}, false},
		{"host network", []string{"127.0.0.1:3128"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := toolSpec(t, ws, "status")
			s.Listen, s.Network = tc.listen, tc.network
			r := run(t, s)
			var se *ns.SetupError
			if !errors.As(r.err, &se) || se.Step != ns.StepValidate || !errors.Is(r.err, ns.ErrSetup) {
				t.Fatalf("err = %v, want a validate SetupError", r.err)
			}
		})
	}
}
