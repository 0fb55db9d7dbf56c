// Package tools holds the example plugin tools, each in a directory of its
// own with its contextd-tool.toml; the package's tests start each one as
// contextd does and run calls on it.
//
// logscan-py's gRPC modules are generated from wire/toolplugin's .proto
// (needs protoc and grpc_python_plugin: scripts/deps.sh installs them):
//
//	go generate ./examples/tools
package tools

//go:generate protoc -I ../../wire/toolplugin --python_out=logscan-py --grpc_python_out=logscan-py --plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin toolplugin.proto
