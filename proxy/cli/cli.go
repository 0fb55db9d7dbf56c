// Package cli parses a tool's command line (the contract in docs/cli.md) into the
// JSON input the daemon takes: the natural short form of each tool, or --json.
package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
)

// Format is how the proxy prints a result.
type Format int

const (
	Text Format = iota // the data, then one line on how to continue if truncated
	JSON               // the whole response envelope
)

// Invocation is a parsed tool command line.
type Invocation struct {
	Tool     string
	Input    json.RawMessage // the tool's input, valid JSON (nil with Continue)
	Format   Format
	Continue string // continuation reference, instead of running the tool
	// MaxTokens asks for a smaller response budget than the configured one
	// (--max-tokens); 0: the configured one.
	MaxTokens int
	Help      bool // --help: print the tool's TOOL.md and usage
}

// Stdin is the tool's standard input, read only by forms that take content from
// it. IsTerminal keeps a tool from waiting on a person's keyboard.
type Stdin struct {
	R          io.Reader
	IsTerminal bool
}

// MaxStdin bounds content read from standard input.
const MaxStdin = 64 << 20

// flagSpec describes one tool flag: its JSON key and its kind (a string value by
// default).
type flagSpec struct {
	key    string
	isInt  bool
	isBool bool // takes no value: present means true
	isList bool // a string value that may be repeated (and comma-separated): a JSON array
	// set, when not nil, makes a flag that takes no value and sets key to it
	// (--global is "scope":"global"); two such flags for one key must agree.
	set any
	// conv, when not nil, turns the value into its JSON value (a plugin
	// tool's flags, typed by its schema): a list then takes one item per
	// flag, and a switch may be given a value (--verbose=false).
	conv func(string) (any, error)
}

// toolFlags are each tool's own flags; --json, --format, --continue and --help
// are common to all.
var toolFlags = map[string]map[string]flagSpec{
	"safe_bash":  {"timeout": {key: "timeout", isInt: true}, "cwd": {key: "cwd"}, "network": {key: "network", isBool: true}},
	"safe_read":  {"offset": {key: "offset", isInt: true}, "limit": {key: "limit", isInt: true}},
	"safe_write": {"content": {key: "content"}},

	"memory_search": {"limit": {key: "limit", isInt: true}},
	"memory_get":    {},
	"memory_store": {"title": {key: "title"}, "description": {key: "description"}, "content": {key: "content"},
		"outcome": {key: "outcome"}, "tag": {key: "tags", isList: true}, "global": {key: "scope", set: "global"}},
	"memory_feedback":    {"helpful": {key: "helpful", set: true}, "unhelpful": {key: "helpful", set: false}},
	"checkpoint_save":    {"summary": {key: "summary"}, "name": {key: "name"}, "context": {key: "context"}},
	"checkpoint_restore": {"level": {key: "level"}, "latest": {key: "latest", isBool: true}},
	"checkpoint_list":    {"limit": {key: "limit", isInt: true}},
	"branch":             {"budget": {key: "budget", isInt: true}},
	"return":             {"id": {key: "id"}},
}

// argvTools are the tools whose positional arguments are a command: options
// come before it (safe_bash ls -la), except as optionsAfter in Parse allows.
var argvTools = map[string]bool{"safe_bash": true}

// isCommandLine says whether s is more than one word to bash: it holds a bash
// metacharacter (blank, newline, or one of |&;()<>), so it was written as a
// whole command line ('cat build.log'), not as a program's name.
func isCommandLine(s string) bool {
	return strings.ContainsAny(s, " \t\n|&;()<>")
}

// onlyOptions says whether rest is not empty and every argument of it is one
// of the tool's long options or a common one (--name or --name=VALUE), or the
// value that follows an option taking one. After a command line given as one
// argument, such arguments are meant for the tool (safe_bash 'cat build.log'
// --format json); anything else keeps them all the command's.
func onlyOptions(flags map[string]flagSpec, rest []string) bool {
	if len(rest) == 0 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if !strings.HasPrefix(rest[i], "--") {
			return false
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(rest[i], "-"), "=") // as Parse reads it
		takesValue := false
		if s, ok := flags[name]; ok {
			takesValue = !s.isBool && s.set == nil
		} else if j := slices.IndexFunc(CommonFlags, func(f Flag) bool { return f.Name == name }); j >= 0 {
			takesValue = CommonFlags[j].TakesValue
		} else {
			return false // "--", or an option contextd does not know
		}
		if takesValue && !hasVal {
			i++ // its value, whatever it looks like (a missing one is Parse's error)
		}
	}
	return true
}

// Usage is the short usage line of each tool.
var Usage = map[string]string{
	"safe_bash":  "safe_bash [--timeout SECONDS] [--cwd DIR] [--network] [--] COMMAND...   (or: safe_bash < script)",
	"safe_read":  "safe_read PATH [--offset LINE] [--limit LINES]",
	"safe_write": "safe_write PATH < CONTENT   |   safe_write PATH --content TEXT",

	"memory_search": "memory_search WORDS OF THE QUERY... [--limit N]",
	"memory_get":    "memory_get ID",
	"memory_store": "memory_store --title T --description D --outcome success|failure [--tag TAG]... [--global]" +
		" < CONTENT   (or --content TEXT)",
	"memory_feedback":    "memory_feedback ID --helpful|--unhelpful",
	"checkpoint_save":    "checkpoint_save --summary S [--name N] [--context C] [< FULL]",
	"checkpoint_restore": "checkpoint_restore [ID | --latest] [--level summary|context|full]",
	"checkpoint_list":    "checkpoint_list [--limit N]",
	"branch":             "branch DESCRIPTION... [--budget TOKENS]",
	"return":             "return SUMMARY... [--id BRANCH]   (or: return < summary)",
}

func usageErr(tool, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if u, ok := Usage[tool]; ok {
		msg += "; usage: " + u + " | " + tool + " --json '{...}' [--format json] | " + tool + " --continue REF"
	}
	return fmt.Errorf("%s: %s: %w", tool, msg, catalog.ErrUsage)
}

// Parse parses args (without argv[0]) for tool.
func Parse(tool string, args []string, stdin Stdin) (*Invocation, error) {
	flags, ok := toolFlags[tool]
	if !ok {
		return nil, fmt.Errorf("%q: %w", tool, catalog.ErrUnknownTool)
	}
	p := &parser{tool: tool, flags: flags, args: args, inv: &Invocation{Tool: tool}, input: map[string]any{}}
	if err := p.scan(); err != nil {
		return nil, err
	}
	switch {
	case p.inv.Help:
		return p.inv, nil
	case p.inv.Continue != "":
		return p.continuation()
	case p.rawJSON != nil:
		return p.jsonInput()
	}
	return p.shortForm(stdin)
}

// parser is Parse's state while it reads one command line.
type parser struct {
	tool  string
	flags map[string]flagSpec
	usage string // the usage line errors show; "" for a built-in's (Usage)
	args  []string
	i     int // index in args of the argument being read

	inv          *Invocation
	input        map[string]any // the tool's own options, by JSON key
	rawJSON      *string        // the value of --json, when given
	pos          []string       // positional arguments, in order
	dashdash     bool           // "--" was read: all that follows is positional
	optionsAfter bool           // options follow a command line given as one argument
}

// fail is a usage error of the tool being parsed.
func (p *parser) fail(format string, a ...any) error {
	if p.usage == "" {
		return usageErr(p.tool, format, a...)
	}
	return fmt.Errorf("%s: %s; usage: %s: %w", p.tool, fmt.Sprintf(format, a...), p.usage, catalog.ErrUsage)
}

// scan reads args into p; it stops early at --help, which ends parsing.
func (p *parser) scan() error {
	for ; p.i < len(p.args); p.i++ {
		a := p.args[p.i]
		if p.positional(a) {
			p.pos = append(p.pos, a)
			if len(p.pos) == 1 && !p.dashdash && argvTools[p.tool] {
				p.optionsAfter = isCommandLine(a) && onlyOptions(p.flags, p.args[p.i+1:])
			}
			continue
		}
		if a == "--" {
			p.dashdash = true
			continue
		}
		if err := p.option(a); err != nil || p.inv.Help {
			return err
		}
	}
	return nil
}

// positional says whether a is a positional argument. A command's options are
// read until its first positional argument or "--": after it, everything
// belongs to the command (safe_bash ls -la), unless optionsAfter.
func (p *parser) positional(a string) bool {
	return p.dashdash || !strings.HasPrefix(a, "-") || a == "-" || len(p.pos) > 0 && argvTools[p.tool] && !p.optionsAfter
}

// option reads the option a, with its value when it takes one.
func (p *parser) option(a string) error {
	name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if !strings.HasPrefix(a, "--") && name != "h" {
		return p.fail("unknown option %s (options are long: --name VALUE)", a)
	}
	switch name {
	case "help", "h":
		p.inv.Help = true
		return nil
	case "json", "format", "max-tokens", "continue":
		v, err := p.value(name, val, hasVal)
		if err != nil {
			return err
		}
		return p.common(name, v)
	}
	spec, ok := p.flags[name]
	if !ok {
		return p.fail("unknown option --%s", name)
	}
	if spec.isBool || spec.set != nil {
		return p.toolSwitch(name, spec, val, hasVal)
	}
	v, err := p.value(name, val, hasVal)
	if err != nil {
		return err
	}
	return p.toolValue(name, spec, v)
}

// value is the value of option name: the one after "=" when hasVal, else the
// next argument, which it consumes.
func (p *parser) value(name, val string, hasVal bool) (string, error) {
	if hasVal {
		return val, nil
	}
	if p.i+1 >= len(p.args) {
		return "", p.fail("option --%s needs a value", name)
	}
	p.i++
	return p.args[p.i], nil
}

// common sets the option name, one of those every tool takes, to v.
func (p *parser) common(name, v string) error {
	switch name {
	case "json":
		p.rawJSON = &v
	case "format":
		switch v {
		case "text":
			p.inv.Format = Text
		case "json":
			p.inv.Format = JSON
		default:
			return p.fail("--format must be text or json, not %q", v)
		}
	case "max-tokens":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p.fail("--max-tokens needs a positive whole number, not %q", v)
		}
		p.inv.MaxTokens = n
	case "continue":
		if v == "" {
			return p.fail("--continue needs a reference")
		}
		p.inv.Continue = v
	}
	return nil
}

// toolSwitch sets the tool's option name, one that takes no value.
func (p *parser) toolSwitch(name string, spec flagSpec, val string, hasVal bool) error {
	v := spec.set
	if spec.isBool {
		v = true
	}
	switch {
	case hasVal && spec.conv != nil:
		var err error
		if v, err = spec.conv(val); err != nil {
			return p.fail("--%s %v", name, err)
		}
	case hasVal:
		return p.fail("option --%s takes no value", name)
	}
	if prev, dup := p.input[spec.key]; dup && prev != v {
		return p.fail("option --%s contradicts an earlier option", name)
	}
	p.input[spec.key] = v
	return nil
}

// toolValue sets the tool's option name to v: appended to a list, else once.
func (p *parser) toolValue(name string, spec flagSpec, v string) error {
	if spec.conv != nil {
		return p.typedValue(name, spec, v)
	}
	if spec.isList {
		list, _ := p.input[spec.key].([]string)
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		if len(list) == 0 {
			return p.fail("option --%s needs a value", name)
		}
		p.input[spec.key] = list
		return nil
	}
	if _, dup := p.input[spec.key]; dup {
		return p.fail("option --%s given twice", name)
	}
	if spec.isInt {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p.fail("--%s needs a positive whole number, not %q", name, v)
		}
		p.input[spec.key] = n
	} else {
		p.input[spec.key] = v
	}
	return nil
}

// typedValue sets the plugin tool's option name to v converted by its
// schema's type: one more item of a list, else once.
func (p *parser) typedValue(name string, spec flagSpec, v string) error {
	val, err := spec.conv(v)
	if err != nil {
		return p.fail("--%s %v", name, err)
	}
	if spec.isList {
		list, _ := p.input[spec.key].([]any)
		p.input[spec.key] = append(list, val)
		return nil
	}
	if _, dup := p.input[spec.key]; dup {
		return p.fail("option --%s given twice", name)
	}
	p.input[spec.key] = val
	return nil
}

// continuation is the invocation of --continue, which stands alone.
func (p *parser) continuation() (*Invocation, error) {
	if p.rawJSON != nil || len(p.pos) > 0 || len(p.input) > 0 {
		return nil, p.fail("--continue takes no other input")
	}
	return p.inv, nil
}

// jsonInput is the invocation of --json, whose value is the whole input.
func (p *parser) jsonInput() (*Invocation, error) {
	if len(p.pos) > 0 || len(p.input) > 0 {
		return nil, p.fail("--json takes the whole input; give no other arguments or tool options")
	}
	if !json.Valid([]byte(*p.rawJSON)) {
		return nil, fmt.Errorf("%s: --json is not valid JSON: %w", p.tool, catalog.ErrBadInput)
	}
	if !strings.HasPrefix(strings.TrimLeft(*p.rawJSON, " \t\r\n"), "{") {
		return nil, fmt.Errorf("%s: --json must be a JSON object ({...}): %w", p.tool, catalog.ErrBadInput)
	}
	p.inv.Input = json.RawMessage(*p.rawJSON)
	return p.inv, nil
}

// shortForm is the invocation of the tool's own short form: its options, with
// its positional arguments and standard input read as the tool takes them.
func (p *parser) shortForm(stdin Stdin) (*Invocation, error) {
	tool, input, pos := p.tool, p.input, p.pos
	var err error
	switch tool {
	case "safe_bash":
		err = bashInput(input, pos, stdin)
	case "safe_read":
		err = pathOnly(tool, input, pos)
	case "safe_write":
		err = writeInput(input, pos, stdin)
	case "memory_search":
		err = words(tool, "query", "no query given", input, pos, Stdin{})
	case "memory_get":
		err = oneID(tool, input, pos, true)
	case "memory_feedback":
		err = feedbackInput(input, pos)
	case "memory_store":
		err = memoryStoreInput(input, pos, stdin)
	case "checkpoint_save":
		err = checkpointSaveInput(input, pos, stdin)
	case "checkpoint_restore":
		err = oneID(tool, input, pos, false)
	case "checkpoint_list":
		err = noArgs(tool, pos)
	case "branch":
		err = words(tool, "description", "no description given: say what the branch is for", input, pos, Stdin{})
	case "return":
		err = words(tool, "summary", "no summary given", input, pos, stdin)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("%s: encode input: %v: %w", tool, err, catalog.ErrInternal)
	}
	p.inv.Input = b
	return p.inv, nil
}

// bashInput: one argument is a command line as written (shell syntax kept); several
// are an argv, quoted for the shell so each stays one word; none reads the script
// from standard input when that is not a terminal.
func bashInput(input map[string]any, pos []string, stdin Stdin) error {
	switch {
	case len(pos) == 1:
		input["command"] = pos[0]
	case len(pos) > 1:
		q := make([]string, len(pos))
		for i, p := range pos {
			q[i] = ShellQuote(p)
		}
		input["command"] = strings.Join(q, " ")
	case stdin.R != nil && !stdin.IsTerminal:
		s, err := readAll("safe_bash", stdin.R)
		if err != nil {
			return err
		}
		if strings.TrimSpace(s) == "" {
			return usageErr("safe_bash", "no command given (empty standard input)")
		}
		input["command"] = s
	default:
		return usageErr("safe_bash", "no command given")
	}
	return nil
}

func pathOnly(tool string, input map[string]any, pos []string) error {
	switch len(pos) {
	case 0:
		return usageErr(tool, "no path given")
	case 1:
		input["path"] = pos[0]
		return nil
	}
	return usageErr(tool, "one path at a time (got %d)", len(pos))
}

func writeInput(input map[string]any, pos []string, stdin Stdin) error {
	if err := pathOnly("safe_write", input, pos); err != nil {
		return err
	}
	if _, ok := input["content"]; ok {
		return nil
	}
	if stdin.R == nil || stdin.IsTerminal {
		return usageErr("safe_write", "no content: pipe it on standard input or pass --content")
	}
	s, err := readAll("safe_write", stdin.R)
	if err != nil {
		return err
	}
	input["content"] = s
	return nil
}

// words sets key to the arguments joined by spaces (memory_search fix the
// flaky test); without arguments, to standard input when it is piped and
// stdin.R is set.
func words(tool, key, none string, input map[string]any, pos []string, stdin Stdin) error {
	if len(pos) > 0 {
		input[key] = strings.Join(pos, " ")
		return nil
	}
	if stdin.R != nil && !stdin.IsTerminal {
		s, err := readAll(tool, stdin.R)
		if err != nil {
			return err
		}
		if strings.TrimSpace(s) != "" {
			input[key] = s
			return nil
		}
	}
	return usageErr(tool, "%s", none)
}

// oneID sets "id" to the one argument; required says whether it may be left out.
func oneID(tool string, input map[string]any, pos []string, required bool) error {
	switch {
	case len(pos) == 1:
		input["id"] = pos[0]
	case len(pos) > 1:
		return usageErr(tool, "one id at a time (got %d)", len(pos))
	case required:
		return usageErr(tool, "no id given")
	}
	return nil
}

func noArgs(tool string, pos []string) error {
	if len(pos) > 0 {
		return usageErr(tool, "takes no arguments, only options (got %q)", pos[0])
	}
	return nil
}

// need refuses a missing required option.
func need(tool string, input map[string]any, keys ...string) error {
	for _, k := range keys {
		if _, ok := input[k]; !ok {
			return usageErr(tool, "--%s is required", k)
		}
	}
	return nil
}

func feedbackInput(input map[string]any, pos []string) error {
	if err := oneID("memory_feedback", input, pos, true); err != nil {
		return err
	}
	if _, ok := input["helpful"]; !ok {
		return usageErr("memory_feedback", "say --helpful or --unhelpful")
	}
	return nil
}

// memoryStoreInput: the content comes from --content or standard input.
func memoryStoreInput(input map[string]any, pos []string, stdin Stdin) error {
	const tool = "memory_store"
	if err := noArgs(tool, pos); err != nil {
		return err
	}
	if err := need(tool, input, "title", "description", "outcome"); err != nil {
		return err
	}
	if _, ok := input["content"]; ok {
		return nil
	}
	if stdin.R == nil || stdin.IsTerminal {
		return usageErr(tool, "no content: pipe it on standard input or pass --content")
	}
	s, err := readAll(tool, stdin.R)
	if err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return usageErr(tool, "no content (empty standard input)")
	}
	input["content"] = s
	return nil
}

// checkpointSaveInput: the full level comes from standard input when it is
// piped and not empty.
func checkpointSaveInput(input map[string]any, pos []string, stdin Stdin) error {
	const tool = "checkpoint_save"
	if err := noArgs(tool, pos); err != nil {
		return err
	}
	if err := need(tool, input, "summary"); err != nil {
		return err
	}
	if stdin.R == nil || stdin.IsTerminal {
		return nil
	}
	s, err := readAll(tool, stdin.R)
	if err != nil {
		return err
	}
	if s != "" {
		input["full"] = s
	}
	return nil
}

func readAll(tool string, r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxStdin+1))
	if err != nil {
		return "", fmt.Errorf("%s: read standard input: %v: %w", tool, err, catalog.ErrIO)
	}
	if len(b) > MaxStdin {
		return "", fmt.Errorf("%s: standard input is over %d bytes: %w", tool, MaxStdin, catalog.ErrBadInput)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s: standard input is not UTF-8 text: %w", tool, catalog.ErrBadInput)
	}
	return string(b), nil
}

// ShellQuote quotes s as one bash word; words of only safe characters stay bare.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
