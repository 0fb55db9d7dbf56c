package daemontest

import (
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/contextd/contextd/wire/lite"
)

// Answer is a fake daemon's reply to one call: the output it streams, then
// the result.
type Answer func(*lite.Call) (output []byte, res *lite.Result)

// Fake serves the light protocol's calls on a socket of its own until the
// test ends, answering each with answer, and returns the socket's path. It
// stands in for the daemon where a test checks what a client sends and
// how it shows the answer.
func Fake(t testing.TB, answer Answer) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "fake.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveFake(t, c, answer)
			}()
		}
	}()
	return sock
}

func serveFake(t testing.TB, c net.Conn, answer Answer) {
	magic := make([]byte, len(lite.Magic))
	if _, err := io.ReadFull(c, magic); err != nil || string(magic) != lite.Magic {
		t.Errorf("fake daemon: the client did not start with the magic: %q %v", magic, err)
		return
	}
	var req lite.Request
	err := lite.Read(c, &req, 64<<20)
	if err == nil && req.Admin != nil && req.Admin.Op == lite.OpMCPHub {
		// contextd-proxy mcp asks at start which servers it serves: none.
		lite.Write(c, &lite.Event{Admin: []byte(`{"servers":[]}`)})
		return
	}
	if err != nil || req.Call == nil {
		t.Errorf("fake daemon: not a call: %+v %v", req, err)
		return
	}
	out, res := answer(req.Call)
	if len(out) > 0 {
		if req.RawOutput {
			lite.WriteOutput(c, out)
		} else {
			lite.Write(c, &lite.Event{Output: out})
		}
	}
	lite.Write(c, &lite.Event{Result: res})
}
