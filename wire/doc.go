// Package wire is contextd's gRPC protocol: the .proto and the code generated from it.
//
// Regenerate after editing contextd.proto (needs protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH; `make tools` installs the two plugins):
//
//	go generate ./wire
package wire

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative contextd.proto
