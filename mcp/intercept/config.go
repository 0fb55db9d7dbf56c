package intercept

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// ConfigTable is the TOML table a Config is the content of in contextd's
// configuration file. Messages about the configuration name keys under it.
const ConfigTable = "mcp.intercept"

// Config is the intercept engine's configuration: the built-in rules'
// switches, the per-server tool allowlists, and the user's rules. In the
// configuration file it is the table [mcp.intercept]; Parse reads it alone.
// docs/mcp.md, "Intercept rules", documents every key with examples.
//
// The switches default to on (DefaultConfig); a Config built by hand starts
// with them off, so build one from DefaultConfig.
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

// DefaultConfig returns the configuration in force when none is written:
// every built-in rule on, no allowlist, no user rule.
func DefaultConfig() *Config {
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
	// Path locates the value; see Path for the syntax.
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

// Parse reads a Config from the TOML content of [mcp.intercept] (the table's
// keys at the top level), on top of DefaultConfig, and checks it. Unknown keys
// are errors, so that a typo does not silently leave a default in force.
// Every error wraps catalog.ErrConfig.
func Parse(data []byte) (*Config, error) {
	c := DefaultConfig()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", ConfigTable, err, catalog.ErrConfig)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, 0, len(und))
		for _, k := range und {
			if !IsDataKey(k) {
				keys = append(keys, ConfigTable+"."+k.String())
			}
		}
		if len(keys) > 0 {
			return nil, fmt.Errorf("unknown key(s) %s: %w", strings.Join(keys, ", "), catalog.ErrConfig)
		}
	}
	if _, err := c.compile(); err != nil {
		return nil, err
	}
	return c, nil
}

// IsDataKey reports whether a key the TOML decoder reports as undecoded,
// relative to [mcp.intercept], is a member of a table given as a value (a
// rule's set value or when equals): the decoder reports the keys of tables
// it decodes into an interface, but they are data, not unknown keys. A
// configuration that decodes Config as part of a larger file should leave
// them out of its unknown-key check.
func IsDataKey(k toml.Key) bool {
	return len(k) > 3 && k[0] == "rules" && (k[1] == "set" && k[2] == "value" || k[1] == "when" && k[2] == "equals")
}

// compiled forms, built once by New.

type compiledConfig struct {
	allow map[string][]*glob
	rules []*compiledRule
}

type compiledRule struct {
	name   string
	match  *matcher
	action ruleAction
	set    []compiledSet
	del    []Path
}

type ruleAction uint8

const (
	actForward ruleAction = iota
	actDrop
	actModify
)

type compiledSet struct {
	path  Path
	value []byte // JSON
}

type matcher struct {
	dir    jsonrpc.Direction // 0: both
	kinds  []jsonrpc.Kind
	method *glob
	tool   *glob
	server *glob
	when   []compiledCond
}

type compiledCond struct {
	src     string
	path    Path
	equals  any // canonical decoded JSON, or nil when not tested
	hasEq   bool
	matches *regexp.Regexp
	exists  *bool
}

func (c *Config) compile() (*compiledConfig, error) {
	cc := &compiledConfig{allow: map[string][]*glob{}}
	for server, tools := range c.Allow {
		gs := make([]*glob, 0, len(tools))
		for _, t := range tools {
			g, err := compileGlob(t)
			if err != nil {
				return nil, fmt.Errorf("%s: %v: %w", allowKey(server), err, catalog.ErrConfig)
			}
			gs = append(gs, g)
		}
		cc.allow[server] = gs
	}
	seen := map[string]bool{}
	for i := range c.Rules {
		r := &c.Rules[i]
		where := fmt.Sprintf("%s.rules[%d]", ConfigTable, i)
		if r.Name == "" {
			return nil, fmt.Errorf("%s: name is required: %w", where, catalog.ErrConfig)
		}
		where = fmt.Sprintf("%s (%q)", where, r.Name)
		if seen[r.Name] {
			return nil, fmt.Errorf("%s: another rule has the same name: %w", where, catalog.ErrConfig)
		}
		seen[r.Name] = true
		m, err := compileMatch(&r.Match)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %w", where, err, catalog.ErrConfig)
		}
		cr := &compiledRule{name: r.Name, match: m}
		switch r.Action {
		case "forward":
			cr.action = actForward
		case "drop":
			cr.action = actDrop
		case "modify":
			cr.action = actModify
			if len(r.Set) == 0 && len(r.Delete) == 0 {
				return nil, fmt.Errorf("%s: action \"modify\" needs set or delete: %w", where, catalog.ErrConfig)
			}
		case "":
			return nil, fmt.Errorf("%s: action is required (forward, drop or modify): %w", where, catalog.ErrConfig)
		default:
			return nil, fmt.Errorf("%s: action %q is not forward, drop or modify: %w", where, r.Action, catalog.ErrConfig)
		}
		if cr.action != actModify && (len(r.Set) > 0 || len(r.Delete) > 0) {
			return nil, fmt.Errorf("%s: set and delete need action \"modify\": %w", where, catalog.ErrConfig)
		}
		for j, s := range r.Set {
			p, err := ParsePath(s.Path)
			if err != nil {
				return nil, fmt.Errorf("%s.set[%d]: %v: %w", where, j, err, catalog.ErrConfig)
			}
			if s.Value == nil {
				return nil, fmt.Errorf("%s.set[%d]: value is required: %w", where, j, catalog.ErrConfig)
			}
			v, err := tomlToJSON(s.Value)
			if err != nil {
				return nil, fmt.Errorf("%s.set[%d]: value: %v: %w", where, j, err, catalog.ErrConfig)
			}
			cr.set = append(cr.set, compiledSet{path: p, value: v})
		}
		for j, d := range r.Delete {
			p, err := ParsePath(d)
			if err != nil {
				return nil, fmt.Errorf("%s.delete[%d]: %v: %w", where, j, err, catalog.ErrConfig)
			}
			if len(p) == 0 {
				return nil, fmt.Errorf("%s.delete[%d]: cannot delete the whole message: %w", where, j, catalog.ErrConfig)
			}
			cr.del = append(cr.del, p)
		}
		cc.rules = append(cc.rules, cr)
	}
	return cc, nil
}

// allowKey names the configuration key of server's allowlist.
func allowKey(server string) string {
	return ConfigTable + ".allow." + tomlKey(server)
}

// tomlKey writes a key as TOML needs it: bare when it can be, quoted if not.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, c := range k {
		if !(c == '-' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return string(quote(k))
		}
	}
	return k
}

// ParseDirection reads a direction as configuration writes it.
func ParseDirection(s string) (jsonrpc.Direction, error) {
	switch s {
	case "":
		return 0, nil
	case "client->server", "c2s":
		return jsonrpc.ClientToServer, nil
	case "server->client", "s2c":
		return jsonrpc.ServerToClient, nil
	}
	return 0, fmt.Errorf("direction %q is not client->server or server->client", s)
}

func compileMatch(m *Match) (*matcher, error) {
	var out matcher
	var err error
	if out.dir, err = ParseDirection(m.Direction); err != nil {
		return nil, err
	}
	for _, k := range m.Kind {
		switch k {
		case "request":
			out.kinds = append(out.kinds, jsonrpc.KindRequest)
		case "notification":
			out.kinds = append(out.kinds, jsonrpc.KindNotification)
		case "response":
			out.kinds = append(out.kinds, jsonrpc.KindResponse)
		case "error":
			out.kinds = append(out.kinds, jsonrpc.KindError)
		default:
			return nil, fmt.Errorf("kind %q is not request, notification, response or error", k)
		}
	}
	for _, g := range []struct {
		src string
		dst **glob
		key string
	}{{m.Method, &out.method, "method"}, {m.Tool, &out.tool, "tool"}, {m.Server, &out.server, "server"}} {
		if g.src == "" {
			continue
		}
		if *g.dst, err = compileGlob(g.src); err != nil {
			return nil, fmt.Errorf("%s: %v", g.key, err)
		}
	}
	for i, c := range m.When {
		cc := compiledCond{src: c.Path, exists: c.Exists}
		if cc.path, err = ParsePath(c.Path); err != nil {
			return nil, fmt.Errorf("when[%d]: %v", i, err)
		}
		if c.Equals != nil {
			v, err := tomlToJSON(c.Equals)
			if err != nil {
				return nil, fmt.Errorf("when[%d]: equals: %v", i, err)
			}
			cc.equals, cc.hasEq = canonical(v), true
		}
		if c.Matches != "" {
			if cc.matches, err = regexp.Compile(c.Matches); err != nil {
				return nil, fmt.Errorf("when[%d]: matches: %v", i, err)
			}
		}
		if !cc.hasEq && cc.matches == nil && cc.exists == nil {
			return nil, fmt.Errorf("when[%d]: give equals, matches or exists", i)
		}
		out.when = append(out.when, cc)
	}
	return &out, nil
}

// tomlToJSON turns a decoded TOML value into JSON.
func tomlToJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// canonical decodes JSON into a form compared with equalJSON: numbers as
// float64 so that 1 and 1.0 are equal. It returns nil for invalid JSON (the
// callers only pass JSON they produced or checked).
func canonical(b []byte) any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}
