package cli

import "sort"

// Flag describes one command-line option as Parse takes it. It exists for
// documentation and shell completion (packaging/gen), which must follow what
// Parse accepts rather than a copy of it.
type Flag struct {
	Name string // without the leading "--"
	// Key is the schema.json property the option sets ("" for the options
	// common to every tool, which are not part of a tool's input).
	Key string
	// TakesValue: the option is followed by a value (--name VALUE or
	// --name=VALUE); otherwise it is a switch.
	TakesValue bool
	// Repeatable: the option may be given several times (a list).
	Repeatable bool
	// Values lists the only values the option accepts, when Parse itself
	// knows them (the schema's enums are checked by the daemon).
	Values []string
}

// CommonFlags are the options every tool takes besides its own.
var CommonFlags = []Flag{
	{Name: "json", TakesValue: true},
	{Name: "format", TakesValue: true, Values: []string{"text", "json"}},
	{Name: "continue", TakesValue: true},
	{Name: "max-tokens", TakesValue: true},
	{Name: "help"},
}

// ToolFlags returns the options of tool's own (not CommonFlags), sorted by
// name; nil for a tool Parse does not know.
func ToolFlags(tool string) []Flag {
	specs, ok := toolFlags[tool]
	if !ok {
		return nil
	}
	out := make([]Flag, 0, len(specs))
	for name, s := range specs {
		out = append(out, Flag{
			Name:       name,
			Key:        s.key,
			TakesValue: !s.isBool && s.set == nil,
			Repeatable: s.isList,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
