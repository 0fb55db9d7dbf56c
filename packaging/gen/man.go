package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/cmd/contextd/app"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

// Page is one man page in section 1, not yet compressed.
type Page struct {
	Name    string // contextd.1, contextd-audit-tail.1, contextd-proxy.1
	Content []byte // roff
}

const manual = "contextd manual"

// ManPages renders contextd(1) and one page per subcommand from the cobra
// tree, and contextd-proxy(1) from the proxy's usage text, its tools' usage
// lines and manuals, and the error catalog's exit statuses.
func ManPages(version string, when time.Time) ([]Page, error) {
	saved := app.Version
	app.Version = version
	root := app.Command()
	app.Version = saved

	var pages []Page
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if c != root && (!c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			return nil
		}
		c.DisableAutoGenTag = true
		var b bytes.Buffer
		date := when
		h := &doc.GenManHeader{Section: "1", Date: &date, Source: "contextd " + version, Manual: manual}
		if err := doc.GenMan(c, h, &b); err != nil {
			return fmt.Errorf("man page of %s: %v: %w", c.CommandPath(), err, catalog.ErrInternal)
		}
		pages = append(pages, Page{strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1", b.Bytes()})
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	p, err := proxyManPage(version, when)
	if err != nil {
		return nil, err
	}
	return append(pages, p), nil
}

// commonFlagHelp says what each option common to all tools does. A common
// option without an entry fails the build (see proxyManPage).
var commonFlagHelp = map[string]string{
	"json":       "the whole input as one JSON object, as the tool's schema.json describes it, instead of the short form",
	"format":     "*text* (default): the output, then one line on how to get the rest if it was cut; *json*: the response envelope (data, refs, tokens_used, has_more, truncated, continue, exit_code, error, ...)",
	"continue":   "print the next part of a result that was cut to the token budget, by the reference its last line gave",
	"max-tokens": "ask for a smaller response budget than the configured one",
	"help":       "print the tool's manual and usage",
}

// proxyManPage writes contextd-proxy(1) in markdown and renders it with
// md2man, the renderer cobra uses for contextd's pages.
func proxyManPage(version string, when time.Time) (Page, error) {
	usage := proxy.UsageText()
	cmds, err := ParseProxyUsage(usage)
	if err != nil {
		return Page{}, err
	}
	name, _, _ := strings.Cut(strings.SplitN(usage, "\n", 2)[0], ":")
	summary := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(strings.SplitN(usage, "\n", 2)[0], name+":")), ".")
	if name != "contextd-proxy" || summary == "" {
		return Page{}, fmt.Errorf("the proxy's usage text does not start with \"contextd-proxy: <what it is>\": %w", catalog.ErrInternal)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%% \"CONTEXTD-PROXY\" \"1\" %q %q %q\n", when.Format("Jan 2006"), "contextd "+version, manual)
	fmt.Fprintf(&b, "# NAME\ncontextd-proxy \\- %s\n\n", summary)

	b.WriteString("# SYNOPSIS\n")
	b.WriteString("*TOOL* \\[*ARGS*...\\]    (through a symlink named after the tool)\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "**contextd-proxy %s**", strings.Join(c.Path, " "))
		if c.Args != "" {
			fmt.Fprintf(&b, " %s", mdEscape(c.Args))
		}
		b.WriteString("\n\n")
	}
	b.WriteString("**contextd-proxy** *TOOL* \\[*ARGS*...\\]\n\n")

	b.WriteString("# DESCRIPTION\n")
	b.WriteString("What `contextd-proxy help` prints:\n\n")
	for _, l := range strings.Split(strings.TrimRight(usage, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("\n")

	b.WriteString("# COMMANDS\n")
	for _, c := range cmds {
		if c.Help == "" {
			fmt.Fprintf(&b, "**%s**\n\n", mdEscape(c.Synopsis))
			continue
		}
		fmt.Fprintf(&b, "**%s**\n: %s\n\n", mdEscape(c.Synopsis), mdEscape(c.Help))
	}

	b.WriteString("# TOOLS\n")
	b.WriteString("Each tool takes its input in the short form below, or as **--json** with the whole input; " +
		"the options common to every tool follow.\n\n")
	for _, s := range toolspec.All() {
		u, ok := cli.Usage[s.Name]
		if !ok {
			return Page{}, fmt.Errorf("tool %s has no usage line in proxy/cli: %w", s.Name, catalog.ErrInternal)
		}
		fmt.Fprintf(&b, "### %s\n", mdEscape(s.Name))
		fmt.Fprintf(&b, "**%s**\n\n", mdEscape(u))
		b.WriteString(toolManual(s.Doc) + "\n\n")
		props, err := schemaProperties(s.Schema)
		if err != nil {
			return Page{}, fmt.Errorf("tool %s: %v: %w", s.Name, err, catalog.ErrInternal)
		}
		for _, f := range cli.ToolFlags(s.Name) {
			fmt.Fprintf(&b, "**--%s**%s\n: %s\n\n", f.Name, flagValue(f, u), mdEscape(orDash(props[f.Key].Description)))
		}
	}

	b.WriteString("# OPTIONS OF EVERY TOOL\n")
	for _, f := range cli.CommonFlags {
		h, ok := commonFlagHelp[f.Name]
		if !ok {
			return Page{}, fmt.Errorf("common option --%s has no help text in packaging/gen: %w", f.Name, catalog.ErrInternal)
		}
		fmt.Fprintf(&b, "**--%s**%s\n: %s\n\n", f.Name, flagValue(f, ""), h)
	}

	b.WriteString("# EXIT STATUS\n")
	b.WriteString("**safe_bash** exits with its command's own status (124 when it timed out). " +
		"Failures of contextd itself exit with a sysexits status and print an error on standard error " +
		"that starts with its code:\n\n")
	byExit := map[int][]string{}
	for _, c := range catalog.All() {
		byExit[c.Exit] = append(byExit[c.Exit], c.Code+" "+c.Name)
	}
	var exits []int
	for e := range byExit {
		exits = append(exits, e)
	}
	sort.Ints(exits)
	for _, e := range exits {
		fmt.Fprintf(&b, "**%d**\n: %s\n\n", e, mdEscape(strings.Join(byExit[e], "; ")))
	}
	b.WriteString("`contextd errors` prints the whole catalog with what to do about each.\n\n")

	b.WriteString("# FILES\n")
	b.WriteString("*.claude/tools/TOOL/TOOL*, *schema.json*, *TOOL.md*\n: what **contextd-proxy install** writes for each tool in a project\n\n")
	b.WriteString("*$XDG_RUNTIME_DIR/contextd/contextd.sock*\n: the daemon's socket (**CONTEXTD_SOCKET** overrides it)\n\n")

	b.WriteString("# SEE ALSO\n**contextd**(1), */usr/share/doc/contextd/*\n")
	return Page{"contextd-proxy.1", md2man.Render([]byte(b.String()))}, nil
}

// toolManual is a TOOL.md without its "# name" heading, as one paragraph.
func toolManual(doc []byte) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(doc)), "\n") {
		if strings.HasPrefix(l, "# ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

type property struct {
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
}

func schemaProperties(schema []byte) (map[string]property, error) {
	var s struct {
		Properties map[string]property `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("schema.json: %v", err)
	}
	return s.Properties, nil
}

// flagValue is how the page shows an option's value: its choices, the
// placeholder the tool's usage line gives it (--timeout SECONDS), or the
// option's name in capitals.
func flagValue(f cli.Flag, usage string) string {
	switch {
	case len(f.Values) > 0:
		return " " + strings.Join(f.Values, "|")
	case !f.TakesValue:
		return ""
	}
	ph := strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
	if m := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + ` ([A-Z][A-Z_]*)\b`).FindStringSubmatch(usage); m != nil {
		ph = m[1]
	}
	return " *" + ph + "*"
}

// mdEscape keeps markdown from reading emphasis or links into literal text.
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, "`", "\\`", `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`)
	return r.Replace(s)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
