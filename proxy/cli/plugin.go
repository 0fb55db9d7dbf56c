package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/contextd/contextd/catalog"
)

// A plugin tool has no short form of its own: its command line is derived
// from the schema.json install laid out beside its symlink. Each top-level
// property of a simple type is an option (--KEY VALUE), typed by the schema;
// an array of them is an option given once per item. Anything else goes in
// --json, or as a JSON object on standard input (the argument "-"). The
// schema sits in the project, where an agent can write, so it is read as
// untrusted: a property that does not make a sound option is left to --json,
// and the daemon validates the input against the installed schema anyway.

// MaxSchema bounds a plugin tool's schema.json.
const MaxSchema = 1 << 20

// optionName is what a property's name must look like to be an option;
// compiled on first use, as most runs of the proxy are a built-in's.
var optionName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
})

// Plugin is a plugin tool's command line.
type Plugin struct {
	Tool        string
	Description string // the schema's own, when it has one
	// Options are the options the schema's properties make, required ones
	// first, then by name.
	Options []PluginOption
	flags   map[string]flagSpec
}

// PluginOption is one option of a plugin tool.
type PluginOption struct {
	Name        string // the property's name, and the option's
	Type        string // its JSON type, or the type of its items when Repeatable
	Required    bool
	Repeatable  bool
	Description string
}

// schemaProp is the part of a property's schema the parser reads.
type schemaProp struct {
	Type        any         `json:"type"`
	Items       *schemaProp `json:"items"`
	Description string      `json:"description"`
}

// simpleType is the one JSON type of a property ("null" aside: an optional
// value is simply left out), or "".
func (p *schemaProp) simpleType() string {
	switch t := p.Type.(type) {
	case string:
		return t
	case []any:
		var one string
		for _, v := range t {
			s, _ := v.(string)
			switch {
			case s == "null":
			case one != "" || s == "":
				return ""
			default:
				one = s
			}
		}
		return one
	}
	return ""
}

// converters turn an option's text into the JSON value of each type.
var converters = map[string]func(string) (any, error){
	"string": func(s string) (any, error) { return s, nil },
	"integer": func(s string) (any, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("needs a whole number, not %q", s)
		}
		return n, nil
	},
	"number": func(s string) (any, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("needs a number, not %q", s)
		}
		return f, nil
	},
	"boolean": func(s string) (any, error) {
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("is true or false, not %q", s)
	},
	"object": func(s string) (any, error) {
		t := strings.TrimLeft(s, " \t\r\n")
		if !strings.HasPrefix(t, "{") || !json.Valid([]byte(t)) {
			return nil, fmt.Errorf("needs a JSON object ({...})")
		}
		return json.RawMessage(t), nil
	},
}

// NewPlugin derives tool's command line from its schema.json. A schema
// that is not a JSON object of "type": "object" is an error wrapping
// catalog.ErrBadInput.
func NewPlugin(tool string, schema []byte) (*Plugin, error) {
	if len(schema) > MaxSchema {
		return nil, fmt.Errorf("%s: its schema.json is over %d bytes (run contextd-proxy install again): %w", tool, MaxSchema, catalog.ErrBadInput)
	}
	var s struct {
		Type        any                        `json:"type"`
		Description string                     `json:"description"`
		Properties  map[string]json.RawMessage `json:"properties"`
		Required    []any                      `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil || s.Type != "object" {
		return nil, fmt.Errorf("%s: its schema.json is not a JSON schema of an object (run contextd-proxy install again): %w", tool, catalog.ErrBadInput)
	}
	pl := &Plugin{Tool: tool, Description: strings.TrimSpace(s.Description), flags: map[string]flagSpec{}}
	for name, raw := range s.Properties {
		if !optionName().MatchString(name) || slices.ContainsFunc(CommonFlags, func(f Flag) bool { return f.Name == name }) || name == "h" {
			continue
		}
		var p schemaProp
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		opt := PluginOption{Name: name, Type: p.simpleType(), Description: strings.TrimSpace(p.Description), Required: slices.Contains(s.Required, any(name))}
		if opt.Type == "array" && p.Items != nil {
			opt.Type, opt.Repeatable = p.Items.simpleType(), true
		}
		conv, ok := converters[opt.Type]
		if !ok {
			continue
		}
		pl.flags[name] = flagSpec{key: name, conv: conv, isList: opt.Repeatable, isBool: opt.Type == "boolean" && !opt.Repeatable}
		pl.Options = append(pl.Options, opt)
	}
	slices.SortFunc(pl.Options, func(a, b PluginOption) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return pl, nil
}

// Usage is the tool's usage line.
func (pl *Plugin) Usage() string {
	var b strings.Builder
	b.WriteString(pl.Tool)
	for _, o := range pl.Options {
		b.WriteString(" ")
		w := "--" + o.Name
		if o.Type != "boolean" || o.Repeatable {
			w += " " + strings.ToUpper(o.Type)
		}
		switch {
		case o.Required:
			b.WriteString(w)
		case o.Repeatable:
			b.WriteString("[" + w + "]...")
		default:
			b.WriteString("[" + w + "]")
		}
	}
	fmt.Fprintf(&b, " | %s --json '{...}' | %s - < INPUT.json | %s --continue REF", pl.Tool, pl.Tool, pl.Tool)
	return b.String()
}

// Help is what --help prints: the tool's manual (its TOOL.md, else the
// schema's description), the usage line and each option.
func (pl *Plugin) Help(doc []byte) string {
	var b strings.Builder
	text := strings.TrimSpace(string(doc))
	if text == "" {
		text = pl.Description
	}
	if text != "" {
		b.WriteString(text + "\n")
	}
	fmt.Fprintf(&b, "usage: %s\n", pl.Usage())
	if len(pl.Options) > 0 {
		b.WriteString("options:\n")
	}
	for _, o := range pl.Options {
		what := o.Type
		if o.Required {
			what += ", required"
		}
		if o.Repeatable {
			what += ", repeatable"
		}
		fmt.Fprintf(&b, "  --%s (%s)", o.Name, what)
		if o.Description != "" {
			b.WriteString("  " + strings.Join(strings.Fields(o.Description), " "))
		}
		b.WriteString("\n")
	}
	b.WriteString("common: --format text|json, --max-tokens N, --continue REF, --help\n")
	return b.String()
}

// Parse parses args (without argv[0]) for the plugin tool.
func (pl *Plugin) Parse(args []string, stdin Stdin) (*Invocation, error) {
	p := &parser{tool: pl.Tool, flags: pl.flags, usage: pl.Usage(), args: args, inv: &Invocation{Tool: pl.Tool}, input: map[string]any{}}
	if err := p.scan(); err != nil {
		return nil, err
	}
	switch {
	case p.inv.Help:
		return p.inv, nil
	case p.inv.Continue != "":
		return p.continuation()
	case len(p.pos) == 1 && p.pos[0] == "-" && p.rawJSON == nil:
		return p.stdinJSON(stdin)
	case len(p.pos) > 0:
		return nil, p.fail("takes no arguments, only options (got %q)", p.pos[0])
	case p.rawJSON != nil:
		return p.jsonInput()
	}
	for _, o := range pl.Options {
		if _, ok := p.input[o.Name]; o.Required && !ok {
			return nil, p.fail("--%s is required", o.Name)
		}
	}
	b, err := json.Marshal(p.input)
	if err != nil {
		return nil, fmt.Errorf("%s: encode input: %v: %w", pl.Tool, err, catalog.ErrInternal)
	}
	p.inv.Input = b
	return p.inv, nil
}

// errNoStdin is stdinJSON's refusal of a terminal: nobody should be left
// typing JSON.
var errNoStdin = errors.New("the input is read from standard input, which is a terminal: pipe the JSON object in")

// stdinJSON is the invocation of "-": the whole input, a JSON object, read
// from standard input.
func (p *parser) stdinJSON(stdin Stdin) (*Invocation, error) {
	if len(p.input) > 0 {
		return nil, p.fail("- reads the whole input from standard input; give no tool options with it")
	}
	if stdin.R == nil || stdin.IsTerminal {
		return nil, p.fail("%v", errNoStdin)
	}
	s, err := readAll(p.tool, stdin.R)
	if err != nil {
		return nil, err
	}
	t := bytes.TrimSpace([]byte(s))
	if !json.Valid(t) || !bytes.HasPrefix(t, []byte("{")) {
		return nil, fmt.Errorf("%s: standard input is not a JSON object ({...}): %w", p.tool, catalog.ErrBadInput)
	}
	p.inv.Input = json.RawMessage(t)
	return p.inv, nil
}
