package intercept_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/intercept"
)

const exampleConfig = `
scrub_results = true
scrub_arguments = false
budget = true
pin = true

[allow]
everything = ["echo", "get-*"]
"my server" = []

[[rules]]
name = "no-etc"
direction = "client->server"
method = "tools/call"
tool = "read_*"
action = "drop"
[[rules.when]]
path = "params.arguments.path"
matches = "^/etc/"

[[rules]]
name = "dry-run"
method = "tools/call"
tool = "deploy"
action = "modify"
delete = ["params.arguments.force"]
[[rules.set]]
path = "params.arguments.dry_run"
value = true

[[rules]]
name = "pass-logs"
direction = "s2c"
kind = ["notification"]
method = "notifications/*"
action = "forward"
[[rules.when]]
path = "params.level"
equals = "debug"
[[rules.when]]
path = "params.data"
exists = true
`

func TestParseConfig(t *testing.T) {
	c, err := intercept.Parse([]byte(exampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !c.ScrubResults || c.ScrubArguments || !c.Budget || !c.Pin {
		t.Errorf("switches: %+v", c)
	}
	if got := c.Allow["everything"]; len(got) != 2 || got[1] != "get-*" {
		t.Errorf("allow.everything = %v", got)
	}
	if got, ok := c.Allow["my server"]; !ok || len(got) != 0 {
		t.Errorf(`allow."my server" = %v, %v; want an empty list`, got, ok)
	}
	if len(c.Rules) != 3 || c.Rules[0].Name != "no-etc" || c.Rules[0].Direction != "client->server" ||
		c.Rules[0].When[0].Matches != "^/etc/" || c.Rules[1].Set[0].Value != true || c.Rules[2].Kind[0] != "notification" {
		t.Errorf("rules: %+v", c.Rules)
	}

	// No file at all: every built-in rule on.
	d, err := intercept.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.ScrubResults || !d.ScrubArguments || !d.Budget || !d.Pin || len(d.Rules) != 0 {
		t.Errorf("defaults: %+v", d)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, toml, want string
	}{
		{"not TOML", `rules = [`, "mcp.intercept"},
		{"unknown key", "scrub_result = true", "mcp.intercept.scrub_result"},
		{"unknown rule key", "[[rules]]\nname = \"a\"\naction = \"drop\"\nverb = 1", "mcp.intercept.rules.verb"},
		{"no name", "[[rules]]\naction = \"drop\"", "name is required"},
		{"duplicate name", "[[rules]]\nname = \"a\"\naction = \"drop\"\n[[rules]]\nname = \"a\"\naction = \"drop\"", "same name"},
		{"no action", "[[rules]]\nname = \"a\"", "action is required"},
		{"bad action", "[[rules]]\nname = \"a\"\naction = \"hold\"", `action "hold"`},
		{"modify without edits", "[[rules]]\nname = \"a\"\naction = \"modify\"", "needs set or delete"},
		{"edits without modify", "[[rules]]\nname = \"a\"\naction = \"drop\"\ndelete = [\"x\"]", "need action \"modify\""},
		{"bad direction", "[[rules]]\nname = \"a\"\naction = \"drop\"\ndirection = \"up\"", `direction "up"`},
		{"bad kind", "[[rules]]\nname = \"a\"\naction = \"drop\"\nkind = [\"reply\"]", `kind "reply"`},
		{"bad glob", "[[rules]]\nname = \"a\"\naction = \"drop\"\nmethod = 'x\\'", "method"},
		{"bad regex", "[[rules]]\nname = \"a\"\naction = \"drop\"\n[[rules.when]]\npath = \"x\"\nmatches = \"(\"", "matches"},
		{"bad path", "[[rules]]\nname = \"a\"\naction = \"drop\"\n[[rules.when]]\npath = \"x..y\"\nexists = true", "empty name"},
		{"empty condition", "[[rules]]\nname = \"a\"\naction = \"drop\"\n[[rules.when]]\npath = \"x\"", "give equals, matches or exists"},
		{"set without value", "[[rules]]\nname = \"a\"\naction = \"modify\"\n[[rules.set]]\npath = \"x\"", "value is required"},
		{"delete everything", "[[rules]]\nname = \"a\"\naction = \"modify\"\ndelete = [\"\"]", "whole message"},
		{"bad allow pattern", "[allow]\ns = ['x\\']", "mcp.intercept.allow.s"},
	} {
		_, err := intercept.Parse([]byte(tc.toml))
		if !errors.Is(err, catalog.ErrConfig) {
			t.Errorf("%s: error %v, want one wrapping catalog.ErrConfig", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
}
