package toolbench

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFixtures pins what the frozen catalogue is: the nine servers the issue
// names hold 139 tools, every file says which package and version it froze,
// and every tool yields a document with a name and description.
func TestFixtures(t *testing.T) {
	servers, err := Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"everything": 13, "filesystem": 14, "github": 26, "gitlab": 9, "kubernetes": 23,
		"memory": 9, "notion": 24, "playwright": 25, "postgres": 1, "slack": 8}
	total := 0
	for _, s := range servers {
		if n, ok := want[s.Name]; !ok || n != len(s.Tools) {
			t.Errorf("%s: %d tools, want %d", s.Name, len(s.Tools), n)
		}
		if s.Package == "" || s.Version == "" || s.ProtocolVersion == "" {
			t.Errorf("%s: provenance missing: %+v", s.Name, s)
		}
		if s.Name != "everything" {
			total += len(s.Tools)
		}
	}
	if len(servers) != len(want) || total != 139 {
		t.Fatalf("%d servers, %d tools of the issue's nine; want %d and 139", len(servers), total, len(want))
	}
	docs, err := Docs(servers)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range docs {
		if d.Name == "" || strings.TrimSpace(d.Description) == "" {
			t.Errorf("%s: empty name or description", d.ID())
		}
		if seen[d.ID()] {
			t.Errorf("%s: twice", d.ID())
		}
		seen[d.ID()] = true
	}
}

func TestLoadRefusesBrokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := writeFile(dir+"/x.json", "{"); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	var syn *json.SyntaxError
	if !asErr(err, &syn) {
		t.Fatalf("Load of a broken file: %v, want a JSON syntax error", err)
	}
}
