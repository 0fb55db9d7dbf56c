package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy"
)

// The commands read from the real usage text include the ones every version
// of the proxy has, each with its help, and none of the placeholder lines.
func TestParseProxyUsageReal(t *testing.T) {
	cmds, err := ParseProxyUsage(proxy.UsageText())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ProxyCommand{}
	for _, c := range cmds {
		got[strings.Join(c.Path, " ")] = c
		if strings.ToUpper(c.Path[0]) == c.Path[0] {
			t.Errorf("placeholder line taken for a command: %+v", c)
		}
	}
	for _, want := range []string{"install", "tools", "version"} {
		if _, ok := got[want]; !ok {
			t.Errorf("command %q not found in %v", want, cmds)
		}
	}
	if h := got["tools"].Help; h == "" {
		t.Errorf("the tools command has no help; parsed %+v", got["tools"])
	}
}

func TestParseProxyUsage(t *testing.T) {
	const usage = `prog: something.

By its own name:
  contextd-proxy install [--agent a|b|c] [--project DIR] [--force] [TOOLS-DIR]
                                 first line of help,
                                 second line
  contextd-proxy hook            reads JSON
  contextd-proxy mcp wrap -- CMD put a firewall in front
  contextd-proxy TOOL ARGS...    run a tool
  contextd-proxy version

Environment: X.
  contextd-proxy notacommand     after the block
`
	cmds, err := ParseProxyUsage(usage)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProxyCommand{
		{Path: []string{"install"}, Synopsis: "contextd-proxy install [--agent a|b|c] [--project DIR] [--force] [TOOLS-DIR]",
			Args: "[--agent a|b|c] [--project DIR] [--force] [TOOLS-DIR]", Help: "first line of help, second line",
			Flags:      []ProxyFlag{{"agent", "a|b|c", []string{"a", "b", "c"}}, {"project", "DIR", nil}, {"force", "", nil}},
			Positional: "[TOOLS-DIR]"},
		{Path: []string{"hook"}, Synopsis: "contextd-proxy hook", Help: "reads JSON"},
		{Path: []string{"mcp", "wrap"}, Synopsis: "contextd-proxy mcp wrap -- CMD", Args: "-- CMD",
			Help: "put a firewall in front", Positional: "-- CMD"},
		{Path: []string{"version"}, Synopsis: "contextd-proxy version"},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("got\n%#v\nwant\n%#v", cmds, want)
	}
}

func TestParseProxyUsageNoBlock(t *testing.T) {
	for _, u := range []string{"", "contextd-proxy: nothing here\n", "By its own name:\n\n"} {
		if _, err := ParseProxyUsage(u); !errors.Is(err, catalog.ErrInternal) {
			t.Errorf("ParseProxyUsage(%q): want ErrInternal, got %v", u, err)
		}
	}
}
