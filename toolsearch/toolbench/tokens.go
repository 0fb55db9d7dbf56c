package toolbench

import (
	"bytes"
	"encoding/json"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/toolsearch"
)

// ListTokens counts the cl100k tokens of tools as a tools/list result's
// tools array, compacted: the benchmark's one serialisation, so that
// numbers compare. A tool that is not valid JSON counts as its bytes.
func ListTokens(tools []json.RawMessage) int {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := json.Compact(&b, t); err != nil {
			b.Write(t)
		}
	}
	b.WriteByte(']')
	return budget.Default().Count(b.Bytes())
}

// SearchTools are tool_search and tool_call as a hub in search mode lists
// them, from the definitions it registers.
func SearchTools() []json.RawMessage {
	def := func(name, desc string, schema json.RawMessage) json.RawMessage {
		b, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}{name, desc, schema})
		return b
	}
	return []json.RawMessage{
		def(toolsearch.SearchToolName, toolsearch.SearchToolDescription, toolsearch.SearchToolSchema),
		def(toolsearch.CallToolName, toolsearch.CallToolDescription, toolsearch.CallToolSchema),
	}
}

// AllTools is every tool of servers, in order.
func AllTools(servers []Server) []json.RawMessage {
	var out []json.RawMessage
	for _, s := range servers {
		out = append(out, s.Tools...)
	}
	return out
}
