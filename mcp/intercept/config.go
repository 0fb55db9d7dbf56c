package intercept

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/interceptspec"
	"github.com/contextd/contextd/mcp/jsonrpc"
)

// ConfigTable is the TOML table a Config is the content of in contextd's
// configuration file. Messages about the configuration name keys under it.
const ConfigTable = interceptspec.Table

// The configuration's types are plain data declared in interceptspec, so
// that the daemon's configuration can hold [mcp.intercept] without linking
// the engine; this package compiles them.
type (
	// Config is [mcp.intercept]: switches, allowlists and the user's rules.
	Config = interceptspec.Config
	// Match is what a rule, or the interactive hold, looks at.
	Match = interceptspec.Match
	// Condition tests the value at a path of the message.
	Condition = interceptspec.Condition
	// Rule is one of the user's rules.
	Rule = interceptspec.Rule
	// SetValue is one assignment of a modify rule.
	SetValue = interceptspec.SetValue
)

// DefaultConfig returns the configuration in force when none is written:
// every built-in rule on, no allowlist, no user rule.
func DefaultConfig() *Config { return interceptspec.Default() }

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
			if !interceptspec.IsDataKey(k) {
				keys = append(keys, ConfigTable+"."+k.String())
			}
		}
		if len(keys) > 0 {
			return nil, fmt.Errorf("unknown key(s) %s: %w", strings.Join(keys, ", "), catalog.ErrConfig)
		}
	}
	if err := Check(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Check compiles c as New would (rules, patterns, paths, regular
// expressions) and drops the result, so that a bad file is refused when it
// is loaded and not when the first server is wrapped. Errors name the key
// under [mcp.intercept] and wrap catalog.ErrConfig.
func Check(c *Config) error {
	_, err := compile(c)
	return err
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

func compile(c *Config) (*compiledConfig, error) {
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
