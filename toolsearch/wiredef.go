package toolsearch

import "encoding/json"

// The two tools a hub in search mode serves in place of every server's
// tools. The MCP server registers these verbatim, and the benchmark counts
// their tokens, so what is measured is what is served.
const (
	SearchToolName = "tool_search"
	CallToolName   = "tool_call"

	SearchToolDescription = "Find the tool for a task among all connected MCP servers, whose tools are not listed " +
		"here. Describe the task in your own words, e.g. \"scale web to 5 replicas\" or \"file a bug about the " +
		"login page\". Each hit gives a tool name, what it does and why it matched. Then call it with tool_call " +
		"by that exact name."

	CallToolDescription = "Run a tool found with tool_search. Give its name exactly as tool_search returned it " +
		"(server.tool, e.g. github.create_issue) and its arguments as an object matching that tool's input schema " +
		"(tool_search with schema: true shows it). Returns the tool's own result."
)

// SearchToolSchema is tool_search's input schema.
var SearchToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"the task in your own words"},` +
	`"k":{"type":"integer","minimum":1,"maximum":20,"description":"how many tools to return (default 5)"},` +
	`"schema":{"type":"boolean","description":"include each hit's input schema"}},` +
	`"required":["query"],"additionalProperties":false}`)

// CallToolSchema is tool_call's input schema.
var CallToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"a name returned by tool_search, e.g. github.create_issue"},` +
	`"arguments":{"type":"object","description":"the tool's arguments, as its input schema says"}},` +
	`"required":["name"],"additionalProperties":false}`)
