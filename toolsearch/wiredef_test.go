package toolsearch

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestWireDefinitions keeps the served definitions usable: schemas that
// parse and say what is required, descriptions short enough to be cheap
// that point from one tool to the other.
func TestWireDefinitions(t *testing.T) {
	type schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type    string `json:"type"`
			Minimum *int   `json:"minimum"`
			Maximum *int   `json:"maximum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	for _, c := range []struct {
		name, desc, other string
		raw               json.RawMessage
		props             map[string]string
		required          []string
	}{
		{SearchToolName, SearchToolDescription, CallToolName, SearchToolSchema,
			map[string]string{"query": "string", "k": "integer", "schema": "boolean"}, []string{"query"}},
		{CallToolName, CallToolDescription, SearchToolName, CallToolSchema,
			map[string]string{"name": "string", "arguments": "object"}, []string{"name"}},
	} {
		var s schema
		if err := json.Unmarshal(c.raw, &s); err != nil {
			t.Fatalf("%s: schema: %v", c.name, err)
		}
		if s.Type != "object" || !slices.Equal(s.Required, c.required) || len(s.Properties) != len(c.props) {
			t.Errorf("%s: schema %+v", c.name, s)
		}
		for p, typ := range c.props {
			if s.Properties[p].Type != typ {
				t.Errorf("%s.%s: type %q, want %q", c.name, p, s.Properties[p].Type, typ)
			}
		}
		if n := len(strings.Fields(c.desc)); n > 60 {
			t.Errorf("%s: description of %d words, want at most 60", c.name, n)
		}
		if !strings.Contains(c.desc, c.other) {
			t.Errorf("%s: description does not name %s", c.name, c.other)
		}
	}
	var s schema
	_ = json.Unmarshal(SearchToolSchema, &s)
	if k := s.Properties["k"]; k.Minimum == nil || *k.Minimum != 1 || k.Maximum == nil || *k.Maximum != 20 {
		t.Errorf("tool_search k bounds: %+v", k)
	}
}
