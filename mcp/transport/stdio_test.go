package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestStdio(t *testing.T) {
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	c := NewStdio(inR, outW, &StdioOptions{MaxMessage: 100})
	ctx := readCtx(t)

	msgs := "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\n" + `{"x":"` + strings.Repeat("y", 200) + "\"}\n" + `{"jsonrpc":"2.0","id":1,"method":"b"}` + "\n"
	go func() { _, _ = inW.Write([]byte(msgs)) }()
	if m, err := c.Read(ctx); err != nil || string(m) != `{"jsonrpc":"2.0","method":"a"}` {
		t.Fatalf("first Read: %q %v", m, err)
	}
	if _, err := c.Read(ctx); !errors.Is(err, jsonrpc.ErrTooLarge) {
		t.Fatalf("oversized Read: %v", err)
	}
	if m, err := c.Read(ctx); err != nil || string(m) != `{"jsonrpc":"2.0","id":1,"method":"b"}` {
		t.Fatalf("Read after an oversized message: %q %v", m, err)
	}

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Read(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with nothing to read: %v", err)
	}

	if err := c.Write(ctx, []byte("{\"a\":\n1}")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := outR.Read(buf)
	if string(buf[:n]) != "{\"a\": 1}\n" {
		t.Errorf("wrote %q", buf[:n])
	}
	if err := c.Write(ctx, nil); !errors.Is(err, catalog.ErrBadInput) {
		t.Errorf("empty Write: %v", err)
	}

	// Close unblocks a waiting Read, and is idempotent.
	done := make(chan error)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	time.Sleep(10 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Read across Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := c.Write(ctx, []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	// Closing the writer told the peer: it reads the end of input.
	if n, err := outR.Read(buf); err != io.EOF {
		t.Errorf("peer read %d, %v after Close, want EOF", n, err)
	}
}

func TestStdioEOF(t *testing.T) {
	c := NewStdio(strings.NewReader("{\"a\":1}\n{\"b\":2}"), io.Discard, nil)
	ctx := readCtx(t)
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		if m, err := c.Read(ctx); err != nil || string(m) != want {
			t.Fatalf("Read: %q %v, want %s", m, err, want)
		}
	}
	for range 2 {
		if _, err := c.Read(ctx); err != io.EOF {
			t.Fatalf("Read at the end: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStdioReadError(t *testing.T) {
	boom := errors.New("boom")
	c := NewStdio(io.MultiReader(strings.NewReader("{}\n"), &failReader{boom}), io.Discard, nil)
	ctx := readCtx(t)
	if _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Read(ctx); !errors.Is(err, boom) || !errors.Is(err, catalog.ErrIO) {
			t.Fatalf("Read: %v", err)
		}
	}
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

// TestStdioProcess talks to a real MCP server launched as a process, the way
// the daemon launches one: this test binary re-executed as the Go SDK's stdio
// server.
func TestStdioProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONTEXTD_TEST_SDK_SERVER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := NewStdio(stdout, stdin, nil)
	session(t, c, "2025-06-18", true)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing stdin is how MCP's stdio transport asks a server to exit.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("server exit: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the server did not exit when its stdin closed")
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("CONTEXTD_TEST_SDK_SERVER") == "1" {
		err := newSDKServer().Run(context.Background(), &mcp.StdioTransport{})
		if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
