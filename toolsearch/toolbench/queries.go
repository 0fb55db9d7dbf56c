package toolbench

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"

	"github.com/contextd/contextd/toolsearch"
)

//go:embed testdata/queries.jsonl
var queriesJSONL []byte

// Query is a task as an agent phrases it, with the tools that do it: any of
// Expect counts as found.
type Query struct {
	ID     string   `json:"id"`
	Q      string   `json:"q"`
	Expect []string `json:"expect"`
	// Kind is paraphrase, partial (some words shared), name (the agent
	// knows the tool's name) or cross (the server is named or implied).
	Kind string `json:"kind"`
	// Split is dev (what tuning may look at) or test (reported only).
	Split string `json:"split"`
	// Line is the line of the file the query was read from.
	Line int `json:"-"`
}

// Queries returns the query set committed with the benchmark.
func Queries() ([]Query, error) {
	qs, err := parseQueries(queriesJSONL)
	if err != nil {
		return nil, fmt.Errorf("testdata/queries.jsonl:%w", err)
	}
	return qs, nil
}

// LoadQueries reads a JSONL query file: an outside query set plugs into the
// benchmark with no code change.
func LoadQueries(path string) ([]Query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	qs, err := parseQueries(b)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return qs, nil
}

func parseQueries(b []byte) ([]Query, error) {
	var out []Query
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q Query
		if err := json.Unmarshal(line, &q); err != nil {
			return nil, fmt.Errorf("%d: %w", n, err)
		}
		if q.Q == "" || len(q.Expect) == 0 {
			return nil, fmt.Errorf("%d: %w", n, ErrIncomplete)
		}
		q.Line = n
		out = append(out, q)
	}
	return out, sc.Err()
}

// Split keeps the queries of one split; "all" or "" keeps every one.
func Split(qs []Query, split string) []Query {
	if split == "" || split == "all" {
		return qs
	}
	var out []Query
	for _, q := range qs {
		if q.Split == split {
			out = append(out, q)
		}
	}
	return out
}

// CheckQueries makes sure every tool the queries of file expect is among
// docs: a typo in an outside set would otherwise read as a miss.
func CheckQueries(file string, qs []Query, docs []toolsearch.Doc) error {
	have := make(map[string]bool, len(docs))
	for _, d := range docs {
		have[d.ID()] = true
	}
	for _, q := range qs {
		for _, e := range q.Expect {
			if !have[e] {
				return fmt.Errorf("%s:%d: %q: %w", file, q.Line, e, ErrUnknownTool)
			}
		}
	}
	return nil
}
