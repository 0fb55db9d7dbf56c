// Package toolbench is the tool-search benchmark: frozen tools/list answers
// of public MCP servers, agent-phrased queries with the tools they expect,
// and the metrics that compare retrievals on them.
package toolbench

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/contextd/contextd/toolsearch"
)

//go:embed testdata/servers/*.json testdata/servers2/*.json
var fixtures embed.FS

// Server is one frozen tools/list answer and where it came from.
type Server struct {
	Name            string            `json:"name"`
	Package         string            `json:"package"`
	Version         string            `json:"version"`
	ProtocolVersion string            `json:"protocolVersion"`
	Tools           []json.RawMessage `json:"tools"`
	// File is where the server was read from, for errors.
	File string `json:"-"`
}

// ErrNoTools is a catalogue directory without a server file, and ErrNoName
// a tool without a name.
var (
	ErrNoTools = errors.New("no *.json server file")
	ErrNoName  = toolsearch.ErrNoName
)

// Fixtures returns the servers frozen in the repository, by name.
func Fixtures() ([]Server, error) { return embedded("testdata/servers") }

// Fixtures2 returns the second frozen set, servers none of the first query
// set was written for; WideFixtures is both sets, the catalogue Queries2 is
// judged over, so every first-set tool is a distractor for it.
func Fixtures2() ([]Server, error) { return embedded("testdata/servers2") }

// WideFixtures returns Fixtures and then Fixtures2.
func WideFixtures() ([]Server, error) {
	a, err := Fixtures()
	if err != nil {
		return nil, err
	}
	b, err := Fixtures2()
	return append(a, b...), err
}

func embedded(dir string) ([]Server, error) {
	sub, err := fs.Sub(fixtures, dir)
	if err != nil {
		return nil, err
	}
	return load(sub, dir)
}

// Load reads every *.json server file of dir: an outside catalogue plugs
// into the benchmark with no code change.
func Load(dir string) ([]Server, error) {
	servers, err := load(os.DirFS(dir), dir)
	if err == nil && len(servers) == 0 {
		err = fmt.Errorf("%s: %w", dir, ErrNoTools)
	}
	return servers, err
}

// load reads the server files of fsys; dir names them in errors, which say
// file and line.
func load(fsys fs.FS, dir string) ([]Server, error) {
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
		file := path.Join(dir, n)
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, lineAt(b, err), err)
		}
		s.File = file
		for i, raw := range s.Tools {
			at := max(bytes.Index(b, raw), 0)
			var t tool
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("%s:%d: tool %d: %w", file, lineAt(b[:at], nil)+lineAt(raw, err)-1, i, err)
			}
			if t.Name == "" {
				return nil, fmt.Errorf("%s:%d: tool %d: %w", file, lineAt(b[:at], nil), i, ErrNoName)
			}
		}
		if s.Name == "" {
			s.Name = strings.TrimSuffix(path.Base(n), ".json")
		}
		out = append(out, s)
	}
	return out, nil
}

// tool is what load checks of each tool definition.
type tool struct {
	Name string `json:"name"`
}

// Docs turns the servers' tools into search documents.
func Docs(servers []Server) ([]toolsearch.Doc, error) {
	var docs []toolsearch.Doc
	for _, s := range servers {
		for i, raw := range s.Tools {
			d, err := toolsearch.ParseDoc(s.Name, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %d: %w", s.where(), i, err)
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

func (s Server) where() string {
	if s.File != "" {
		return s.File
	}
	return s.Name
}

// lineAt is the line of b where a JSON decoding error points, or, for
// another error or none, the line b ends on.
func lineAt(b []byte, err error) int {
	off := int64(len(b))
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	off = min(off, int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}
