package toolspec_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/toolspec"
)

// Every listed tool has both files; the schema is a closed JSON object schema
// titled with the tool's name, and the manual is one short paragraph under the
// tool's name.
func TestSpecs(t *testing.T) {
	names := toolspec.Names()
	for _, want := range []string{"safe_bash", "safe_read", "safe_write", "memory_store", "memory_search",
		"memory_get", "memory_feedback", "checkpoint_save", "checkpoint_restore", "checkpoint_list", "branch", "return"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not listed", want)
		}
	}
	if all := toolspec.All(); len(all) != len(names) {
		t.Fatalf("All has %d specs for %d names", len(all), len(names))
	}
	seen := map[string]bool{}
	for _, s := range toolspec.All() {
		t.Run(s.Name, func(t *testing.T) {
			if seen[s.Name] {
				t.Fatal("listed twice")
			}
			seen[s.Name] = true
			if len(s.Schema) == 0 || len(s.Doc) == 0 {
				t.Fatal("schema.json or TOOL.md missing")
			}
			var sc struct {
				Schema               string                     `json:"$schema"`
				Title                string                     `json:"title"`
				Description          string                     `json:"description"`
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			dec := json.NewDecoder(bytes.NewReader(s.Schema))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sc); err != nil {
				t.Fatalf("schema.json: %v", err)
			}
			if sc.Schema != "https://json-schema.org/draft/2020-12/schema" || sc.Title != s.Name || sc.Type != "object" {
				t.Errorf("schema header: %q %q %q", sc.Schema, sc.Title, sc.Type)
			}
			if sc.AdditionalProperties == nil || *sc.AdditionalProperties {
				t.Error("additionalProperties must be false")
			}
			if sc.Description == "" || len(sc.Description) > 120 {
				t.Errorf("description of %d bytes", len(sc.Description))
			}
			for _, r := range sc.Required {
				if _, ok := sc.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			for k, raw := range sc.Properties {
				var p struct {
					Description string `json:"description"`
				}
				if err := json.Unmarshal(raw, &p); err != nil || p.Description == "" {
					t.Errorf("property %q: no description (%v)", k, err)
				}
			}
			doc := string(s.Doc)
			if !strings.HasPrefix(doc, "# "+s.Name+"\n\n") {
				t.Errorf("TOOL.md does not start with its title: %q", doc[:min(len(doc), 40)])
			}
			body := strings.TrimSpace(strings.TrimPrefix(doc, "# "+s.Name))
			if strings.Contains(body, "\n\n") || len(body) > 700 {
				t.Errorf("TOOL.md is not one short paragraph (%d bytes)", len(body))
			}
		})
	}
	if _, ok := toolspec.Get("nope"); ok {
		t.Error("Get(nope) found a spec")
	}
}

// Every tool has a kind, and only tools do.
func TestKinds(t *testing.T) {
	for _, n := range toolspec.Names() {
		if toolspec.KindOf(n) == toolspec.Unknown {
			t.Errorf("%s has no kind", n)
		}
	}
	for _, c := range []struct {
		name string
		want toolspec.Kind
	}{{"safe_bash", toolspec.Sandboxed}, {"safe_write", toolspec.Sandboxed}, {"memory_store", toolspec.State},
		{"return", toolspec.State}, {"continue", toolspec.Unknown}, {"", toolspec.Unknown}} {
		if got := toolspec.KindOf(c.name); got != c.want {
			t.Errorf("KindOf(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}
