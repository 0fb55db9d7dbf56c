// Package toolsearch finds the MCP tool an agent means from a task phrased
// in its own words: exact and prefix name tiers, then field-weighted BM25
// with a reviewed table of the words agents use for the same operation.
package toolsearch

// Param is one input parameter of a tool.
type Param struct {
	Name        string
	Description string
}

// Doc is a tool as retrieval sees it.
type Doc struct {
	Server      string
	Name        string
	Title       string
	Description string
	Params      []Param
}

// ID is the tool's namespaced name, server.tool.
func (d Doc) ID() string { return d.Server + "." + d.Name }

// Hit is one search result, with why it matched.
type Hit struct {
	ID    string
	Score float64
	Why   []string
}
