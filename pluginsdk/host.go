package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-plugin"

	"github.com/contextd/contextd/wire/toolplugin"
)

// Host is the daemon's side of a call: what it lends the tool, acting on the
// call's session. Its methods fail once the call has returned.
type Host interface {
	// Scrub removes secrets from text with the daemon's rules.
	Scrub(ctx context.Context, text string) (string, error)
	// Log writes a line to the daemon's log, tagged with the tool and call.
	// level is one of debug, info, warn, error.
	Log(ctx context.Context, level, msg string, attrs map[string]string) error
	// MemorySearch returns the session's memories closest to query.
	MemorySearch(ctx context.Context, query string, limit int) ([]Memory, error)
	// MemoryStore keeps text as a memory and returns its id.
	MemoryStore(ctx context.Context, text string, tags []string) (string, error)
	// CheckpointSave keeps the tool's state and returns the checkpoint's id.
	CheckpointSave(ctx context.Context, name string, state json.RawMessage) (string, error)
	// CheckpointRestore brings a checkpoint back; level is "summary" or
	// "full".
	CheckpointRestore(ctx context.Context, id, level string) (Checkpoint, error)
}

// Memory is one memory of the session.
type Memory struct {
	ID    string
	Text  string
	Tags  []string
	Score float64
}

// Checkpoint is a restored checkpoint.
type Checkpoint struct {
	State   json.RawMessage
	Summary string
}

// hostDialer holds the connection to the daemon's ToolHost: one per broker
// id, dialled on first use, because a plugin that never asks pays nothing.
type hostDialer struct {
	broker *plugin.GRPCBroker
	mu     sync.Mutex
	conns  map[uint32]toolplugin.ToolHostClient
}

func (d *hostDialer) client(id uint32) (toolplugin.ToolHostClient, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.conns[id]; c != nil {
		return c, nil
	}
	conn, err := d.broker.Dial(id)
	if err != nil {
		return nil, fmt.Errorf("pluginsdk: reach the host: %w", err)
	}
	if d.conns == nil {
		d.conns = map[uint32]toolplugin.ToolHostClient{}
	}
	c := toolplugin.NewToolHostClient(conn)
	d.conns[id] = c
	return c, nil
}

// host is Host for one call.
type host struct {
	dial     *hostDialer
	brokerID uint32
	callID   string
}

func (h *host) Scrub(ctx context.Context, text string) (string, error) {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return "", err
	}
	r, err := c.Scrub(ctx, &toolplugin.ScrubRequest{CallId: h.callID, Text: []byte(text)})
	if err != nil {
		return "", fmt.Errorf("pluginsdk: scrub: %w", err)
	}
	return string(r.GetText()), nil
}

func (h *host) Log(ctx context.Context, level, msg string, attrs map[string]string) error {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return err
	}
	if _, err := c.Log(ctx, &toolplugin.LogRequest{CallId: h.callID, Level: level, Message: msg, Attrs: attrs}); err != nil {
		return fmt.Errorf("pluginsdk: log: %w", err)
	}
	return nil
}

func (h *host) MemorySearch(ctx context.Context, query string, limit int) ([]Memory, error) {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return nil, err
	}
	r, err := c.MemorySearch(ctx, &toolplugin.MemorySearchRequest{CallId: h.callID, Query: query, Limit: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("pluginsdk: memory search: %w", err)
	}
	ms := make([]Memory, 0, len(r.GetMemories()))
	for _, m := range r.GetMemories() {
		ms = append(ms, Memory{ID: m.GetId(), Text: m.GetText(), Tags: m.GetTags(), Score: m.GetScore()})
	}
	return ms, nil
}

func (h *host) MemoryStore(ctx context.Context, text string, tags []string) (string, error) {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return "", err
	}
	r, err := c.MemoryStore(ctx, &toolplugin.MemoryStoreRequest{CallId: h.callID, Text: text, Tags: tags})
	if err != nil {
		return "", fmt.Errorf("pluginsdk: memory store: %w", err)
	}
	return r.GetId(), nil
}

func (h *host) CheckpointSave(ctx context.Context, name string, state json.RawMessage) (string, error) {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return "", err
	}
	r, err := c.CheckpointSave(ctx, &toolplugin.CheckpointSaveRequest{CallId: h.callID, Name: name, StateJson: state})
	if err != nil {
		return "", fmt.Errorf("pluginsdk: checkpoint save: %w", err)
	}
	return r.GetId(), nil
}

func (h *host) CheckpointRestore(ctx context.Context, id, level string) (Checkpoint, error) {
	c, err := h.dial.client(h.brokerID)
	if err != nil {
		return Checkpoint{}, err
	}
	r, err := c.CheckpointRestore(ctx, &toolplugin.CheckpointRestoreRequest{CallId: h.callID, Id: id, Level: level})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("pluginsdk: checkpoint restore: %w", err)
	}
	return Checkpoint{State: r.GetStateJson(), Summary: r.GetSummary()}, nil
}
