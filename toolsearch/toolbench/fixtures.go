// Package toolbench is the tool-search benchmark: frozen tools/list answers
// of public MCP servers, agent-phrased queries with the tools they expect,
// and the metrics that compare retrievals on them.
package toolbench

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/contextd/contextd/toolsearch"
)

//go:embed testdata/servers/*.json
var fixtures embed.FS

// Server is one frozen tools/list answer and where it came from.
type Server struct {
	Name            string            `json:"name"`
	Package         string            `json:"package"`
	Version         string            `json:"version"`
	ProtocolVersion string            `json:"protocolVersion"`
	Tools           []json.RawMessage `json:"tools"`
}

// Fixtures returns the servers frozen in the repository, by name.
func Fixtures() ([]Server, error) {
	sub, err := fs.Sub(fixtures, "testdata/servers")
	if err != nil {
		return nil, err
	}
	return load(sub)
}

// Load reads every *.json server file of dir: an outside catalogue plugs
// into the benchmark with no code change.
func Load(dir string) ([]Server, error) { return load(os.DirFS(dir)) }

func load(fsys fs.FS) ([]Server, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Server
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		var s Server
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if s.Name == "" {
			s.Name = strings.TrimSuffix(path.Base(n), ".json")
		}
		out = append(out, s)
	}
	return out, nil
}

// Docs turns the servers' tools into search documents.
func Docs(servers []Server) ([]toolsearch.Doc, error) {
	var docs []toolsearch.Doc
	for _, s := range servers {
		for _, raw := range s.Tools {
			d, err := toolsearch.ParseDoc(s.Name, raw)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}
