package toolplugin

import (
	"context"
	"fmt"
	"sync"
)

// hostRouter is the one ToolHost a plugin reaches over the broker: each
// request names its call, and goes to the host of that call while it runs, so
// that a plugin shared by sessions acts on the right one's state.
type hostRouter struct {
	UnimplementedToolHostServer
	mu    sync.Mutex
	calls map[string]ToolHostServer
}

func (r *hostRouter) add(id string, h ToolHostServer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[id] = h
}

func (r *hostRouter) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.calls, id)
}

func (r *hostRouter) host(id string) (ToolHostServer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.calls[id]; h != nil {
		return h, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrCallEnded, id)
}

// route hands req to its call's host.
func route[Req interface{ GetCallId() string }, Rep any](r *hostRouter, ctx context.Context, req Req,
	method func(ToolHostServer, context.Context, Req) (Rep, error)) (Rep, error) {
	h, err := r.host(req.GetCallId())
	if err != nil {
		var none Rep
		return none, err
	}
	return method(h, ctx, req)
}

func (r *hostRouter) Scrub(ctx context.Context, req *ScrubRequest) (*ScrubReply, error) {
	return route(r, ctx, req, ToolHostServer.Scrub)
}

func (r *hostRouter) Log(ctx context.Context, req *LogRequest) (*LogReply, error) {
	return route(r, ctx, req, ToolHostServer.Log)
}

func (r *hostRouter) MemorySearch(ctx context.Context, req *MemorySearchRequest) (*MemorySearchReply, error) {
	return route(r, ctx, req, ToolHostServer.MemorySearch)
}

func (r *hostRouter) MemoryStore(ctx context.Context, req *MemoryStoreRequest) (*MemoryStoreReply, error) {
	return route(r, ctx, req, ToolHostServer.MemoryStore)
}

func (r *hostRouter) CheckpointSave(ctx context.Context, req *CheckpointSaveRequest) (*CheckpointSaveReply, error) {
	return route(r, ctx, req, ToolHostServer.CheckpointSave)
}

func (r *hostRouter) CheckpointRestore(ctx context.Context, req *CheckpointRestoreRequest) (*CheckpointRestoreReply, error) {
	return route(r, ctx, req, ToolHostServer.CheckpointRestore)
}
