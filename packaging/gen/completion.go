package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/cmd/contextd/app"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

// Completion is one shell completion file.
type Completion struct {
	Shell   string // bash, zsh, fish
	Name    string // file name in the shell's completion directory
	Content []byte
}

// Completions returns the bash, zsh and fish completions of both commands.
//
// contextd's come from cobra: they ask `contextd __complete` at run time, which
// the contextd binary (a cobra program) answers. contextd-proxy is not a cobra
// program and has no such command, so its completions are static scripts
// written from a model of its commands (proxyModel) built from its own
// definitions: the usage text, toolspec and proxy/cli's options.
func Completions() ([]Completion, error) {
	root := app.Command()
	var out []Completion
	for _, g := range []struct {
		shell, name string
		gen         func(*bytes.Buffer) error
	}{
		{"bash", "contextd", func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) }},
		{"zsh", "_contextd", func(b *bytes.Buffer) error { return root.GenZshCompletion(b) }},
		{"fish", "contextd.fish", func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) }},
	} {
		var b bytes.Buffer
		if err := g.gen(&b); err != nil {
			return nil, fmt.Errorf("%s completion of contextd: %v: %w", g.shell, err, catalog.ErrInternal)
		}
		out = append(out, Completion{g.shell, g.name, b.Bytes()})
	}
	m, err := proxyModel()
	if err != nil {
		return nil, err
	}
	out = append(out,
		Completion{"bash", "contextd-proxy", bashProxy(m)},
		Completion{"zsh", "_contextd-proxy", zshProxy(m)},
		Completion{"fish", "contextd-proxy.fish", fishProxy(m)},
	)
	return out, nil
}

// argKind is what a command's or option's argument completes to.
type argKind int

const (
	argNone argKind = iota // free text: nothing to offer
	argFile
	argDir
)

type compFlag struct {
	Name       string
	Help       string
	TakesValue bool
	Repeatable bool
	Values     []string
	Arg        argKind
}

type compCmd struct {
	Name  string
	Help  string
	Flags []compFlag
	Arg   argKind   // positional arguments
	Subs  []compCmd // second-level commands (mcp wrap)
}

// proxyModel is what contextd-proxy takes on its command line: its own
// commands, then each tool with its options and the common ones.
func proxyModel() ([]compCmd, error) {
	parsed, err := ParseProxyUsage(proxy.UsageText())
	if err != nil {
		return nil, err
	}
	var cmds []compCmd
	index := map[string]int{}
	for _, p := range parsed {
		c := compCmd{Name: p.Path[len(p.Path)-1], Help: p.Help, Arg: positionalKind(p.Positional)}
		for _, f := range p.Flags {
			cf := compFlag{Name: f.Name, TakesValue: f.Value != "", Values: f.Values}
			if strings.Contains(f.Value, "DIR") {
				cf.Arg = argDir
			}
			c.Flags = append(c.Flags, cf)
		}
		i, seen := index[p.Path[0]]
		if !seen {
			index[p.Path[0]] = len(cmds)
			cmds = append(cmds, compCmd{Name: p.Path[0]})
			i = len(cmds) - 1
		}
		if len(p.Path) == 1 {
			c.Subs = cmds[i].Subs
			cmds[i] = c
		} else {
			cmds[i].Subs = append(cmds[i].Subs, c)
		}
	}
	for _, s := range toolspec.All() {
		props, err := schemaProperties(s.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %v: %w", s.Name, err, catalog.ErrInternal)
		}
		var desc struct {
			Description string `json:"description"`
		}
		if err := json.Unmarshal(s.Schema, &desc); err != nil {
			return nil, fmt.Errorf("tool %s: schema.json: %v: %w", s.Name, err, catalog.ErrInternal)
		}
		c := compCmd{Name: s.Name, Help: desc.Description, Arg: argFile}
		if !strings.Contains(cli.Usage[s.Name], "PATH") && s.Name != "safe_bash" {
			c.Arg = argNone
		}
		for _, f := range cli.ToolFlags(s.Name) {
			p := props[f.Key]
			cf := compFlag{Name: f.Name, Help: p.Description, TakesValue: f.TakesValue, Repeatable: f.Repeatable}
			if f.TakesValue {
				cf.Values = p.Enum // a switch (--global) sets one of them itself
			}
			if f.Key == "cwd" {
				cf.Arg = argDir
			}
			c.Flags = append(c.Flags, cf)
		}
		for _, f := range cli.CommonFlags {
			c.Flags = append(c.Flags, compFlag{Name: f.Name, Help: plainHelp(commonFlagHelp[f.Name]), TakesValue: f.TakesValue, Values: f.Values})
		}
		sort.SliceStable(c.Flags, func(i, j int) bool { return c.Flags[i].Name < c.Flags[j].Name })
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// positionalKind is what a command's positional arguments complete to, from
// how its usage writes them.
func positionalKind(p string) argKind {
	switch {
	case p == "":
		return argNone
	case strings.Contains(p, "DIR"):
		return argDir
	}
	return argFile
}

// plainHelp is help text without markdown, cut to its first clause.
func plainHelp(s string) string {
	s = strings.ReplaceAll(s, "*", "")
	if i := strings.IndexAny(s, ";("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// oneLine is help text fit for a completion menu: one line, no quotes or
// brackets that the shells' description syntax would read.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.NewReplacer(`'`, "", `"`, "", "`", "", `\`, "", "[", "(", "]", ")", ":", " -", "$", "").Replace(s)
	if len(s) > 72 {
		s = strings.TrimSpace(s[:69]) + "..."
	}
	return s
}

func names(cmds []compCmd) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.Name)
	}
	return strings.Join(n, " ")
}

const generatedBy = "generated by packaging/gen from contextd-proxy's own definitions; do not edit"

// bashProxy: complete -F with a case per command. Unknown positions fall back
// to file names (-o default).
func bashProxy(cmds []compCmd) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for contextd-proxy: %s.\n\n", generatedBy)
	b.WriteString(`_contextd_proxy() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
`)
	fmt.Fprintf(&b, "\t\tmapfile -t COMPREPLY < <(compgen -W '%s' -- \"$cur\")\n", names(cmds))
	b.WriteString(`		return 0
	fi
	# After "--" every word belongs to the command: leave it to the default.
	for ((i = 2; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] && return 0
	done
	case ${COMP_WORDS[1]} in
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t%s)\n", c.Name)
		if len(c.Subs) > 0 {
			fmt.Fprintf(&b, "\t\tif ((COMP_CWORD == 2)); then\n\t\t\tmapfile -t COMPREPLY < <(compgen -W '%s' -- \"$cur\")\n\t\t\treturn 0\n\t\tfi\n", names(c.Subs))
		}
		var valued, flagWords []string
		for _, f := range c.Flags {
			flagWords = append(flagWords, "--"+f.Name)
			if !f.TakesValue {
				continue
			}
			switch {
			case len(f.Values) > 0:
				fmt.Fprintf(&b, "\t\tif [[ $prev == --%s ]]; then\n\t\t\tmapfile -t COMPREPLY < <(compgen -W '%s' -- \"$cur\")\n\t\t\treturn 0\n\t\tfi\n", f.Name, strings.Join(f.Values, " "))
			case f.Arg == argDir:
				fmt.Fprintf(&b, "\t\tif [[ $prev == --%s ]]; then\n\t\t\tcompopt -o dirnames 2>/dev/null\n\t\t\treturn 0\n\t\tfi\n", f.Name)
			default:
				valued = append(valued, "--"+f.Name)
			}
		}
		if len(valued) > 0 {
			// A free-text value: offer nothing rather than file names.
			fmt.Fprintf(&b, "\t\tcase $prev in %s)\n\t\t\tcompopt +o default 2>/dev/null\n\t\t\treturn 0\n\t\t\t;;\n\t\tesac\n", strings.Join(valued, " | "))
		}
		if len(flagWords) > 0 {
			fmt.Fprintf(&b, "\t\tif [[ $cur == -* ]]; then\n\t\t\tmapfile -t COMPREPLY < <(compgen -W '%s' -- \"$cur\")\n\t\t\treturn 0\n\t\tfi\n", strings.Join(flagWords, " "))
		}
		switch c.Arg {
		case argDir:
			b.WriteString("\t\tcompopt -o dirnames 2>/dev/null\n")
		case argNone:
			b.WriteString("\t\tcompopt +o default 2>/dev/null\n")
		}
		b.WriteString("\t\t;;\n")
	}
	b.WriteString(`	esac
	return 0
}
complete -o default -F _contextd_proxy contextd-proxy
`)
	return []byte(b.String())
}

// zshQuote puts s in single quotes for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// zshProxy: _describe for the commands, _arguments for each command's options.
func zshProxy(cmds []compCmd) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef contextd-proxy\n# zsh completion for contextd-proxy: %s.\n\n", generatedBy)
	b.WriteString("_contextd-proxy() {\n\tlocal -a cmds\n\tcmds=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t%s\n", zshQuote(c.Name+":"+oneLine(c.Help)))
	}
	b.WriteString("\t)\n\tif ((CURRENT == 2)); then\n\t\t_describe -t commands 'contextd-proxy command' cmds\n\t\treturn\n\tfi\n")
	b.WriteString("\tlocal cmd=$words[2]\n\tshift words\n\t((CURRENT--))\n\tcase $cmd in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t%s)\n", c.Name)
		if len(c.Subs) > 0 {
			b.WriteString("\t\tif ((CURRENT == 2)); then\n\t\t\tlocal -a subs\n\t\t\tsubs=(")
			for _, s := range c.Subs {
				fmt.Fprintf(&b, " %s", zshQuote(s.Name+":"+oneLine(s.Help)))
			}
			b.WriteString(" )\n\t\t\t_describe -t commands 'subcommand' subs\n\t\t\treturn\n\t\tfi\n")
		}
		var specs []string
		for _, f := range c.Flags {
			spec := "--" + f.Name + "[" + oneLine(f.Help) + "]"
			if f.Repeatable {
				spec = "*" + spec
			}
			if f.TakesValue {
				switch {
				case len(f.Values) > 0:
					spec += ":" + f.Name + ":(" + strings.Join(f.Values, " ") + ")"
				case f.Arg == argDir:
					spec += ":directory:_files -/"
				default:
					spec += ":" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")) + ": "
				}
			}
			specs = append(specs, zshQuote(spec))
		}
		switch c.Arg {
		case argDir:
			specs = append(specs, zshQuote("*:directory:_files -/"))
		case argFile:
			specs = append(specs, zshQuote("*:file:_files"))
		}
		if len(specs) > 0 {
			fmt.Fprintf(&b, "\t\t_arguments -S \\\n\t\t\t%s\n", strings.Join(specs, " \\\n\t\t\t"))
		}
		b.WriteString("\t\t;;\n")
	}
	b.WriteString("\tesac\n}\n\n")
	b.WriteString(`if [[ $funcstack[1] == _contextd-proxy ]]; then
	_contextd-proxy "$@"
else
	compdef _contextd-proxy contextd-proxy
fi
`)
	return []byte(b.String())
}

// fishQuote puts s in single quotes for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// fishProxy: one complete line per command and option, conditioned on the
// command word (the second word of the line).
func fishProxy(cmds []compCmd) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for contextd-proxy: %s.\n\n", generatedBy)
	b.WriteString(`# __contextd_proxy_at N: the command line has N words before the one being completed.
function __contextd_proxy_at
    test (count (commandline -opc)) -eq $argv[1]
end
# __contextd_proxy_in CMD...: the command word (the second) is one of CMD.
function __contextd_proxy_in
    set -l words (commandline -opc)
    test (count $words) -ge 2; and contains -- $words[2] $argv
end

complete -c contextd-proxy -f
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c contextd-proxy -n '__contextd_proxy_at 1' -a %s -d %s\n", fishQuote(c.Name), fishQuote(oneLine(c.Help)))
	}
	for _, c := range cmds {
		cond := fishQuote("__contextd_proxy_in " + c.Name)
		for _, s := range c.Subs {
			fmt.Fprintf(&b, "complete -c contextd-proxy -n %s -a %s -d %s\n",
				fishQuote("__contextd_proxy_at 2; and __contextd_proxy_in "+c.Name), fishQuote(s.Name), fishQuote(oneLine(s.Help)))
		}
		switch c.Arg {
		case argDir:
			fmt.Fprintf(&b, "complete -c contextd-proxy -n %s -x -a '(__fish_complete_directories)'\n", cond)
		case argFile:
			fmt.Fprintf(&b, "complete -c contextd-proxy -n %s -F\n", cond)
		}
		for _, f := range c.Flags {
			line := fmt.Sprintf("complete -c contextd-proxy -n %s -l %s", cond, f.Name)
			if f.TakesValue {
				line += " -x"
				switch {
				case len(f.Values) > 0:
					line += " -a " + fishQuote(strings.Join(f.Values, " "))
				case f.Arg == argDir:
					line += " -a '(__fish_complete_directories)'"
				}
			}
			line += " -d " + fishQuote(oneLine(f.Help))
			b.WriteString(line + "\n")
		}
	}
	return []byte(b.String())
}
