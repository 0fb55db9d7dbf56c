package httpapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.json from the route table")

// The document is stable: a change to the API shows in review as a change
// of testdata/openapi.json.
func TestDocumentGolden(t *testing.T) {
	s, err := New(nil, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/openapi.json"
	if *update {
		if err := os.WriteFile(golden, append(s.Document(), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(s.Document(), '\n'), want) {
		t.Errorf("the document differs from %s: run go test ./daemon/httpapi -run TestDocumentGolden -update and review the diff", golden)
	}
}

// doc is the part of the document the tests read.
type doc struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Description string         `json:"description"`
		Contact     map[string]any `json:"contact"`
		License     map[string]any `json:"license"`
	} `json:"info"`
	Servers  []map[string]any                 `json:"servers"`
	Security []map[string][]string            `json:"security"`
	Tags     []struct{ Name string }          `json:"tags"`
	Paths    map[string]map[string]docOp      `json:"paths"`
	Comps    struct{ Schemas map[string]any } `json:"components"`
}

type docOp struct {
	OperationID string   `json:"operationId"`
	Summary     string   `json:"summary"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Parameters  []struct {
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	Responses map[string]any `json:"responses"`
}

func parseDoc(t *testing.T, s *Server) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(s.Document(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The route table, Echo's routes and the document's operations are the
// same set, each operation with its path parameters, and each has what
// the OpenAPI linters the e2e suite runs (redocly recommended-strict,
// spectral:oas) ask of it.
func TestRoutesAgree(t *testing.T) {
	s, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseDoc(t, s)
	var table, echoed, documented []string
	for _, r := range s.routes {
		table = append(table, r.method+" "+echoPath(r.path))
	}
	for _, r := range s.e.Routes() {
		echoed = append(echoed, r.Method+" "+r.Path)
	}
	declared := map[string]bool{}
	for _, tg := range d.Tags {
		declared[tg.Name] = true
	}
	ids := map[string]bool{}
	for path, ops := range d.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+echoPath(path))
			if op.OperationID == "" || op.Summary == "" || op.Description == "" || len(op.Tags) != 1 || !declared[op.Tags[0]] {
				t.Errorf("%s %s: id %q summary %q description %q tags %v (declared: %v)", method, path, op.OperationID, op.Summary, op.Description, op.Tags, declared)
			}
			if ids[op.OperationID] {
				t.Errorf("operationId %s twice", op.OperationID)
			}
			ids[op.OperationID] = true
			has4xx := false
			for st := range op.Responses {
				has4xx = has4xx || strings.HasPrefix(st, "4")
			}
			if !has4xx {
				t.Errorf("%s %s: no 4xx response", method, path)
			}
			var inPath []string
			for _, p := range op.Parameters {
				if p.In == "path" {
					inPath = append(inPath, p.Name)
				}
			}
			for _, seg := range strings.Split(path, "/") {
				if name, ok := strings.CutPrefix(seg, "{"); ok && !slices.Contains(inPath, strings.TrimSuffix(name, "}")) {
					t.Errorf("%s %s: path parameter %s not declared (have %v)", method, path, name, inPath)
				}
			}
		}
	}
	for _, l := range [][]string{table, echoed, documented} {
		slices.Sort(l)
	}
	if !slices.Equal(table, echoed) || !slices.Equal(table, documented) {
		t.Errorf("routes differ:\ntable    %v\necho     %v\ndocument %v", table, echoed, documented)
	}
	if d.OpenAPI != "3.1.0" || d.Info.Description == "" || d.Info.Contact == nil || d.Info.License["identifier"] == nil {
		t.Errorf("info: %+v (openapi %s)", d.Info, d.OpenAPI)
	}
	if len(d.Servers) != 1 || d.Servers[0]["url"] != "/" {
		t.Errorf("servers: %v", d.Servers)
	}
	if len(d.Security) != 2 || d.Security[0]["bearer"] == nil || len(d.Security[1]) != 0 {
		t.Errorf("security: %v", d.Security)
	}
	for _, st := range stateTools {
		if d.Comps.Schemas[schemaName(st.tool)] == nil {
			t.Errorf("no component %s for %s's input", schemaName(st.tool), st.tool)
		}
	}
	if _, ok := d.Paths["/v1/calls"]["post"].Responses["200"].(map[string]any)["content"].(map[string]any)["text/event-stream"]; !ok {
		t.Error("POST /v1/calls does not document its event stream")
	}
	if http.MethodPost != "POST" {
		t.Fatal("unreachable")
	}
}
