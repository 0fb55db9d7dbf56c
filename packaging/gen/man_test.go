package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/cmd/contextd/app"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

// renderMan formats a page with man-db as lintian checks it, failing on any
// warning, and returns the text.
func renderMan(t *testing.T, name string, roff []byte) string {
	t.Helper()
	if _, err := exec.LookPath("man"); err != nil {
		t.Fatal("man is not installed; run `make deps` (scripts/deps.sh installs man-db for these tests)")
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, roff, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "MANWIDTH=80", "MAN_DISABLE_SECCOMP=1"}
	var stderr bytes.Buffer
	check := exec.Command("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", p)
	check.Env, check.Stderr = env, &stderr
	if err := check.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("%s: man --warnings: %v\n%s", name, err, stderr.String())
	}
	view := exec.Command("man", "-l", p)
	view.Env = append(env, "MANPAGER=cat")
	out, err := view.Output()
	if err != nil {
		t.Fatalf("%s: man -l: %v", name, err)
	}
	return flatten(string(out))
}

// flatten joins the rendered lines into one, undoing the line breaks man
// made: at spaces, after hyphens, and inside words it hyphenated (U+2010).
func flatten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.NewReplacer("\u2010 ", "", "- ", "-").Replace(s)
}

func TestManPages(t *testing.T) {
	when := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	pages, err := ManPages("9.8.7", when)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, p := range pages {
		byName[p.Name] = renderMan(t, p.Name, p.Content)
	}

	// One page per command of contextd's tree, each naming the version.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		text, ok := byName[name]
		if !ok {
			t.Errorf("no man page %s for `%s`", name, c.CommandPath())
		} else if !strings.Contains(text, "contextd 9.8.7") || !strings.Contains(text, flatten(strings.ReplaceAll(c.Short, "`", ""))) {
			t.Errorf("%s lacks the version or its summary %q:\n%s", name, c.Short, text)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(app.Command())

	// contextd-proxy(1): every tool with its usage line and options, every
	// common option, every exit status of the catalog.
	text := byName["contextd-proxy.1"]
	if text == "" {
		t.Fatal("no contextd-proxy.1")
	}
	var want []string
	for _, s := range toolspec.All() {
		want = append(want, s.Name, flatten(cli.Usage[s.Name]))
		for _, f := range cli.ToolFlags(s.Name) {
			want = append(want, "--"+f.Name)
		}
	}
	for _, f := range cli.CommonFlags {
		want = append(want, "--"+f.Name)
	}
	for _, c := range catalog.All() {
		want = append(want, strconv.Itoa(c.Exit), c.Code)
	}
	want = append(want, "contextd-proxy install", "contextd 9.8.7", flatten("SEE ALSO contextd(1)"))
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("contextd-proxy.1 does not show %q", w)
		}
	}
}

// Every option common to the tools has help text for the man page (a new
// one without it fails the package build, not silently).
func TestCommonFlagHelp(t *testing.T) {
	for _, f := range cli.CommonFlags {
		if strings.TrimSpace(commonFlagHelp[f.Name]) == "" {
			t.Errorf("--%s has no entry in commonFlagHelp", f.Name)
		}
	}
}
