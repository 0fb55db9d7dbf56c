package relay

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
)

// FuzzRelay: whatever bytes a client sends, the relay never panics, never
// passes on a message that does not classify, passes on every valid message
// byte for byte, and answers only with valid JSON-RPC.
func FuzzRelay(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"a\",\"method\":\"b\"}\n"))
	f.Add([]byte("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"id\":2}]\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\r\n\n"))
	f.Add([]byte("not json\n{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{}}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		agentR, clientW := io.Pipe() // relay -> agent
		clientR, agentW := io.Pipe() // agent -> relay
		serverR, relayW := io.Pipe() // relay -> server
		relayR, serverW := io.Pipe() // server -> relay
		client := transport.NewStdio(clientR, clientW, &transport.StdioOptions{MaxMessage: 1 << 16})
		server := transport.NewStdio(relayR, relayW, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Run(ctx, client, server, &Options{DrainTimeout: -1}) }()

		collect := func(r io.Reader) <-chan []string {
			out := make(chan []string, 1)
			go func() {
				var msgs []string
				rd := jsonrpc.NewReader(r, 0)
				for {
					m, err := rd.Read()
					if err != nil {
						out <- msgs
						return
					}
					msgs = append(msgs, string(m))
				}
			}()
			return out
		}
		toServer, toAgent := collect(serverR), collect(agentR)
		go func() {
			_, _ = agentW.Write(in)
			agentW.Close()
		}()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		serverW.Close()
		forwarded, replies := <-toServer, <-toAgent

		var valid []string
		rd := jsonrpc.NewReader(bytes.NewReader(in), 1<<16)
		for {
			m, err := rd.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				continue
			}
			if _, err := jsonrpc.Classify(m); err == nil {
				valid = append(valid, string(m))
			}
		}
		if len(forwarded) != len(valid) {
			t.Fatalf("forwarded %d messages, %d were valid", len(forwarded), len(valid))
		}
		for i, m := range forwarded {
			// The writer turns insignificant line breaks into spaces; nothing else changes.
			if want := string(bytes.Map(func(r rune) rune {
				if r == '\r' || r == '\n' {
					return ' '
				}
				return r
			}, []byte(valid[i]))); m != want {
				t.Fatalf("forwarded %q, want %q", m, want)
			}
		}
		for _, m := range replies {
			if info, err := jsonrpc.Classify([]byte(m)); err != nil || (info.Kind != jsonrpc.KindError && info.Kind != jsonrpc.KindBatch) {
				t.Fatalf("replied %q: %v %v", m, info.Kind, err)
			}
		}
	})
}
