package daemon

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/wire/toolplugin"
)

// maxPluginLog bounds one line a plugin logs through ToolHost.
const maxPluginLog = 4096

// pluginHost is what a plugin call may ask of the daemon (ToolHost): the
// daemon's scrub and its log. Every answer is for the call's session only;
// toolplugin routes each request by its call id.
type pluginHost struct {
	toolplugin.UnimplementedToolHostServer
	log   *slog.Logger
	scrub func([]byte) []byte
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
		attrs = append(attrs, "plugin."+k, string(h.scrub([]byte(v))))
	}
	h.log.Log(context.Background(), level, "plugin: "+string(h.scrub([]byte(msg))), attrs...)
	return &toolplugin.LogReply{}, nil
}
