package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/contextd/contextd/cmd/contextd/app"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

// writeCompletions writes every completion file into a temp dir and returns
// their paths by shell and name.
func writeCompletions(t *testing.T) map[string]string {
	t.Helper()
	comps, err := Completions()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths := map[string]string{}
	for _, c := range comps {
		d := filepath.Join(dir, c.Shell)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, c.Name)
		if err := os.WriteFile(p, c.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[c.Shell+"/"+c.Name] = p
	}
	for _, want := range []string{"bash/contextd", "bash/contextd-proxy", "zsh/_contextd", "zsh/_contextd-proxy",
		"fish/contextd.fish", "fish/contextd-proxy.fish"} {
		if paths[want] == "" {
			t.Fatalf("no completion %s among %v", want, paths)
		}
	}
	return paths
}

// needShell fails (not skips: make deps installs them) when a shell is missing.
func needShell(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed; run `make deps` (scripts/deps.sh installs it for these tests)", name)
	}
}

func shell(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "LC_ALL=C.UTF-8", "TERM=xterm"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s%s", name, args, err, out.String(), errb.String())
	}
	return out.String()
}

// Every script parses in its shell.
func TestCompletionSyntax(t *testing.T) {
	paths := writeCompletions(t)
	for key, p := range paths {
		sh := strings.SplitN(key, "/", 2)[0]
		needShell(t, sh)
		shell(t, sh, "-n", p)
	}
}

// proxyCases are completions every proxy script must give, derived from the
// proxy's definitions: each command at the first word, each option of each
// command from its prefix, and the listed values of each option.
type compCase struct {
	words []string // the words before the one completed, after contextd-proxy
	cur   string   // the word being completed
	want  []string // must all be offered
}

func proxyCases(t *testing.T) []compCase {
	m, err := proxyModel()
	if err != nil {
		t.Fatal(err)
	}
	var cases []compCase
	var all []string
	for _, c := range m {
		all = append(all, c.Name)
		for _, f := range c.Flags {
			cases = append(cases, compCase{[]string{c.Name}, "--" + f.Name[:1], []string{"--" + f.Name}})
			if len(f.Values) > 0 {
				cases = append(cases, compCase{[]string{c.Name, "--" + f.Name}, "", f.Values})
			}
		}
		for _, s := range c.Subs {
			cases = append(cases, compCase{[]string{c.Name}, "", []string{s.Name}})
		}
	}
	cases = append(cases, compCase{nil, "", all})
	// The model itself must hold what the definitions say.
	for _, tool := range toolspec.Names() {
		if !slices.Contains(all, tool) {
			t.Errorf("tool %s missing from the completion model", tool)
		}
	}
	for _, cmd := range []string{"install", "tools", "version"} {
		if !slices.Contains(all, cmd) {
			t.Errorf("command %s missing from the completion model", cmd)
		}
	}
	var formatValues []string
	for _, f := range cli.CommonFlags {
		if f.Name == "format" {
			formatValues = f.Values
		}
	}
	cases = append(cases,
		compCase{[]string{"safe_bash", "--format"}, "", formatValues},
		compCase{[]string{"memory_store", "--outcome"}, "", []string{"success", "failure"}}, // from schema.json's enum
		compCase{[]string{"checkpoint_restore", "--level"}, "s", []string{"summary"}},
	)
	return cases
}

func TestProxyBashCompletion(t *testing.T) {
	needShell(t, "bash")
	script := writeCompletions(t)["bash/contextd-proxy"]
	for _, c := range proxyCases(t) {
		words := append(append([]string{"contextd-proxy"}, c.words...), c.cur)
		var q []string
		for _, w := range words {
			q = append(q, cli.ShellQuote(w))
		}
		prog := "source " + cli.ShellQuote(script) + "\nCOMP_WORDS=(" + strings.Join(q, " ") + ")\n" +
			"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n_contextd_proxy\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		got := strings.Fields(shell(t, "bash", "-c", prog))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("bash: contextd-proxy %s %q: %q not offered (got %q)", strings.Join(c.words, " "), c.cur, w, got)
			}
		}
	}
	// After "--" the words are the command's, not options.
	prog := "source " + cli.ShellQuote(script) + "\nCOMP_WORDS=(contextd-proxy safe_bash -- --ti)\nCOMP_CWORD=3\n_contextd_proxy\necho \"${#COMPREPLY[@]}\"\n"
	if got := strings.TrimSpace(shell(t, "bash", "-c", prog)); got != "0" {
		t.Errorf("bash: options offered after --: %s", got)
	}
}

func TestProxyFishCompletion(t *testing.T) {
	needShell(t, "fish")
	script := writeCompletions(t)["fish/contextd-proxy.fish"]
	for _, c := range proxyCases(t) {
		line := strings.Join(append(append([]string{"contextd-proxy"}, c.words...), c.cur), " ")
		out := shell(t, "fish", "--no-config", "-c", "source "+script+"; complete -C "+fishQuote(line))
		var got []string
		for _, l := range strings.Split(out, "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("fish: %q: %q not offered (got %q)", line, w, got)
			}
		}
	}
}

// zsh completes only inside its line editor: the test types into an
// interactive zsh on a pseudo-terminal (zsh/zpty) and reads what it offers.
func TestProxyZshCompletion(t *testing.T) {
	needShell(t, "zsh")
	dir := filepath.Dir(writeCompletions(t)["zsh/_contextd-proxy"])
	cases := []compCase{
		{[]string{"safe_bash"}, "--ti", []string{"--timeout"}},
		{[]string{"memory_store", "--outcome"}, "", []string{"success", "failure"}},
		{[]string{"safe_bash", "--format"}, "", []string{"text", "json"}},
		{nil, "memory_s", []string{"memory_search", "memory_store"}},
		{[]string{"checkpoint_restore"}, "--l", []string{"--latest", "--level"}},
	}
	var prog strings.Builder
	prog.WriteString(`zmodload zsh/zpty
for line in "$@"; do
	zpty z zsh -f -i
	zpty -w z 'PS1="> "; fpath=(` + dir + ` $fpath); autoload -Uz compinit; compinit -u -D; print RE""ADY'
	zpty -r z x '*READY*'
	zpty -n -w z "$line"$'\t'
	sleep 0.6
	out=
	while zpty -r -t z x; do out+=$x; done
	print -r -- "@@@ $line"
	print -r -- "$out"
	zpty -d z
done
`)
	args := []string{"-f", "-c", prog.String(), "zsh"}
	for _, c := range cases {
		args = append(args, strings.Join(append(append([]string{"contextd-proxy"}, c.words...), c.cur), " "))
	}
	out := shell(t, "zsh", args...)
	parts := strings.Split(out, "@@@ ")
	if len(parts) != len(cases)+1 {
		t.Fatalf("zsh run gave %d results for %d cases:\n%s", len(parts)-1, len(cases), out)
	}
	ansi := regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]|[\r\a\b]")
	for i, c := range cases {
		got := ansi.ReplaceAllString(parts[i+1], " ")
		for _, w := range c.want {
			if !regexp.MustCompile(`(^|[\s])` + regexp.QuoteMeta(w) + `([\s]|$)`).MatchString(got) {
				t.Errorf("zsh: %q: %q not offered:\n%q", c.words, w, got)
			}
		}
	}
}

// contextd's scripts ask `contextd __complete` at run time: the command tree
// answers it with its subcommands and their flags.
func TestContextdDynamicCompletion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "aud"}, "audit"},
		{[]string{"__complete", "audit", ""}, "verify"},
		{[]string{"__complete", "serve", "--con"}, "--config"},
	} {
		var out, errb bytes.Buffer
		code := app.Run(t.Context(), tt.args, &out, &errb)
		if code != 0 || !strings.Contains(out.String(), tt.want) {
			t.Errorf("contextd %q: exit %d, want %q in:\n%s%s", tt.args, code, tt.want, out.String(), errb.String())
		}
	}
}
