package interceptspec_test

import (
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/mcp/interceptspec"
)

// The members of a table given as a rule's value are data; every other
// undecoded key under [mcp.intercept], a misspelt one, is not.
func TestIsDataKey(t *testing.T) {
	for _, tc := range []struct {
		key  toml.Key
		data bool
	}{
		{toml.Key{"rules", "set", "value", "depth"}, true},
		{toml.Key{"rules", "set", "value", "a", "b"}, true},
		{toml.Key{"rules", "when", "equals", "x"}, true},
		{toml.Key{"rules", "set", "value"}, false},
		{toml.Key{"rules", "set", "valeu", "depth"}, false},
		{toml.Key{"rules", "when", "matches", "x"}, false},
		{toml.Key{"rules", "verb"}, false},
		{toml.Key{"allow", "set", "value", "x"}, false},
		{toml.Key{"scrub_result"}, false},
	} {
		if got := interceptspec.IsDataKey(tc.key); got != tc.data {
			t.Errorf("IsDataKey(%s) = %v, want %v", tc.key, got, tc.data)
		}
	}
}

// Every built-in rule is on when nothing is written.
func TestDefault(t *testing.T) {
	d := interceptspec.Default()
	if !d.ScrubResults || !d.ScrubArguments || !d.Budget || !d.Pin || d.Allow != nil || d.Rules != nil {
		t.Errorf("Default() = %+v", d)
	}
	if interceptspec.Default() == d {
		t.Error("Default shares its value between calls")
	}
}
