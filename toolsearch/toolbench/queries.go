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

var (
	//go:embed testdata/queries.jsonl
	queriesJSONL []byte
	//go:embed testdata/queries2.jsonl
	queries2JSONL []byte
	//go:embed testdata/queries3.jsonl
	queries3JSONL []byte
	//go:embed testdata/queries4.jsonl
	queries4JSONL []byte
)

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
func Queries() ([]Query, error) { return embeddedQueries("testdata/queries.jsonl", queriesJSONL) }

// Queries2 returns the second query set, written after the concept table
// against WideFixtures, with splits dev2 and test2: a check of how the
// tuning on the first set carries to tasks and servers it never saw.
func Queries2() ([]Query, error) { return embeddedQueries("testdata/queries2.jsonl", queries2JSONL) }

// Queries3 returns the third query set, over WideFixtures, written before
// any tuning that followed it and held out whole (split test3): nothing is
// tuned on it, so it measures how the index carries to tasks it never saw.
func Queries3() ([]Query, error) { return embeddedQueries("testdata/queries3.jsonl", queries3JSONL) }

// Queries4 returns the fourth query set, over WideFixtures, written by a
// hand that never read the index's code nor the other sets and held out
// whole (split test4): a second, independent measure of how the index
// carries to tasks phrased by someone else.
func Queries4() ([]Query, error) { return embeddedQueries("testdata/queries4.jsonl", queries4JSONL) }

func embeddedQueries(file string, b []byte) ([]Query, error) {
	qs, err := parseQueries(b)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", file, err)
	}
	return qs, nil
}

// Set is a query set and the catalogue it is judged over.
type Set struct {
	// Name says which files: the query file over the fixture directories.
	Name string
	// File is the query file, for errors.
	File string
	// Servers and Queries load the catalogue and the tasks.
	Servers func() ([]Server, error)
	Queries func() ([]Query, error)
	// Dev and Test are the names the set gives its two splits; a set held
	// out whole has no Dev.
	Dev, Test string
}

// Sets are the committed benchmarks: the first query set over the first
// catalogue, and the second, third and fourth over both catalogues.
func Sets() []Set {
	return []Set{
		{"queries.jsonl over servers", "testdata/queries.jsonl", Fixtures, Queries, "dev", "test"},
		{"queries2.jsonl over servers+servers2", "testdata/queries2.jsonl", WideFixtures, Queries2, "dev2", "test2"},
		{"queries3.jsonl over servers+servers2", "testdata/queries3.jsonl", WideFixtures, Queries3, "", "test3"},
		{"queries4.jsonl over servers+servers2", "testdata/queries4.jsonl", WideFixtures, Queries4, "", "test4"},
	}
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

// Splits are the names of set's splits to report: all, then its own.
func (set Set) Splits() []string {
	out := []string{"all"}
	for _, s := range []string{set.Dev, set.Test} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
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
