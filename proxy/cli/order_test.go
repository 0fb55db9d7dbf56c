package cli_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/cli"
)

// Issue 14, defect 4: the tool's options written after a command line given as
// one argument (safe_bash 'cat build.log' --format json) are the tool's options,
// as they are before it; an argv's own options stay the command's.
func TestOptionsAfterCommandLine(t *testing.T) {
	type obj = map[string]any
	num := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name      string
		tool      string
		args      []string
		want      obj // decoded input
		format    cli.Format
		maxTokens int
		help      bool
		class     *catalog.Class // expected error class
	}{
		// Both spellings give the same invocation.
		{name: "format before", tool: "safe_bash", args: []string{"--format", "json", "cat build.log"},
			want: obj{"command": "cat build.log"}, format: cli.JSON},
		{name: "format after", tool: "safe_bash", args: []string{"cat build.log", "--format", "json"},
			want: obj{"command": "cat build.log"}, format: cli.JSON},
		{name: "format= after", tool: "safe_bash", args: []string{"cat build.log", "--format=json"},
			want: obj{"command": "cat build.log"}, format: cli.JSON},
		{name: "timeout before", tool: "safe_bash", args: []string{"--timeout", "300", "go test ./..."},
			want: obj{"command": "go test ./...", "timeout": num("300")}},
		{name: "timeout after", tool: "safe_bash", args: []string{"go test ./...", "--timeout", "300"},
			want: obj{"command": "go test ./...", "timeout": num("300")}},
		{name: "cwd before", tool: "safe_bash", args: []string{"--cwd", "sub dir", "make -j2"},
			want: obj{"command": "make -j2", "cwd": "sub dir"}},
		{name: "cwd after", tool: "safe_bash", args: []string{"make -j2", "--cwd", "sub dir"},
			want: obj{"command": "make -j2", "cwd": "sub dir"}},
		{name: "cwd after, value like an option", tool: "safe_bash", args: []string{"make -j2", "--cwd", "--x"},
			want: obj{"command": "make -j2", "cwd": "--x"}},
		{name: "max-tokens before", tool: "safe_bash", args: []string{"--max-tokens", "2000", "cat a.log b.log"},
			want: obj{"command": "cat a.log b.log"}, maxTokens: 2000},
		{name: "max-tokens after", tool: "safe_bash", args: []string{"cat a.log b.log", "--max-tokens=2000"},
			want: obj{"command": "cat a.log b.log"}, maxTokens: 2000},
		{name: "network after", tool: "safe_bash", args: []string{"curl -sI https://example.org", "--network"},
			want: obj{"command": "curl -sI https://example.org", "network": true}},
		{name: "several after", tool: "safe_bash",
			args: []string{"go test ./... | tail -3", "--timeout", "300", "--format", "json", "--cwd", "sub", "--max-tokens", "900"},
			want: obj{"command": "go test ./... | tail -3", "timeout": num("300"), "cwd": "sub"}, format: cli.JSON, maxTokens: 900},
		{name: "some before, some after", tool: "safe_bash", args: []string{"--timeout", "5", "cat build.log", "--format", "json"},
			want: obj{"command": "cat build.log", "timeout": num("5")}, format: cli.JSON},
		{name: "metacharacter without a blank", tool: "safe_bash", args: []string{"make&&./a.out", "--timeout", "60"},
			want: obj{"command": "make&&./a.out", "timeout": num("60")}},
		{name: "multi-line script", tool: "safe_bash", args: []string{"set -e\nmake", "--format", "json"},
			want: obj{"command": "set -e\nmake"}, format: cli.JSON},
		{name: "help after", tool: "safe_bash", args: []string{"cat build.log", "--help"}, help: true},

		// Unchanged: a program's own arguments, whatever they look like.
		{name: "ls -la", tool: "safe_bash", args: []string{"ls", "-la"}, want: obj{"command": "ls -la"}},
		{name: "go test --count=1", tool: "safe_bash", args: []string{"go", "test", "--count=1", "./..."},
			want: obj{"command": "go test --count=1 ./..."}},
		{name: "git log --format=%H", tool: "safe_bash", args: []string{"git", "log", "--format=%H"},
			want: obj{"command": "git log --format=%H"}},
		{name: "one word then our option", tool: "safe_bash", args: []string{"ls", "--format", "json"},
			want: obj{"command": "ls --format json"}},
		{name: "pytest --timeout", tool: "safe_bash", args: []string{"pytest", "--timeout", "300"},
			want: obj{"command": "pytest --timeout 300"}},
		{name: "ls --help", tool: "safe_bash", args: []string{"ls", "--help"}, want: obj{"command": "ls --help"}},
		{name: "after dash dash", tool: "safe_bash", args: []string{"--", "cmd", "--format", "json"},
			want: obj{"command": "cmd --format json"}},
		{name: "command line after dash dash", tool: "safe_bash", args: []string{"--", "cat build.log", "--format", "json"},
			want: obj{"command": "'cat build.log' --format json"}},
		{name: "not only options after", tool: "safe_bash", args: []string{"cat build.log", "--format", "json", "extra"},
			want: obj{"command": "'cat build.log' --format json extra"}},
		{name: "unknown option after", tool: "safe_bash", args: []string{"cat build.log", "--verbose"},
			want: obj{"command": "'cat build.log' --verbose"}},
		{name: "another tool's option after", tool: "safe_bash", args: []string{"cat build.log", "--offset", "5"},
			want: obj{"command": "'cat build.log' --offset 5"}},
		{name: "dash dash after", tool: "safe_bash", args: []string{"cat build.log", "--", "--format", "json"},
			want: obj{"command": "'cat build.log' -- --format json"}},
		{name: "short option after", tool: "safe_bash", args: []string{"cat build.log", "-h"},
			want: obj{"command": "'cat build.log' -h"}},
		{name: "second positional is a command line", tool: "safe_bash", args: []string{"bash", "-c", "cat build.log", "--format", "json"},
			want: obj{"command": "bash -c 'cat build.log' --format json"}},

		// Options after a command line are checked as options.
		{name: "timeout after, no value", tool: "safe_bash", args: []string{"cat build.log", "--timeout"}, class: catalog.ErrUsage},
		{name: "timeout after, not a number", tool: "safe_bash", args: []string{"cat build.log", "--timeout", "soon"}, class: catalog.ErrUsage},
		{name: "format after, bad", tool: "safe_bash", args: []string{"cat build.log", "--format", "yaml"}, class: catalog.ErrUsage},
		{name: "timeout before and after", tool: "safe_bash", args: []string{"--timeout", "5", "cat x", "--timeout", "9"}, class: catalog.ErrUsage},
		{name: "json after", tool: "safe_bash", args: []string{"cat x", "--json", `{"command":"ls"}`}, class: catalog.ErrUsage},
		{name: "continue after", tool: "safe_bash", args: []string{"cat x", "--continue", "r"}, class: catalog.ErrUsage},

		// --json is unaffected.
		{name: "json then format", tool: "safe_bash", args: []string{"--json", `{"command":"cat build.log"}`, "--format", "json"},
			want: obj{"command": "cat build.log"}, format: cli.JSON},
		{name: "format then json", tool: "safe_bash", args: []string{"--format=json", "--json", `{"command":"cat build.log","timeout":300}`},
			want: obj{"command": "cat build.log", "timeout": num("300")}, format: cli.JSON},

		// The other tools already take options anywhere.
		{name: "read format after path", tool: "safe_read", args: []string{"a b.txt", "--format", "json", "--offset", "10"},
			want: obj{"path": "a b.txt", "offset": num("10")}, format: cli.JSON},
		{name: "read max-tokens after path", tool: "safe_read", args: []string{"f", "--max-tokens", "100"},
			want: obj{"path": "f"}, maxTokens: 100},
		{name: "search format after words", tool: "memory_search", args: []string{"flaky test", "--format", "json", "--limit", "3"},
			want: obj{"query": "flaky test", "limit": num("3")}, format: cli.JSON},
		{name: "get format after id", tool: "memory_get", args: []string{"m1", "--format=json"},
			want: obj{"id": "m1"}, format: cli.JSON},
		{name: "restore format after id", tool: "checkpoint_restore", args: []string{"c1", "--format", "json", "--level", "full"},
			want: obj{"id": "c1", "level": "full"}, format: cli.JSON},
		{name: "branch budget after words", tool: "branch", args: []string{"find the parser", "--budget", "4000", "--max-tokens", "50"},
			want: obj{"description": "find the parser", "budget": num("4000")}, maxTokens: 50},
		{name: "return format after summary", tool: "return", args: []string{"found it", "--format", "json"},
			want: obj{"summary": "found it"}, format: cli.JSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := cli.Parse(tt.tool, tt.args, noStdin)
			if tt.class != nil {
				if !errors.Is(err, tt.class) {
					t.Fatalf("Parse(%q) = %+v, %v; want %s (%s)", tt.args, inv, err, tt.class.Code, tt.class.Name)
				}
				if !strings.Contains(err.Error(), "usage: ") {
					t.Errorf("usage error without the usage line: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.args, err)
			}
			if inv.Help != tt.help {
				t.Fatalf("Parse(%q): help %v, want %v", tt.args, inv.Help, tt.help)
			}
			if tt.help {
				return
			}
			if inv.Format != tt.format || inv.MaxTokens != tt.maxTokens || inv.Continue != "" {
				t.Errorf("Parse(%q): format %v, max tokens %d, continue %q; want format %v, max tokens %d",
					tt.args, inv.Format, inv.MaxTokens, inv.Continue, tt.format, tt.maxTokens)
			}
			if got := input(t, inv); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q): input %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

// commandLine mirrors the documented rule (docs/cli.md): bash splits the
// argument into words or commands.
func commandLine(s string) bool { return strings.ContainsAny(s, " \t\n|&;()<>") }

// FuzzOptionsAfterCommandLine: options that Parse takes before a command
// (opts then cmd, and opts then -- cmd) are taken the same after a command line
// given as one argument; after one word, they stay the command's arguments.
func FuzzOptionsAfterCommandLine(f *testing.F) {
	f.Add("cat build.log", "--format\x00json")
	f.Add("cat build.log", "--timeout\x00300\x00--cwd=a b")
	f.Add("make&&make install", "--max-tokens\x0010\x00--network")
	f.Add("ls", "--format\x00json")
	f.Add("git", "log\x00--format=%H")
	f.Add("x y", "--cwd\x00--")
	f.Add("x y", "--cwd")
	f.Add("x y", "--")
	f.Add("x y", "extra")
	f.Fuzz(func(t *testing.T, cmd, joined string) {
		if cmd == "" || strings.HasPrefix(cmd, "-") {
			return // an option, not a command
		}
		if !utf8.ValidString(cmd) || !utf8.ValidString(joined) {
			return // the JSON input would hold U+FFFD instead
		}
		var opts []string
		if joined != "" {
			opts = strings.Split(joined, "\x00")
		}
		after, afterErr := cli.Parse("safe_bash", append([]string{cmd}, opts...), noStdin)
		if !commandLine(cmd) {
			// One word: everything after it is the command's, as before.
			if afterErr != nil {
				t.Fatalf("Parse(%q): %v", append([]string{cmd}, opts...), afterErr)
			}
			want := cmd
			if len(opts) > 0 {
				q := []string{cli.ShellQuote(cmd)}
				for _, o := range opts {
					q = append(q, cli.ShellQuote(o))
				}
				want = strings.Join(q, " ")
			}
			if got := input(t, after)["command"]; got != want {
				t.Fatalf("Parse(%q): command %q, want %q", append([]string{cmd}, opts...), got, want)
			}
			return
		}
		// The options before the command must be taken as options, the command
		// kept whole, with and without "--".
		var before *cli.Invocation
		for _, args := range [][]string{append(append([]string{}, opts...), cmd), append(append([]string{}, opts...), "--", cmd)} {
			inv, err := cli.Parse("safe_bash", args, noStdin)
			if err != nil || inv.Help || inv.Continue != "" || input(t, inv)["command"] != cmd {
				return
			}
			before = inv
		}
		if afterErr != nil {
			t.Fatalf("Parse(%q): %v; before the command they parse as %+v", append([]string{cmd}, opts...), afterErr, before)
		}
		if after.Format != before.Format || after.MaxTokens != before.MaxTokens || string(after.Input) != string(before.Input) {
			t.Fatalf("options after %q: %+v (input %s); before it: %+v (input %s)", cmd, after, after.Input, before, before.Input)
		}
	})
}
