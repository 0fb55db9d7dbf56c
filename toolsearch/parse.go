package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// ErrNoName is a tool definition without a name.
var ErrNoName = errors.New("tool without a name")

// wireTool is the part of an MCP tool definition retrieval reads.
type wireTool struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Annotations struct {
		Title string `json:"title"`
	} `json:"annotations"`
	InputSchema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

// ParseDoc reads one tool definition of a tools/list result (as JSON) as
// server's document: the same reading for a live server and a frozen
// fixture, so that the benchmark measures what is served.
func ParseDoc(server string, raw json.RawMessage) (Doc, error) {
	var t wireTool
	if err := json.Unmarshal(raw, &t); err != nil {
		return Doc{}, fmt.Errorf("%s: a tool definition: %w", server, err)
	}
	if t.Name == "" {
		return Doc{}, fmt.Errorf("%s: %w", server, ErrNoName)
	}
	d := Doc{Server: server, Name: t.Name, Title: t.Title, Description: t.Description}
	if d.Title == "" {
		d.Title = t.Annotations.Title
	}
	for name, p := range t.InputSchema.Properties {
		d.Params = append(d.Params, Param{Name: name, Description: p.Description})
	}
	sort.Slice(d.Params, func(i, j int) bool { return d.Params[i].Name < d.Params[j].Name })
	return d, nil
}
