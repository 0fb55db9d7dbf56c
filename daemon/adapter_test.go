package daemon

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProtobufOnlyInTheGRPCAdapter: the core works on its own types
// (call.go); the generated protobuf types of the public API appear in the
// gRPC adapter (grpc.go) and in no other file of the package.
func TestProtobufOnlyInTheGRPCAdapter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	protobuf := func(path string) bool {
		return path == "github.com/contextd/contextd/wire" || strings.HasPrefix(path, "google.golang.org/protobuf/")
	}
	checked, adapter := 0, false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case !protobuf(path):
			case f == "grpc.go":
				adapter = true
			default:
				t.Errorf("%s imports %s: only the gRPC adapter (grpc.go) converts to and from protobuf types", f, path)
			}
		}
	}
	if checked < 5 || !adapter {
		t.Fatalf("%d files read, the adapter's import of wire found: %v; the check would prove nothing", checked, adapter)
	}
}
