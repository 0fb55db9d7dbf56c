package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// ProxyCommand is one of contextd-proxy's own commands, as its usage text
// (proxy.UsageText) lists them under "By its own name:".
type ProxyCommand struct {
	Path     []string // command words: ["install"], ["mcp", "wrap"]
	Synopsis string   // the whole left side: "contextd-proxy install [--force] [DIR]"
	Args     string   // what follows the words: "[--force] [DIR]", "-- CMD"
	Help     string   // the right side, continuation lines joined
	Flags    []ProxyFlag
	// Positional is what the command takes besides its options, as the
	// usage writes it ("[TOOLS-DIR]", "-- CMD"); "" for nothing.
	Positional string
}

// ProxyFlag is an option of one of the proxy's own commands.
type ProxyFlag struct {
	Name   string   // without "--"
	Value  string   // the value's placeholder ("DIR"), "" for a switch
	Values []string // the choices, when the usage lists them (claude|opencode|none)
}

var (
	commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	// [--name] or [--name VALUE] in a synopsis.
	synopsisFlag = regexp.MustCompile(`\[--([a-z][a-z0-9-]*)(?: ([^\]\s]+))?\]`)
	choiceList   = regexp.MustCompile(`^[a-z0-9-]+(\|[a-z0-9-]+)+$`)
)

const ownNameHead = "By its own name:"

// ParseProxyUsage reads the commands from the usage text. The block under
// "By its own name:" has one command a line, "  contextd-proxy WORDS ARGS",
// then its help in a column of its own, on the same line or, when the
// synopsis is too long for that, on the lines below it (indented to the
// column). Lines whose first word is a placeholder in capitals (TOOL ARGS...)
// are not commands: the tools are documented from toolspec.
func ParseProxyUsage(usage string) ([]ProxyCommand, error) {
	var block []string
	in := false
	for _, l := range strings.Split(usage, "\n") {
		switch {
		case strings.TrimSpace(l) == ownNameHead:
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			block = append(block, l)
		}
	}
	var heads []string
	for _, l := range block {
		if isHead(l) {
			heads = append(heads, l)
		}
	}
	if len(heads) == 0 {
		return nil, fmt.Errorf("the proxy's usage text has no %q block of commands: %w", ownNameHead, catalog.ErrInternal)
	}
	col := helpColumn(heads)

	var cmds []ProxyCommand
	for i := 0; i < len(block); i++ {
		l := block[i]
		if !isHead(l) {
			continue
		}
		var more []string
		for i+1 < len(block) && !isHead(block[i+1]) {
			i++
			more = append(more, strings.TrimSpace(block[i]))
		}
		syn, help := l, ""
		// A head followed by help lines is all synopsis; otherwise the help
		// starts at the column (after one space at least: a long synopsis
		// may leave only one).
		if len(more) == 0 && col > 0 && len(l) > col && l[col-1] == ' ' {
			syn, help = l[:col], l[col:]
		}
		syn = strings.TrimSpace(syn)
		help = strings.TrimSpace(strings.Join(append([]string{strings.TrimSpace(help)}, more...), " "))
		words := strings.Fields(strings.TrimPrefix(syn, "contextd-proxy"))
		c := ProxyCommand{Synopsis: syn, Help: help}
		n := 0
		for ; n < len(words) && commandWord.MatchString(words[n]); n++ {
			c.Path = append(c.Path, words[n])
		}
		if len(c.Path) == 0 {
			continue // TOOL ARGS...
		}
		c.Args = strings.Join(words[n:], " ")
		for _, m := range synopsisFlag.FindAllStringSubmatch(c.Args, -1) {
			f := ProxyFlag{Name: m[1], Value: m[2]}
			if choiceList.MatchString(f.Value) {
				f.Values = strings.Split(f.Value, "|")
			}
			c.Flags = append(c.Flags, f)
		}
		c.Positional = strings.Join(strings.Fields(synopsisFlag.ReplaceAllString(c.Args, "")), " ")
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// isHead: the line starts a command ("  contextd-proxy ...").
func isHead(l string) bool {
	return strings.HasPrefix(strings.TrimSpace(l), "contextd-proxy ") || strings.TrimSpace(l) == "contextd-proxy"
}

// helpColumn is the most common offset at which a line's text resumes after
// a run of two or more spaces past its synopsis; 0 if none does.
func helpColumn(lines []string) int {
	count := map[int]int{}
	for _, l := range lines {
		start := len(l) - len(strings.TrimLeft(l, " "))
		for p := start + 2; p < len(l); p++ {
			if l[p] != ' ' && l[p-1] == ' ' && l[p-2] == ' ' {
				count[p]++
				break
			}
		}
	}
	best := 0
	for p, n := range count {
		if n > count[best] || n == count[best] && p < best {
			best = p
		}
	}
	return best
}
