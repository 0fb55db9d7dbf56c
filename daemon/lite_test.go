package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/wire"
	"github.com/contextd/contextd/wire/grpcclient"
	"github.com/contextd/contextd/wire/lite"
)

// Both protocols work on one socket, side by side, and report the same things.
func TestLightAndGRPCShareTheSocket(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	lc, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	var out strings.Builder
	res, err := lc.Call(context.Background(), &lite.Call{Tool: "safe_bash", Cwd: t.TempDir(),
		Input: []byte(`{"command":"echo light; exit 3"}`)}, func(b []byte) { out.Write(b) })
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "light\n" || res.ExitCode != 3 || res.Session == "" {
		t.Fatalf("light call: output %q, result %+v", out.String(), res)
	}

	gc, err := grpcclient.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	st, err := gc.Status(context.Background(), &wire.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	lc2, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lc2.Close()
	lst, err := lc2.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if lst.PID != st.Pid || strings.Join(lst.Tools, ",") != strings.Join(st.Tools, ",") {
		t.Fatalf("status differs: light %+v, gRPC %+v", lst, st)
	}
}

// Errors keep their catalog class on the light protocol: contextd's own as an
// error event, the tool's own in the result.
func TestLightErrors(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	call := func(tool, input string) (*lite.Result, error) {
		c, err := client.Dial(path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.Call(context.Background(), &lite.Call{Tool: tool, Cwd: t.TempDir(), Input: []byte(input)}, func([]byte) {})
	}
	if _, err := call("nope", `{}`); !errors.Is(err, catalog.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := call("safe_bash", `{"cmd":"x"}`); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("bad input: %v", err)
	}
	r, err := call("safe_read", `{"path":"missing"}`)
	if err != nil || !errors.Is(catalog.FromDetail(r.Error), catalog.ErrNotFound) {
		t.Errorf("missing file: %+v %v", r, err)
	}
}

// A request over max_request_bytes is refused with its class, and a connection
// that says nothing, or garbage, does not wedge the daemon.
func TestLightLimits(t *testing.T) {
	cfg := config.Default()
	cfg.MaxRequestBytes = 1 << 10
	path, _, _ := start(t, cfg, context.Background())
	c, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(context.Background(), &lite.Call{Tool: "safe_write", Cwd: t.TempDir(),
		Input: []byte(`{"path":"x","content":"` + strings.Repeat("a", 4096) + `"}`)}, func([]byte) {})
	c.Close()
	if !errors.Is(err, catalog.ErrBadInput) {
		t.Fatalf("oversized request: %v", err)
	}
	silent, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte(lite.Magic + "\xff\xff\xff\xffjunk"))
	garbage.SetReadDeadline(time.Now().Add(5 * time.Second))
	var ev lite.Event
	if err := lite.Read(garbage, &ev, 1<<20); err != nil || ev.Error == nil || ev.Error.Code != catalog.ErrBadInput.Code {
		t.Errorf("a 4 GiB length prefix: %+v %v, want a CTXD-E002 error event", ev, err)
	}
	garbage.Close()
	c2, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Status(context.Background()); err != nil {
		t.Fatalf("daemon wedged after silent and garbage connections: %v", err)
	}
}

// A call's output travels as raw frames to a client that asks for them and as
// JSON to one that does not (a proxy older than the daemon).
func TestLightOutputFrames(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	for _, raw := range []bool{false, true} {
		conn, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute))
		conn.Write([]byte(lite.Magic))
		req := &lite.Request{RawOutput: raw, Call: &lite.Call{Tool: "safe_bash", Cwd: t.TempDir(),
			Input: []byte(`{"command":"printf 'frame\\0\\377'"}`)}}
		if err := lite.Write(conn, req); err != nil {
			t.Fatal(err)
		}
		var out []byte
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(conn, hdr[:]); err != nil {
				t.Fatalf("raw=%v: %v", raw, err)
			}
			isRaw := hdr[0]&0x80 != 0
			var ev lite.Event
			if err := lite.ReadEvent(io.MultiReader(bytes.NewReader(hdr[:]), conn), &ev, 1<<20); err != nil {
				t.Fatalf("raw=%v: %v", raw, err)
			}
			if ev.Result != nil {
				break
			}
			if len(ev.Output) > 0 && isRaw != raw {
				t.Fatalf("asked for raw frames: %v; got a raw frame: %v", raw, isRaw)
			}
			out = append(out, ev.Output...)
		}
		conn.Close()
		if string(out) != "frame\x00\xff" {
			t.Fatalf("raw=%v: output %q", raw, out)
		}
	}
}

// A client that is slow to say its first bytes, as a proxy starved by a burst
// of parallel calls is, is still answered: 12 s after connecting is within
// the handshake's bound (it was 10 s, and such calls were closed unanswered).
func TestLightSlowClientAnswered(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	c, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(12 * time.Second)
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatalf("a client that spoke 12 s after connecting: %v", err)
	}
}
