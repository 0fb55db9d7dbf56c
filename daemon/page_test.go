package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/wire"
	"github.com/contextd/contextd/wire/grpcclient"
)

// pager makes calls to a daemon started by start, in workspace dir.
type pager struct {
	t   *testing.T
	c   *grpcclient.Conn
	dir string
}

// call returns the call's output and result.
func (p *pager) call(req *wire.CallRequest) (string, *wire.Result, error) {
	p.t.Helper()
	req.Cwd = p.dir
	s, err := p.c.Call(context.Background(), req)
	if err != nil {
		return "", nil, err
	}
	var out strings.Builder
	for {
		ev, err := s.Recv()
		if err != nil {
			return "", nil, p.c.Classify(err, false)
		}
		if o := ev.GetOutput(); o != nil {
			out.Write(o.GetData())
		}
		if r := ev.GetResult(); r != nil {
			return out.String(), r, nil
		}
	}
}

// A long safe_read through the daemon: its pages, the middle read again from
// the file, reassemble to the numbered file. A continuation asked for under
// another session name is found in the caller's own session (the one its
// process gets without a name), and in no other.
func TestLongReadPagesThroughDaemon(t *testing.T) {
	path, _, _ := start(t, config.Default(), context.Background())
	c, err := grpcclient.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".git"), 0o700)
	var file, want strings.Builder
	for i := 0; file.Len() < 400<<10; i++ {
		line := fmt.Sprintf("entry %d: status ok after %d retries", i, i%7)
		fmt.Fprintf(&file, "%s\n", line)
		fmt.Fprintf(&want, "%6d\t%s\n", i+1, line)
	}
	if err := os.WriteFile(filepath.Join(dir, "long.txt"), []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &pager{t: t, c: c, dir: dir}
	_, first, err := p.call(&wire.CallRequest{Tool: "safe_read", InputJson: []byte(`{"path":"long.txt"}`)})
	if err != nil || first.GetError() != nil || !first.GetTruncated() || first.GetContinue() == "" {
		t.Fatalf("first read: %v %v", first, err)
	}
	var all strings.Builder
	pages := 0
	for ref := first.GetContinue(); ref != ""; pages++ {
		// Pages asked for under a session name of their own, as contextd's
		// MCP face names one per connection.
		data, r, err := p.call(&wire.CallRequest{Tool: "safe_read", ContinueRef: ref, Session: "mcp-face-connection"})
		if err != nil || r.GetError() != nil {
			t.Fatalf("page %d: %v %v", pages, r.GetError(), err)
		}
		all.WriteString(data)
		ref = r.GetContinue()
	}
	if all.String() != want.String() {
		t.Fatalf("%d pages reassemble to %d bytes, want %d", pages, all.Len(), want.Len())
	}

	// An output of another named session is not found from here.
	_, other, err := p.call(&wire.CallRequest{Tool: "safe_read", InputJson: []byte(`{"path":"long.txt"}`), Session: "another-agent"})
	if err != nil || other.GetContinue() == "" {
		t.Fatalf("another session's read: %v %v", other, err)
	}
	_, _, err = p.call(&wire.CallRequest{Tool: "safe_read", ContinueRef: other.GetContinue(), Session: "mcp-face-connection"})
	if !catalogIs(err, catalog.ErrUnknownContinuation) {
		t.Fatalf("another session's page: %v", err)
	}
}

func catalogIs(err error, c *catalog.Class) bool { return err != nil && catalog.ClassOf(err) == c }
