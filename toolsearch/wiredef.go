package toolsearch

import "encoding/json"

// The two tools contextd-proxy mcp serves in search mode, defined here so
// that the benchmark counts the tokens of exactly what is served.
const (
	SearchToolName = "tool_search"
	CallToolName   = "tool_call"

	SearchToolDescription = "Find the tool for a task among the MCP servers contextd serves (their tools are not listed, to save context). " +
		"Describe the task in your own words; the answer lists the best tools, each with its name, what it does, its parameters and why it matched. " +
		"Then call the one you want with tool_call."
	CallToolDescription = "Call a tool that tool_search returned, by its name (e.g. github.create_issue), with its arguments. " +
		"The call goes through contextd's firewall: its result is scrubbed of secrets and cut to the token budget."
)

// SearchToolSchema is tool_search's input schema.
var SearchToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"the task, in your own words"},` +
	`"k":{"type":"integer","minimum":1,"maximum":20,"description":"how many tools to return (default 5)"},` +
	`"schema":{"type":"boolean","description":"include each tool's full input schema"}},` +
	`"required":["query"]}`)

// CallToolSchema is tool_call's input schema.
var CallToolSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","description":"a name tool_search returned, e.g. github.create_issue"},` +
	`"arguments":{"type":"object","description":"the tool's arguments"}},` +
	`"required":["name"]}`)
