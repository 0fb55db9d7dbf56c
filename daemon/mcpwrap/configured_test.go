package mcpwrap

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/runner/runnertest"
	"github.com/contextd/contextd/wire/lite"
)

// A configured wrap runs the configuration's command and nothing the caller
// names: the caller's command beside Configured is refused, and so is a
// name the configuration does not serve.
func TestConfiguredWrap(t *testing.T) {
	e := newWrapEnv(t, runnertest.Unsandboxed{})
	const hello = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}`
	e.cfg.MCP.Servers = map[string]config.MCPServer{
		"hello":    {Command: []string{"/bin/sh", "-c", "read request; echo '" + hello + "'; cat >/dev/null"}},
		"settings": {Network: true},
	}
	serve := func(req *lite.Wrap) (net.Conn, lite.Event) {
		client, daemon := net.Pipe()
		done := make(chan struct{})
		go func() {
			e.w.Serve(context.Background(), daemon, req, "sess-1")
			daemon.Close()
			close(done)
		}()
		// The session lets go of its placeholders in the project when
		// Serve returns: wait for it before the project is removed.
		t.Cleanup(func() {
			client.Close()
			<-done
		})
		client.SetDeadline(time.Now().Add(30 * time.Second))
		var ev lite.Event
		if err := lite.Read(client, &ev, 1<<20); err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		return client, ev
	}
	conn, ev := serve(&lite.Wrap{Name: "hello", Configured: true, Cwd: e.project, Env: map[string]string{"PATH": "/usr/bin:/bin"}})
	if ev.Wrap == nil {
		t.Fatalf("configured wrap: %+v", ev.Error)
	}
	conn.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n"))
	buf := make([]byte, len(hello)+1)
	if _, err := readFull(conn, buf); err != nil || string(buf) != hello+"\n" {
		t.Fatalf("configured server answered %q, %v", buf, err)
	}
	if s := e.newest(); !strings.HasPrefix(s.Server, "hello: /bin/sh -c") {
		t.Errorf("record names %q, want the configured command", s.Server)
	}
	for _, c := range []struct {
		req  *lite.Wrap
		want error
	}{
		{&lite.Wrap{Name: "hello", Configured: true, Command: []string{"/bin/rm", "-rf", "x"}, Cwd: e.project}, catalog.ErrBadInput},
		{&lite.Wrap{Name: "hello", Configured: true, URL: "http://127.0.0.1:1/", Cwd: e.project}, catalog.ErrBadInput},
		{&lite.Wrap{Name: "settings", Configured: true, Cwd: e.project}, catalog.ErrConfig},
		{&lite.Wrap{Name: "absent", Configured: true, Cwd: e.project}, catalog.ErrConfig},
	} {
		_, ev := serve(c.req)
		if err := catalog.FromDetail(ev.Error); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.req, err, c.want)
		}
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// mcp.hub lists the served servers only, with their pins, and never a
// secret of their command line.
func TestHubAdmin(t *testing.T) {
	e := newWrapEnv(t, runnertest.Unsandboxed{})
	e.cfg.MCP.Servers = map[string]config.MCPServer{
		"b-url":    {URL: "https://mcp.example/x?token=" + testToken},
		"a-cmd":    {Command: []string{"node", "server.js", "--token", testToken}},
		"settings": {Network: true},
	}
	e.cfg.MCP.Search = config.SearchOn
	out, err := e.w.Admin(context.Background(), lite.OpMCPHub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), testToken) {
		t.Fatalf("the token reached the answer: %s", out)
	}
	var h lite.MCPHub
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatal(err)
	}
	if h.Search != "on" || h.Threshold != 30 || h.Results != 5 || h.StartTimeout != time.Minute || h.Dense || len(h.Servers) != 2 ||
		h.Servers[0].Name != "a-cmd" || h.Servers[1].Name != "b-url" || !strings.Contains(h.Servers[0].Target, "[REDACTED:") {
		t.Fatalf("hub: %+v", h)
	}
	// Dense similarity is asked for only with an endpoint to ask.
	e.cfg.Store.EmbedAPI = config.EmbedOllama
	out, err = e.w.Admin(context.Background(), lite.OpMCPHub, nil)
	if err != nil || json.Unmarshal(out, &h) != nil || !h.Dense {
		t.Fatalf("with an embedding endpoint: %s %v", out, err)
	}
}
