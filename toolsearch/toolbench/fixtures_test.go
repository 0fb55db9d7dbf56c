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
	checkDocs(t, servers)
}

// TestFixtures2 pins the second catalogue: seven servers, 107 tools, none
// named like a server of the first, since both are searched together.
func TestFixtures2(t *testing.T) {
	servers, err := Fixtures2()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"brave-search": 2, "firecrawl": 29, "google-maps": 7, "puppeteer": 7,
		"sentry": 9, "stripe": 22, "supabase": 31}
	first, err := Fixtures()
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	for _, s := range first {
		taken[s.Name] = true
	}
	for _, s := range servers {
		if n, ok := want[s.Name]; !ok || n != len(s.Tools) || taken[s.Name] {
			t.Errorf("%s: %d tools, want %d, and a name the first set lacks", s.Name, len(s.Tools), n)
		}
		if s.Package == "" || s.Version == "" || s.ProtocolVersion == "" {
			t.Errorf("%s: provenance missing: %+v", s.Name, s)
		}
	}
	if len(servers) != len(want) {
		t.Fatalf("%d servers, want %d", len(servers), len(want))
	}
	checkDocs(t, servers)
}

// checkDocs makes sure every tool of servers yields a document with a name
// and a description, under an id no other tool has.
func checkDocs(t *testing.T, servers []Server) {
	t.Helper()
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
