package cli_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

// unknownOption says whether Parse refused args because it does not know the option.
func unknownOption(tool string, args []string, name string) bool {
	_, err := cli.Parse(tool, args, cli.Stdin{})
	return err != nil && errors.Is(err, catalog.ErrUsage) && strings.Contains(err.Error(), "unknown option --"+name)
}

// The options ToolFlags and CommonFlags describe are the ones Parse takes, and a
// tool's own options set properties its schema.json has.
func TestFlagsMatchParse(t *testing.T) {
	for _, tool := range toolspec.Names() {
		flags := cli.ToolFlags(tool)
		if flags == nil {
			t.Errorf("%s: ToolFlags is nil for a listed tool", tool)
			continue
		}
		spec, _ := toolspec.Get(tool)
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(spec.Schema, &schema); err != nil {
			t.Fatalf("%s: schema: %v", tool, err)
		}
		// The check below must be able to fail: an invented option is refused.
		if !unknownOption(tool, []string{"--no-such-option"}, "no-such-option") {
			t.Fatalf("%s: --no-such-option was not refused as unknown", tool)
		}
		for _, f := range append(flags, cli.CommonFlags...) {
			args := []string{"--" + f.Name}
			if f.TakesValue {
				args = append(args, "1")
				if len(f.Values) > 0 {
					args[1] = f.Values[0]
				}
			}
			if unknownOption(tool, args, f.Name) {
				t.Errorf("%s: Parse does not know --%s", tool, f.Name)
			}
			if f.Key == "" {
				continue
			}
			p, ok := schema.Properties[f.Key]
			switch {
			case !ok:
				t.Errorf("%s: --%s sets %q, which schema.json does not have", tool, f.Name, f.Key)
			case f.Repeatable != (p.Type == "array"):
				t.Errorf("%s: --%s repeatable=%t but property %q has type %q", tool, f.Name, f.Repeatable, f.Key, p.Type)
			}
		}
	}
	if cli.ToolFlags("no_such_tool") != nil {
		t.Error("ToolFlags of an unknown tool is not nil")
	}
}

// Values of a common option are exactly what Parse accepts for it.
func TestCommonFlagValues(t *testing.T) {
	for _, f := range cli.CommonFlags {
		for _, v := range f.Values {
			if _, err := cli.Parse("safe_bash", []string{"--" + f.Name, v, "true"}, cli.Stdin{}); err != nil {
				t.Errorf("--%s %s refused: %v", f.Name, v, err)
			}
		}
		if len(f.Values) > 0 {
			_, err := cli.Parse("safe_bash", []string{"--" + f.Name, "not-a-listed-value", "true"}, cli.Stdin{})
			if !errors.Is(err, catalog.ErrUsage) {
				t.Errorf("--%s with an unlisted value: want a usage error, got %v", f.Name, err)
			}
		}
	}
}
