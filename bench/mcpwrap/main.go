// Command mcpwrap measures an MCP server over stdio, directly or through
// `contextd-proxy mcp wrap`: the latency of sequential tools/call requests and
// the throughput of small pipelined requests. The e2e benchmark runs it both
// ways, interleaved, in one run.
//
//	mcpwrap [-calls N] [-pipelined M] [-tool echo] -- COMMAND [ARGS...]
//
// It prints one JSON line: {"call_us": [...per call...], "pipelined": M,
// "pipelined_ms": T}.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpwrap:", err)
		os.Exit(1)
	}
}

type client struct {
	w  io.Writer
	r  *bufio.Reader
	id int
}

// request sends one request and reads lines until its answer (notifications
// and server requests in between are skipped).
func (c *client) request(method string, params any) (json.RawMessage, error) {
	c.id++
	if err := c.send(c.id, method, params); err != nil {
		return nil, err
	}
	return c.await(c.id)
}

func (c *client) send(id int, method string, params any) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	_, err = c.w.Write(append(b, '\n'))
	return err
}

func (c *client) await(id int) (json.RawMessage, error) {
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("waiting for answer %d: %w", id, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" {
			continue
		}
		if *m.ID != id {
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("answer %d: error %s", id, m.Error)
		}
		return m.Result, nil
	}
}

func run() error {
	calls := flag.Int("calls", 200, "sequential tools/call requests to time")
	pipelined := flag.Int("pipelined", 2000, "small requests (ping) sent without waiting, for throughput")
	tool := flag.String("tool", "echo", "tool to call with {\"message\": ...}")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		return fmt.Errorf("usage: mcpwrap [flags] -- COMMAND [ARGS...]")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c := &client{w: in, r: bufio.NewReaderSize(out, 1<<20)}
	if _, err := c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "contextd-bench", "version": "1"}}); err != nil {
		return err
	}
	if _, err := in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		return err
	}
	if _, err := c.request("tools/list", map[string]any{}); err != nil {
		return err
	}
	// Warm-up: the first calls pay for lazy initialisation on both sides.
	msg := strings.Repeat("x", 64)
	for range 10 {
		if _, err := c.request("tools/call", map[string]any{"name": *tool, "arguments": map[string]any{"message": msg}}); err != nil {
			return err
		}
	}
	res := struct {
		CallUS      []float64 `json:"call_us"`
		Pipelined   int       `json:"pipelined"`
		PipelinedMS float64   `json:"pipelined_ms"`
	}{Pipelined: *pipelined}
	for range *calls {
		t := time.Now()
		if _, err := c.request("tools/call", map[string]any{"name": *tool, "arguments": map[string]any{"message": msg}}); err != nil {
			return err
		}
		res.CallUS = append(res.CallUS, float64(time.Since(t).Microseconds()))
	}
	// Throughput: write every ping at once from one goroutine while this one
	// reads the answers.
	t := time.Now()
	first := c.id + 1
	errc := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(in, 64<<10)
		for i := range *pipelined {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": first + i, "method": "ping"})
			bw.Write(append(b, '\n'))
		}
		errc <- bw.Flush()
	}()
	// Answers may come in any order: count them.
	for seen := 0; seen < *pipelined; {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("pipelined answers: %d of %d: %w", seen, *pipelined, err)
		}
		var m struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID != nil && m.Method == "" && *m.ID >= first {
			seen++
		}
	}
	if err := <-errc; err != nil {
		return err
	}
	res.PipelinedMS = float64(time.Since(t).Microseconds()) / 1000
	in.Close()
	cmd.Wait()
	return json.NewEncoder(os.Stdout).Encode(res)
}
