// Package interceptspec declares the MCP firewall's configuration as plain data: [mcp.intercept]'s switches, per-server tool allowlists and user rules, as TOML decodes them; mcp/intercept compiles them.
package interceptspec

import "github.com/BurntSushi/toml"

// Table is the TOML table a Config is the content of in contextd's
// configuration file. Messages about the configuration name keys under it.
const Table = "mcp.intercept"

// Config is the intercept engine's configuration: the built-in rules'
// switches, the per-server tool allowlists, and the user's rules. In the
// configuration file it is the table [mcp.intercept]; intercept.Parse reads
// it alone, intercept.Check and intercept.New compile it.
// docs/mcp.md, "Intercept rules", documents every key with examples.
//
// The switches default to on (Default); a Config built by hand starts with
// them off, so build one from Default.
type Config struct {
	// ScrubResults scrubs secrets from the string values of every message the
	// server sends the client (results, errors, notifications, its own
	// requests), leaving member names and the envelope (jsonrpc, id, method)
	// alone. Key scrub_results; default true.
	ScrubResults bool `toml:"scrub_results"`
	// ScrubArguments scrubs secrets from the arguments of the client's
	// tools/call requests before they reach the server. Key scrub_arguments;
	// default true.
	ScrubArguments bool `toml:"scrub_arguments"`
	// Budget holds every message of the server to the token budget the
	// daemon's Budgeter gives: the text of tools/call and resources/read
	// results is cut, with a note on how to get the rest (images and audio
	// pass as they are); any other result, or one still over once its text
	// is cut, or an error over it, is replaced by an error naming the budget, a request
	// of the server's is refused, a notification dropped (tools/list
	// results excepted: the allowlist and pins judge them). Key budget;
	// default true.
	Budget bool `toml:"budget"`
	// Pin pins each tool's description and schemas on first sight and refuses
	// calls to a tool whose pinned hash changed until the user approves the
	// change (`contextd mcp approve SERVER TOOL`). Key pin; default true.
	Pin bool `toml:"pin"`
	// Allow maps a server's name to the only tools of it that may be listed and
	// called (patterns as for Rule.Tool). A server without an entry has every
	// tool allowed; an empty list allows none. Key allow.<server>; default
	// empty.
	Allow map[string][]string `toml:"allow"`
	// Rules are the user's rules, tried in order after the built-in ones; the
	// first that matches decides. Key [[mcp.intercept.rules]].
	Rules []Rule `toml:"rules"`
}

// Default returns the configuration in force when none is written: every
// built-in rule on, no allowlist, no user rule.
func Default() *Config {
	return &Config{ScrubResults: true, ScrubArguments: true, Budget: true, Pin: true}
}

// Match is what a rule (or the interactive hold) looks at. Every condition
// given must hold; an empty Match matches every message.
type Match struct {
	// Direction is "client->server", "server->client", or empty for both
	// (the short forms "c2s" and "s2c" are accepted too).
	Direction string `toml:"direction"`
	// Kind lists the kinds that match: "request", "notification",
	// "response", "error". Empty: all.
	Kind []string `toml:"kind"`
	// Method is a pattern the method must match: '*' any run of characters
	// ('/' included), '?' one character, '\' quotes the next. A response or
	// error is matched by the method of the request it answers (empty when
	// that request is unknown).
	Method string `toml:"method"`
	// Tool is a pattern for the tool name of a tools/call request (params.name)
	// and of the response to one. Set, it never matches another message.
	Tool string `toml:"tool"`
	// Server is a pattern for the wrapped server's name.
	Server string `toml:"server"`
	// When are conditions on values inside the message.
	When []Condition `toml:"when"`
}

// Condition tests the value at a JSON path of the message (the whole message,
// envelope included: "params.arguments.path", "result.content[0].text").
// Every test given must hold; at least one is required.
type Condition struct {
	// Path locates the value; see intercept.Path for the syntax.
	Path string `toml:"path"`
	// Equals holds when the value equals this TOML value, compared as JSON
	// values (1 equals 1.0; a table equals an object with the same members).
	Equals any `toml:"equals"`
	// Matches is a regular expression (RE2 syntax, unanchored) that a string
	// value must match; a value of another type is matched as its JSON text.
	Matches string `toml:"matches"`
	// Exists, when set, holds when the path is there (true) or is not (false).
	Exists *bool `toml:"exists"`
}

// Rule is one of the user's rules.
type Rule struct {
	// Name identifies the rule in records, errors and replies. Required and
	// unique.
	Name string `toml:"name"`
	Match
	// Action is "forward" (pass the message on; later rules are not tried),
	// "drop" (a dropped request is answered with a JSON-RPC error naming the
	// rule, so the sender does not wait forever) or "modify" (apply Set, then
	// Delete, and pass the result on).
	Action string `toml:"action"`
	// Set gives values to paths (modify only). A missing member is created,
	// with the objects that lead to it.
	Set []SetValue `toml:"set"`
	// Delete removes members or array elements (modify only); a path that is
	// not there is left alone.
	Delete []string `toml:"delete"`
}

// SetValue is one assignment of a modify rule.
type SetValue struct {
	Path  string `toml:"path"`
	Value any    `toml:"value"` // any TOML value; a table becomes an object
}

// IsDataKey reports whether a key the TOML decoder reports as undecoded,
// relative to [mcp.intercept], is a member of a table given as a value (a
// rule's set value or when equals): the decoder reports the keys of tables
// it decodes into an interface, but they are data, not unknown keys. A
// configuration that decodes Config as part of a larger file leaves them
// out of its unknown-key check.
func IsDataKey(k toml.Key) bool {
	return len(k) > 3 && k[0] == "rules" && (k[1] == "set" && k[2] == "value" || k[1] == "when" && k[2] == "equals")
}
