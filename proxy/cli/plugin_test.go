package cli_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/cli"
)

const helloSchema = `{
  "type": "object",
  "description": "Greets someone.",
  "properties": {
    "name":   {"type": "string", "description": "who to greet"},
    "count":  {"type": "integer"},
    "ratio":  {"type": ["number", "null"]},
    "loud":   {"type": "boolean"},
    "tags":   {"type": "array", "items": {"type": "string"}},
    "ids":    {"type": "array", "items": {"type": "integer"}},
    "opts":   {"type": "object"},
    "json":   {"type": "string"},
    "bad name": {"type": "string"},
    "either": {"type": ["string", "integer"]},
    "nested": {"type": "array", "items": {"type": "array"}}
  },
  "required": ["name"]
}`

func TestPluginParse(t *testing.T) {
	pl, err := cli.NewPlugin("hello", []byte(helloSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		stdin *cli.Stdin
		input string // the input, as JSON, when parsing succeeds
		err   error  // else the error it wraps
	}{
		{"string", []string{"--name", "ann"}, nil, `{"name":"ann"}`, nil},
		{"equals", []string{"--name=a=b"}, nil, `{"name":"a=b"}`, nil},
		{"typed", []string{"--name", "x", "--count", "-3", "--ratio", "0.5", "--loud"}, nil, `{"count":-3,"loud":true,"name":"x","ratio":0.5}`, nil},
		{"bool value", []string{"--name", "x", "--loud=false"}, nil, `{"loud":false,"name":"x"}`, nil},
		{"repeated", []string{"--name", "x", "--tags", "a,b", "--tags", "c", "--ids", "1", "--ids", "2"}, nil, `{"ids":[1,2],"name":"x","tags":["a,b","c"]}`, nil},
		{"object", []string{"--name", "x", "--opts", `{"k":1}`}, nil, `{"name":"x","opts":{"k":1}}`, nil},
		{"common flags", []string{"--name", "x", "--format", "json", "--max-tokens", "50"}, nil, `{"name":"x"}`, nil},
		{"json", []string{"--json", `{"anything":[1]}`}, nil, `{"anything":[1]}`, nil},
		{"stdin", []string{"-"}, &cli.Stdin{R: strings.NewReader(" {\"name\":\"in\"}\n")}, `{"name":"in"}`, nil},

		{"required", []string{"--count", "1"}, nil, "", catalog.ErrUsage},
		{"not integer", []string{"--name", "x", "--count", "1.5"}, nil, "", catalog.ErrUsage},
		{"not number", []string{"--name", "x", "--ratio", "NaN"}, nil, "", catalog.ErrUsage},
		{"bad bool", []string{"--name", "x", "--loud=yes"}, nil, "", catalog.ErrUsage},
		{"bad object", []string{"--name", "x", "--opts", "[1]"}, nil, "", catalog.ErrUsage},
		{"twice", []string{"--name", "x", "--name", "y"}, nil, "", catalog.ErrUsage},
		{"unknown", []string{"--name", "x", "--nope", "1"}, nil, "", catalog.ErrUsage},
		{"multi-typed is not an option", []string{"--either", "1"}, nil, "", catalog.ErrUsage},
		{"array of arrays is not an option", []string{"--nested", "1"}, nil, "", catalog.ErrUsage},
		{"positional", []string{"ann"}, nil, "", catalog.ErrUsage},
		{"json and options", []string{"--json", `{}`, "--name", "x"}, nil, "", catalog.ErrUsage},
		{"json not object", []string{"--json", `[1]`}, nil, "", catalog.ErrBadInput},
		{"stdin and options", []string{"-", "--name", "x"}, &cli.Stdin{R: strings.NewReader("{}")}, "", catalog.ErrUsage},
		{"stdin terminal", []string{"-"}, &cli.Stdin{R: strings.NewReader("{}"), IsTerminal: true}, "", catalog.ErrUsage},
		{"stdin not object", []string{"-"}, &cli.Stdin{R: strings.NewReader(`"x"`)}, "", catalog.ErrBadInput},
		{"stdin not UTF-8", []string{"-"}, &cli.Stdin{R: strings.NewReader("{\"a\":\"\xff\"}")}, "", catalog.ErrBadInput},
		{"bad format", []string{"--name", "x", "--format", "xml"}, nil, "", catalog.ErrUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdin cli.Stdin
			if tt.stdin != nil {
				stdin = *tt.stdin
			}
			inv, err := pl.Parse(tt.args, stdin)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("%q: %v, want %v", tt.args, err, tt.err)
				}
				if errors.Is(err, catalog.ErrUsage) && !strings.Contains(err.Error(), "usage: hello --name STRING") {
					t.Errorf("%q: %v lacks the usage line", tt.args, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.args, err)
			}
			if string(inv.Input) != tt.input || inv.Tool != "hello" {
				t.Errorf("%q: input %s (tool %q), want %s", tt.args, inv.Input, inv.Tool, tt.input)
			}
		})
	}
}

// The common flags are the built-ins' own: the same values, the same checks.
func TestPluginCommonFlags(t *testing.T) {
	pl, err := cli.NewPlugin("p", []byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := pl.Parse([]string{"--continue", "c123", "--format=json", "--max-tokens", "7"}, cli.Stdin{})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Continue != "c123" || inv.Format != cli.JSON || inv.MaxTokens != 7 || inv.Input != nil {
		t.Errorf("got %+v", inv)
	}
	if inv, err := pl.Parse(nil, cli.Stdin{}); err != nil || string(inv.Input) != "{}" {
		t.Errorf("no arguments: %v %s, want the empty object", err, inv.Input)
	}
	for _, args := range [][]string{{"--continue", "c", "--json", "{}"}, {"--max-tokens", "0"}, {"-x"}} {
		if _, err := pl.Parse(args, cli.Stdin{}); !errors.Is(err, catalog.ErrUsage) {
			t.Errorf("%q: %v, want ErrUsage", args, err)
		}
	}
	if inv, err := pl.Parse([]string{"--bogus", "-h"}, cli.Stdin{}); err == nil || inv != nil {
		t.Errorf("an unknown option before -h: %+v %v, want the error", inv, err)
	}
	if inv, err := pl.Parse([]string{"-h", "--bogus"}, cli.Stdin{}); err != nil || !inv.Help {
		t.Errorf("-h: %+v %v", inv, err)
	}
}

func TestNewPluginRefuses(t *testing.T) {
	for _, schema := range []string{``, `[]`, `{"type":"string"}`, `{"properties":{}}`, `{"type":"object","properties":[]}`, `{"type":"object"}` + strings.Repeat(" ", cli.MaxSchema)} {
		if _, err := cli.NewPlugin("p", []byte(schema)); !errors.Is(err, catalog.ErrBadInput) {
			t.Errorf("%.40q: %v, want ErrBadInput", schema, err)
		}
	}
}

func TestPluginHelp(t *testing.T) {
	pl, err := cli.NewPlugin("hello", []byte(helloSchema))
	if err != nil {
		t.Fatal(err)
	}
	help := pl.Help(nil)
	for _, want := range []string{
		"Greets someone.\n",
		"usage: hello --name STRING [--count INTEGER] [--ids INTEGER]... [--loud] [--opts OBJECT] [--ratio NUMBER] [--tags STRING]... | hello --json",
		"  --name (string, required)  who to greet\n",
		"  --tags (string, repeatable)\n",
		"--continue REF",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	for _, absent := range []string{"--json (", "bad name", "--either", "--nested"} {
		if strings.Contains(help, absent) {
			t.Errorf("help offers %q:\n%s", absent, help)
		}
	}
	if got := pl.Help([]byte("# hello\nThe manual.\n")); !strings.HasPrefix(got, "# hello\nThe manual.\nusage: ") {
		t.Errorf("help with TOOL.md starts %q", got[:40])
	}
}

// FuzzPluginParse: a schema and a command line, both untrusted, never make
// the parser panic, and what it accepts is a JSON object input (or a
// continuation, or help); what it refuses is a usage or input error.
func FuzzPluginParse(f *testing.F) {
	f.Add([]byte(helloSchema), "--name\x00ann\x00--tags\x00a", "")
	f.Add([]byte(helloSchema), "-", `{"a":1}`)
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":"number"}}}`), "--n\x001e400", "")
	f.Add([]byte(`{"type":"object","properties":{"b":{"type":["boolean","null"]}},"required":["b",1]}`), "--b=true\x00--b", "")
	f.Add([]byte(`{"type":"object","properties":{"o":{"type":"array","items":{"type":"object"}}}}`), "--o\x00{}\x00--o\x00{\"x\":[]}", "")
	f.Fuzz(func(t *testing.T, schema []byte, argv, stdin string) {
		pl, err := cli.NewPlugin("fz", schema)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("schema refused with %v", err)
			}
			return
		}
		_ = pl.Help(nil)
		var args []string
		if argv != "" {
			args = strings.Split(argv, "\x00")
		}
		inv, err := pl.Parse(args, cli.Stdin{R: strings.NewReader(stdin)})
		if err != nil {
			if !errors.Is(err, catalog.ErrUsage) && !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("%q refused with %v", args, err)
			}
			return
		}
		if inv.Help || inv.Continue != "" {
			return
		}
		var obj map[string]any
		if json.Unmarshal(inv.Input, &obj) != nil || obj == nil {
			t.Fatalf("%q: input %q is not a JSON object", args, inv.Input)
		}
	})
}
