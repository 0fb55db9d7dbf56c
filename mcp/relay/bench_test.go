package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
)

// The benchmarks compare the relay with a direct connection over the same
// kind of pipe (OS pipes, as between an agent and a stdio server), in one
// run, side by side. Run them with
//
//	go test -run '^$' -bench . -benchtime 3s ./mcp/relay

const benchCall = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"}}}`

// directServer connects a raw client straight to a real SDK server.
func directServer(b *testing.B) transport.Conn {
	r1, w1 := osPipe(b)
	r2, w2 := osPipe(b)
	srv := newTestServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Server.Run(ctx, &mcp.IOTransport{Reader: r1, Writer: w2})
	}()
	c := transport.NewStdio(r2, w1, nil)
	b.Cleanup(func() { cancel(); c.Close(); r1.Close(); w2.Close(); <-done })
	return c
}

// relayedServer connects a raw client to a real SDK server through Run.
func relayedServer(b *testing.B, opts *Options) transport.Conn {
	agent, clientSide := link(b)
	startRelay(b, clientSide, newTestServer().serve(b), opts)
	return agent
}

func benchHandshake(b *testing.B, c transport.Conn) {
	send(b, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`)
	recv(b, c)
	send(b, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// call makes one tools/call round trip.
func call(b *testing.B, c transport.Conn, id int) {
	ctx := context.Background()
	if err := c.Write(ctx, fmt.Appendf(nil, benchCall, id)); err != nil {
		b.Fatal(err)
	}
	m, err := c.Read(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(m), "hello, world") {
		b.Fatalf("answer %s", m)
	}
}

// BenchmarkToolsCall: one tools/call round trip to a real SDK server,
// directly and through the relay.
func BenchmarkToolsCall(b *testing.B) {
	for _, tc := range []struct {
		name string
		conn func(*testing.B) transport.Conn
	}{
		{"direct", directServer},
		{"relay", func(b *testing.B) transport.Conn { return relayedServer(b, nil) }},
		{"relay+observer", func(b *testing.B) transport.Conn {
			return relayedServer(b, &Options{Observer: &recorder{}, Handler: handlerFunc(forwardAll)})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := tc.conn(b)
			benchHandshake(b, c)
			b.ResetTimer()
			for i := range b.N {
				call(b, c, i+1)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}

func forwardAll(context.Context, *jsonrpc.Message) (Verdict, error) {
	return Verdict{Action: Forward}, nil
}

// BenchmarkToolsCallAdded alternates direct and relayed calls in the same
// loop, so both see the same machine load, and reports the difference: the
// latency the relay adds per call.
func BenchmarkToolsCallAdded(b *testing.B) {
	direct, relayed := directServer(b), relayedServer(b, nil)
	benchHandshake(b, direct)
	benchHandshake(b, relayed)
	var dt, rt time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		call(b, direct, i+1)
		t1 := time.Now()
		call(b, relayed, i+1)
		dt += t1.Sub(t0)
		rt += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(dt.Microseconds())/n, "direct-µs/call")
	b.ReportMetric(float64(rt.Microseconds())/n, "relay-µs/call")
	b.ReportMetric(float64((rt-dt).Microseconds())/n, "added-µs/call")
}

const benchNote = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":5,"total":10}}`

// BenchmarkSmallMessages: throughput of small notifications, one direction,
// directly over a pipe and through the relay (two pipes and the relay).
func BenchmarkSmallMessages(b *testing.B) {
	for _, relayed := range []bool{false, true} {
		name := "direct"
		if relayed {
			name = "relay"
		}
		b.Run(name, func(b *testing.B) {
			writer, reader := link(b)
			var out, in transport.Conn = writer, reader
			if relayed {
				clientSide, serverSide := transport.Conn(reader), transport.Conn(nil)
				far, near := link(b)
				serverSide, in = near, far
				startRelay(b, clientSide, serverSide, nil)
			}
			msg := []byte(benchNote)
			b.SetBytes(int64(len(msg) + 1))
			b.ResetTimer()
			errc := make(chan error, 1)
			go func() {
				ctx := context.Background()
				for range b.N {
					if err := out.Write(ctx, msg); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			ctx := context.Background()
			for range b.N {
				if _, err := in.Read(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
