package daemon

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/daemon/state"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/wire/toolplugin"
)

// maxPluginLog bounds one line a plugin logs through ToolHost.
const maxPluginLog = 4096

// pluginHost is what a plugin call may ask of the daemon (ToolHost): the
// daemon's scrub, its log, and the memories and checkpoints of the call's
// project and session. Every answer is for the call's own; toolplugin
// routes each request by its call id. What a tool stores is scrubbed
// first: it may hold what the tool read.
type pluginHost struct {
	toolplugin.UnimplementedToolHostServer
	log     *slog.Logger
	scrub   func([]byte) []byte
	store   func(context.Context) (store.Store, error)
	project string
	session string
	tool    string
	// allow are the services the tool's approved manifest names in
	// permissions.host; scrub and log need none.
	allow []string
}

// may refuses a service the tool was not approved for.
func (h *pluginHost) may(service string) error {
	if slices.Contains(h.allow, service) {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "tool %s was not approved for %s: its manifest's permissions.host does not name it", h.tool, service)
}

// maxPluginAttrs bounds the attributes of one log line.
const maxPluginAttrs = 16

// bounded is s cut to n bytes.
func bounded(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// maxPluginRecord bounds a memory's or a checkpoint's text a tool stores.
const maxPluginRecord = 256 << 10

func (h *pluginHost) scrubbed(s string) string { return string(h.scrub([]byte(s))) }

// opened is the state store, or the gRPC error a tool sees without one.
func (h *pluginHost) opened(ctx context.Context) (store.Store, error) {
	st, err := h.store(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "the state store is unavailable: %v", err)
	}
	return st, nil
}

func (h *pluginHost) MemorySearch(ctx context.Context, req *toolplugin.MemorySearchRequest) (*toolplugin.MemorySearchReply, error) {
	if err := h.may(toolmanifest.HostMemoryRead); err != nil {
		return nil, err
	}
	st, err := h.opened(ctx)
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	if limit <= 0 || limit > 20 {
		limit = 5
	}
	hits, err := st.SearchMemories(ctx, store.MemoryQuery{Text: req.GetQuery(), Projects: []string{h.project, store.Global},
		Limit: limit, MinConfidence: state.ConfidenceFloor})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "memory search: %v", err)
	}
	rep := &toolplugin.MemorySearchReply{}
	for _, hit := range hits {
		m := hit.Memory
		text := m.Title
		if m.Description != "" {
			text += ": " + m.Description
		}
		if m.Content != "" {
			text += "\n" + m.Content
		}
		rep.Memories = append(rep.Memories, &toolplugin.Memory{Id: m.ID, Text: text, Tags: m.Tags, Score: hit.Score})
	}
	return rep, nil
}

func (h *pluginHost) MemoryStore(ctx context.Context, req *toolplugin.MemoryStoreRequest) (*toolplugin.MemoryStoreReply, error) {
	if err := h.may(toolmanifest.HostMemoryWrite); err != nil {
		return nil, err
	}
	text := strings.TrimSpace(req.GetText())
	if text == "" || len(text) > maxPluginRecord {
		return nil, status.Errorf(codes.InvalidArgument, "a memory's text must be 1 to %d bytes", maxPluginRecord)
	}
	st, err := h.opened(ctx)
	if err != nil {
		return nil, err
	}
	// Scrubbed whole before it is cut: a secret across the cut would no
	// longer match its rule.
	text = h.scrubbed(text)
	title, _, _ := strings.Cut(text, "\n")
	if len(title) > 120 {
		title = strings.ToValidUTF8(title[:120], "")
	}
	var tags []string
	for _, t := range req.GetTags() {
		if t = strings.ToLower(strings.TrimSpace(h.scrubbed(t))); t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	m := &store.Memory{Project: h.project, Title: h.scrubbed(title), Description: "stored by tool " + h.tool,
		Content: h.scrubbed(text), Outcome: store.Success, Tags: tags, Confidence: state.StartConfidence}
	if err := st.PutMemory(ctx, m); err != nil {
		return nil, status.Errorf(codes.Internal, "memory store: %v", err)
	}
	return &toolplugin.MemoryStoreReply{Id: m.ID}, nil
}

func (h *pluginHost) CheckpointSave(ctx context.Context, req *toolplugin.CheckpointSaveRequest) (*toolplugin.CheckpointSaveReply, error) {
	if err := h.may(toolmanifest.HostCheckpoints); err != nil {
		return nil, err
	}
	if len(req.GetStateJson()) > maxPluginRecord {
		return nil, status.Errorf(codes.InvalidArgument, "a checkpoint's state is at most %d bytes", maxPluginRecord)
	}
	st, err := h.opened(ctx)
	if err != nil {
		return nil, err
	}
	c := &store.Checkpoint{Project: h.project, Session: h.session, Name: h.scrubbed(req.GetName()),
		Summary: "state of tool " + h.tool, Full: h.scrubbed(string(req.GetStateJson()))}
	if err := st.PutCheckpoint(ctx, c); err != nil {
		return nil, status.Errorf(codes.Internal, "checkpoint save: %v", err)
	}
	return &toolplugin.CheckpointSaveReply{Id: c.ID}, nil
}

func (h *pluginHost) CheckpointRestore(ctx context.Context, req *toolplugin.CheckpointRestoreRequest) (*toolplugin.CheckpointRestoreReply, error) {
	if err := h.may(toolmanifest.HostCheckpoints); err != nil {
		return nil, err
	}
	st, err := h.opened(ctx)
	if err != nil {
		return nil, err
	}
	c, err := st.GetCheckpoint(ctx, req.GetId(), h.project)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "no checkpoint %q in this project", req.GetId())
	}
	rep := &toolplugin.CheckpointRestoreReply{Summary: c.Summary}
	if req.GetLevel() != "summary" {
		rep.StateJson = []byte(c.Full)
	}
	return rep, nil
}

func (h *pluginHost) Scrub(_ context.Context, req *toolplugin.ScrubRequest) (*toolplugin.ScrubReply, error) {
	return &toolplugin.ScrubReply{Text: h.scrub(req.GetText())}, nil
}

// Log writes the plugin's line to the daemon's log, scrubbed (a tool's own
// log may carry what it read) and bounded.
func (h *pluginHost) Log(_ context.Context, req *toolplugin.LogRequest) (*toolplugin.LogReply, error) {
	msg := req.GetMessage()
	if len(msg) > maxPluginLog {
		msg = msg[:maxPluginLog]
	}
	level := slog.LevelInfo
	switch strings.ToLower(req.GetLevel()) {
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	case "info", "":
	default:
		return nil, status.Errorf(codes.InvalidArgument, "level %q: one of debug, info, warn, error", req.GetLevel())
	}
	attrs := []any{}
	for k, v := range req.GetAttrs() {
		if len(attrs) >= 2*maxPluginAttrs {
			break
		}
		attrs = append(attrs, "plugin."+bounded(h.scrubbed(k), 64), bounded(h.scrubbed(v), 512))
	}
	h.log.Log(context.Background(), level, "plugin: "+string(h.scrub([]byte(msg))), attrs...)
	return &toolplugin.LogReply{}, nil
}
