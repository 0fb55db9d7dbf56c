// Command probetool is a plugin for pluginsdk's tests: each input's "do"
// picks a behaviour the tests check from the daemon's side.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/contextd/contextd/pluginsdk"
)

type probe struct {
	// cancelled is closed once a "block" call has seen its context end.
	cancelled chan struct{}
}

func (p *probe) Execute(ctx context.Context, input json.RawMessage, out pluginsdk.Output) (pluginsdk.Result, error) {
	var in struct {
		Do   string `json:"do"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return pluginsdk.Result{}, err
	}
	switch in.Do {
	case "block":
		fmt.Fprintln(out, "blocking")
		<-ctx.Done()
		close(p.cancelled)
		return pluginsdk.Result{}, ctx.Err()
	case "sawcancel":
		select {
		case <-p.cancelled:
			return pluginsdk.Result{Data: "saw cancel"}, nil
		case <-ctx.Done():
			return pluginsdk.Result{}, ctx.Err()
		}
	case "deadline":
		d, ok := ctx.Deadline()
		return pluginsdk.Result{Data: map[string]any{"set": ok, "unix_nano": d.UnixNano()}}, nil
	case "panic":
		fmt.Fprintln(out, "about to panic")
		panic("probe panics")
	case "exit":
		fmt.Fprintln(out, "about to exit")
		os.Exit(3)
	case "fail":
		return pluginsdk.Result{ExitCode: 7}, errors.New("probe failed")
	case "host":
		return host(ctx, in.Text)
	}
	return pluginsdk.Result{}, fmt.Errorf("unknown do %q", in.Do)
}

// host uses every ToolHost method once and reports what came back.
func host(ctx context.Context, text string) (pluginsdk.Result, error) {
	c := pluginsdk.CallOf(ctx)
	h := c.Host
	scrubbed, err := h.Scrub(ctx, text)
	if err != nil {
		return pluginsdk.Result{}, err
	}
	if err := h.Log(ctx, "info", "probe logs", map[string]string{"k": "v"}); err != nil {
		return pluginsdk.Result{}, err
	}
	mid, err := h.MemoryStore(ctx, text, []string{"t"})
	if err != nil {
		return pluginsdk.Result{}, err
	}
	ms, err := h.MemorySearch(ctx, "q", 3)
	if err != nil {
		return pluginsdk.Result{}, err
	}
	cid, err := h.CheckpointSave(ctx, "n", json.RawMessage(`{"s":1}`))
	if err != nil {
		return pluginsdk.Result{}, err
	}
	cp, err := h.CheckpointRestore(ctx, cid, "full")
	if err != nil {
		return pluginsdk.Result{}, err
	}
	return pluginsdk.Result{Data: map[string]any{
		"session": c.Session, "workspace": c.Workspace, "scrubbed": scrubbed,
		"memory": mid, "found": len(ms), "checkpoint": cid, "restored": string(cp.State),
	}, Refs: []string{mid}}, nil
}

func main() {
	// A fixed deadline keeps a probe that loses its daemon from lingering.
	time.AfterFunc(5*time.Minute, func() { os.Exit(4) })
	pluginsdk.Serve(&probe{cancelled: make(chan struct{})})
}
