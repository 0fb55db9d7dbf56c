// Package toolplugin is the protocol between contextd and a tool plugin: the
// .proto, the code generated from it, the go-plugin handshake, and the
// daemon's client that starts a plugin and runs calls on it.
//
// Regenerate after editing toolplugin.proto (needs protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH; `make tools` installs the two plugins):
//
//	go generate ./wire/toolplugin
package toolplugin

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative toolplugin.proto
