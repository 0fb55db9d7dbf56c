package toolplugin

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the version of toolplugin.proto a plugin speaks. It
// rises when a change would break a plugin built against the previous one;
// the daemon refuses a plugin that announces another.
const ProtocolVersion = 1

// PluginName is the one plugin a tool binary serves, in go-plugin's terms.
const PluginName = "tool"

// Handshake is contextd's own go-plugin handshake. The cookie only keeps a
// plugin binary from being run by hand by mistake (it then explains itself and
// exits); it is no security boundary, the sandbox is.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "CONTEXTD_TOOL_PLUGIN",
	MagicCookieValue: "a tool plugin of contextd: start it with `contextd tool install`, not by hand",
}

// Plugin joins the Tool service to go-plugin on both ends: the plugin side
// sets NewServer, the daemon side leaves it nil and dispenses a Remote.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// NewServer builds the plugin's Tool service; the broker reaches the
	// daemon's ToolHost.
	NewServer func(*plugin.GRPCBroker) ToolServer
}

// GRPCServer registers the plugin's Tool service.
func (p *Plugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	RegisterToolServer(s, p.NewServer(b))
	return nil
}

// GRPCClient returns the daemon's view of a started plugin.
func (p *Plugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Remote{Tool: NewToolClient(c), Broker: b}, nil
}

// Remote is a started plugin as the daemon holds it: its Tool service, and
// the broker on which the daemon serves ToolHost to it.
type Remote struct {
	Tool   ToolClient
	Broker *plugin.GRPCBroker
}

// ServeConfig is what a plugin hands plugin.Serve: the handshake and the Tool
// service over gRPC. pluginsdk.Serve uses it; a Go plugin need not.
func ServeConfig(server func(*plugin.GRPCBroker) ToolServer) *plugin.ServeConfig {
	return &plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &Plugin{NewServer: server}},
		GRPCServer:      plugin.DefaultGRPCServer,
	}
}
