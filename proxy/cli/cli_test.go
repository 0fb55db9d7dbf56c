package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/cli"
	"github.com/contextd/contextd/toolspec"
)

func pipe(s string) cli.Stdin { return cli.Stdin{R: strings.NewReader(s)} }

var (
	noStdin  = cli.Stdin{}
	terminal = cli.Stdin{R: strings.NewReader("typed by a person"), IsTerminal: true}
)

// input decodes an invocation's JSON input.
func input(t *testing.T, inv *cli.Invocation) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(inv.Input))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("input %q is not a JSON object: %v", inv.Input, err)
	}
	return m
}

func TestParse(t *testing.T) {
	type obj = map[string]any
	num := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name   string
		tool   string
		args   []string
		stdin  cli.Stdin
		want   obj            // decoded input; nil when not checked
		format cli.Format     // expected format
		class  *catalog.Class // expected error class
		check  func(*cli.Invocation) bool
	}{
		// safe_bash short forms.
		{name: "one arg verbatim", tool: "safe_bash", args: []string{"go test ./... | tail -3 && echo $HOME"},
			want: obj{"command": "go test ./... | tail -3 && echo $HOME"}},
		{name: "one arg with quotes kept", tool: "safe_bash", args: []string{`echo "a  b" 'c'`},
			want: obj{"command": `echo "a  b" 'c'`}},
		{name: "several args quoted", tool: "safe_bash", args: []string{"echo", "a b", "$HOME"},
			want: obj{"command": `echo 'a b' '$HOME'`}},
		{name: "flags after the command belong to it", tool: "safe_bash", args: []string{"ls", "-la"},
			want: obj{"command": "ls -la"}},
		{name: "--help after the command belongs to it", tool: "safe_bash", args: []string{"ls", "--help"},
			want: obj{"command": "ls --help"}},
		{name: "--json after the command belongs to it", tool: "safe_bash", args: []string{"echo", "--json", "{}"},
			want: obj{"command": "echo --json '{}'"}},
		{name: "dash dash", tool: "safe_bash", args: []string{"--", "make"}, want: obj{"command": "make"}},
		{name: "dash dash then dashes", tool: "safe_bash", args: []string{"--", "--version"}, want: obj{"command": "--version"}},
		{name: "dash dash then dash dash", tool: "safe_bash", args: []string{"--", "echo", "--"}, want: obj{"command": "echo --"}},
		{name: "timeout and cwd", tool: "safe_bash", args: []string{"--timeout", "120", "--cwd", "sub/dir", "--", "make"},
			want: obj{"command": "make", "timeout": num("120"), "cwd": "sub/dir"}},
		{name: "flag=value", tool: "safe_bash", args: []string{"--timeout=5", "--cwd=a b", "true"},
			want: obj{"command": "true", "timeout": num("5"), "cwd": "a b"}},
		{name: "flag=value with = in value", tool: "safe_bash", args: []string{"--cwd=a=b", "true"},
			want: obj{"command": "true", "cwd": "a=b"}},
		{name: "lone dash is positional", tool: "safe_bash", args: []string{"-"}, want: obj{"command": "-"}},
		{name: "script on stdin", tool: "safe_bash", stdin: pipe("set -e\necho one\necho two\n"),
			want: obj{"command": "set -e\necho one\necho two\n"}},
		{name: "args win over stdin", tool: "safe_bash", args: []string{"true"}, stdin: pipe("false"),
			want: obj{"command": "true"}},
		{name: "flags with stdin script", tool: "safe_bash", args: []string{"--timeout", "3"}, stdin: pipe("sleep 1"),
			want: obj{"command": "sleep 1", "timeout": num("3")}},

		// safe_bash errors.
		{name: "no command, terminal", tool: "safe_bash", stdin: terminal, class: catalog.ErrUsage},
		{name: "no command, no stdin", tool: "safe_bash", stdin: noStdin, class: catalog.ErrUsage},
		{name: "empty stdin", tool: "safe_bash", stdin: pipe(" \n\t"), class: catalog.ErrUsage},
		{name: "stdin not UTF-8", tool: "safe_bash", stdin: pipe("echo \xff\xfe"), class: catalog.ErrBadInput},
		{name: "stdin read error", tool: "safe_bash", stdin: cli.Stdin{R: iotest.ErrReader(errors.New("EIO"))}, class: catalog.ErrIO},
		{name: "only dash dash", tool: "safe_bash", args: []string{"--"}, stdin: terminal, class: catalog.ErrUsage},
		{name: "timeout zero", tool: "safe_bash", args: []string{"--timeout", "0", "true"}, class: catalog.ErrUsage},
		{name: "timeout negative", tool: "safe_bash", args: []string{"--timeout=-5", "true"}, class: catalog.ErrUsage},
		{name: "timeout not a number", tool: "safe_bash", args: []string{"--timeout", "soon", "true"}, class: catalog.ErrUsage},
		{name: "timeout with unit", tool: "safe_bash", args: []string{"--timeout", "10s", "true"}, class: catalog.ErrUsage},
		{name: "timeout twice", tool: "safe_bash", args: []string{"--timeout", "1", "--timeout", "2", "true"}, class: catalog.ErrUsage},
		{name: "timeout missing value", tool: "safe_bash", args: []string{"--timeout"}, class: catalog.ErrUsage},
		{name: "unknown long option", tool: "safe_bash", args: []string{"--verbose", "true"}, class: catalog.ErrUsage},
		{name: "unknown short option", tool: "safe_bash", args: []string{"-x", "true"}, class: catalog.ErrUsage},
		{name: "single-dash long option", tool: "safe_bash", args: []string{"-timeout", "5", "true"}, class: catalog.ErrUsage},
		{name: "option of another tool", tool: "safe_bash", args: []string{"--offset", "5", "true"}, class: catalog.ErrUsage},

		// safe_read.
		{name: "read path", tool: "safe_read", args: []string{"path/to/file"}, want: obj{"path": "path/to/file"}},
		{name: "read offset limit after path", tool: "safe_read", args: []string{"f", "--offset", "10", "--limit", "5"},
			want: obj{"path": "f", "offset": num("10"), "limit": num("5")}},
		{name: "read offset before path", tool: "safe_read", args: []string{"--offset=3", "f"},
			want: obj{"path": "f", "offset": num("3")}},
		{name: "read path after dash dash", tool: "safe_read", args: []string{"--", "--weird"}, want: obj{"path": "--weird"}},
		{name: "read path with spaces", tool: "safe_read", args: []string{"a b/c d.txt"}, want: obj{"path": "a b/c d.txt"}},
		{name: "read stdin ignored", tool: "safe_read", args: []string{"f"}, stdin: pipe("junk"), want: obj{"path": "f"}},
		{name: "read no path", tool: "safe_read", class: catalog.ErrUsage},
		{name: "read two paths", tool: "safe_read", args: []string{"a", "b"}, class: catalog.ErrUsage},
		{name: "read offset zero", tool: "safe_read", args: []string{"f", "--offset", "0"}, class: catalog.ErrUsage},
		{name: "read limit junk", tool: "safe_read", args: []string{"f", "--limit", "all"}, class: catalog.ErrUsage},
		{name: "read limit missing value", tool: "safe_read", args: []string{"f", "--limit"}, class: catalog.ErrUsage},
		{name: "read unknown option", tool: "safe_read", args: []string{"f", "--lines", "3"}, class: catalog.ErrUsage},
		{name: "read timeout is not its option", tool: "safe_read", args: []string{"--timeout", "3", "f"}, class: catalog.ErrUsage},

		// safe_write.
		{name: "write from stdin", tool: "safe_write", args: []string{"out.txt"}, stdin: pipe("line 1\nline 2\n"),
			want: obj{"path": "out.txt", "content": "line 1\nline 2\n"}},
		{name: "write empty stdin is an empty file", tool: "safe_write", args: []string{"out.txt"}, stdin: pipe(""),
			want: obj{"path": "out.txt", "content": ""}},
		{name: "write --content", tool: "safe_write", args: []string{"out.txt", "--content", "text $x 'q'"},
			want: obj{"path": "out.txt", "content": "text $x 'q'"}},
		{name: "write --content wins over stdin", tool: "safe_write", args: []string{"--content=inline", "out.txt"},
			stdin: pipe("piped"), want: obj{"path": "out.txt", "content": "inline"}},
		{name: "write --content empty", tool: "safe_write", args: []string{"out.txt", "--content="},
			want: obj{"path": "out.txt", "content": ""}},
		{name: "write --content from terminal", tool: "safe_write", args: []string{"out.txt", "--content", "x"}, stdin: terminal,
			want: obj{"path": "out.txt", "content": "x"}},
		{name: "write terminal, no content", tool: "safe_write", args: []string{"out.txt"}, stdin: terminal, class: catalog.ErrUsage},
		{name: "write no stdin, no content", tool: "safe_write", args: []string{"out.txt"}, class: catalog.ErrUsage},
		{name: "write no path", tool: "safe_write", stdin: pipe("x"), class: catalog.ErrUsage},
		{name: "write two paths", tool: "safe_write", args: []string{"a", "b"}, stdin: pipe("x"), class: catalog.ErrUsage},
		{name: "write stdin not UTF-8", tool: "safe_write", args: []string{"a"}, stdin: pipe("\xc3\x28"), class: catalog.ErrBadInput},
		{name: "write content twice", tool: "safe_write", args: []string{"a", "--content", "x", "--content", "y"}, class: catalog.ErrUsage},

		// memory_search.
		{name: "search words", tool: "memory_search", args: []string{"flaky", "sqlite", "test"},
			want: obj{"query": "flaky sqlite test"}},
		{name: "search one arg", tool: "memory_search", args: []string{"how to run e2e", "--limit", "5"},
			want: obj{"query": "how to run e2e", "limit": num("5")}},
		{name: "search dashed word after --", tool: "memory_search", args: []string{"--limit=2", "--", "go", "test", "-race"},
			want: obj{"query": "go test -race", "limit": num("2")}},
		{name: "search ignores stdin", tool: "memory_search", args: []string{"q"}, stdin: pipe("junk"), want: obj{"query": "q"}},
		{name: "search no words", tool: "memory_search", stdin: pipe("from stdin"), class: catalog.ErrUsage},
		{name: "search limit zero", tool: "memory_search", args: []string{"q", "--limit", "0"}, class: catalog.ErrUsage},
		{name: "search unknown option", tool: "memory_search", args: []string{"q", "--global"}, class: catalog.ErrUsage},

		// memory_get.
		{name: "get id", tool: "memory_get", args: []string{"0b6f-11"}, want: obj{"id": "0b6f-11"}},
		{name: "get no id", tool: "memory_get", class: catalog.ErrUsage},
		{name: "get two ids", tool: "memory_get", args: []string{"a", "b"}, class: catalog.ErrUsage},
		{name: "get option", tool: "memory_get", args: []string{"a", "--limit", "1"}, class: catalog.ErrUsage},

		// memory_feedback.
		{name: "feedback helpful", tool: "memory_feedback", args: []string{"m1", "--helpful"},
			want: obj{"id": "m1", "helpful": true}},
		{name: "feedback unhelpful first", tool: "memory_feedback", args: []string{"--unhelpful", "m1"},
			want: obj{"id": "m1", "helpful": false}},
		{name: "feedback said twice", tool: "memory_feedback", args: []string{"m1", "--helpful", "--helpful"},
			want: obj{"id": "m1", "helpful": true}},
		{name: "feedback both", tool: "memory_feedback", args: []string{"m1", "--helpful", "--unhelpful"}, class: catalog.ErrUsage},
		{name: "feedback neither", tool: "memory_feedback", args: []string{"m1"}, class: catalog.ErrUsage},
		{name: "feedback no id", tool: "memory_feedback", args: []string{"--helpful"}, class: catalog.ErrUsage},
		{name: "feedback with value", tool: "memory_feedback", args: []string{"m1", "--helpful=no"}, class: catalog.ErrUsage},

		// memory_store.
		{name: "store from stdin", tool: "memory_store",
			args:  []string{"--title", "T", "--description", "D.", "--outcome", "success", "--tag", "Go", "--tag", "sqlite,ci", "--global"},
			stdin: pipe("the lesson\n"),
			want: obj{"title": "T", "description": "D.", "outcome": "success", "tags": []any{"Go", "sqlite", "ci"},
				"scope": "global", "content": "the lesson\n"}},
		{name: "store --content", tool: "memory_store",
			args: []string{"--title=T", "--description=D", "--outcome=failure", "--content", "x"}, stdin: terminal,
			want: obj{"title": "T", "description": "D", "outcome": "failure", "content": "x"}},
		{name: "store no content", tool: "memory_store", args: []string{"--title", "T", "--description", "D", "--outcome", "success"},
			stdin: terminal, class: catalog.ErrUsage},
		{name: "store empty stdin", tool: "memory_store", args: []string{"--title", "T", "--description", "D", "--outcome", "success"},
			stdin: pipe(" \n"), class: catalog.ErrUsage},
		{name: "store no title", tool: "memory_store", args: []string{"--description", "D", "--outcome", "success", "--content", "x"},
			class: catalog.ErrUsage},
		{name: "store no outcome", tool: "memory_store", args: []string{"--title", "T", "--description", "D", "--content", "x"},
			class: catalog.ErrUsage},
		{name: "store positional", tool: "memory_store", args: []string{"--title", "T", "--description", "D", "--outcome", "success", "x"},
			class: catalog.ErrUsage},
		{name: "store empty tag", tool: "memory_store", args: []string{"--tag", ",", "--title", "T"}, class: catalog.ErrUsage},
		{name: "store title twice", tool: "memory_store", args: []string{"--title", "T", "--title", "U"}, class: catalog.ErrUsage},

		// checkpoint_save.
		{name: "save all", tool: "checkpoint_save", args: []string{"--summary", "S", "--name", "N", "--context", "C"},
			stdin: pipe("everything\n"), want: obj{"summary": "S", "name": "N", "context": "C", "full": "everything\n"}},
		{name: "save empty stdin", tool: "checkpoint_save", args: []string{"--summary", "S"}, stdin: pipe(""), want: obj{"summary": "S"}},
		{name: "save terminal", tool: "checkpoint_save", args: []string{"--summary", "S"}, stdin: terminal, want: obj{"summary": "S"}},
		{name: "save no summary", tool: "checkpoint_save", args: []string{"--name", "N"}, class: catalog.ErrUsage},
		{name: "save positional", tool: "checkpoint_save", args: []string{"--summary", "S", "extra"}, class: catalog.ErrUsage},
		{name: "save stdin not UTF-8", tool: "checkpoint_save", args: []string{"--summary", "S"}, stdin: pipe("\xff"), class: catalog.ErrBadInput},

		// checkpoint_restore and checkpoint_list.
		{name: "restore latest", tool: "checkpoint_restore", want: obj{}},
		{name: "restore id level", tool: "checkpoint_restore", args: []string{"c1", "--level", "full"}, want: obj{"id": "c1", "level": "full"}},
		{name: "restore --latest", tool: "checkpoint_restore", args: []string{"--latest", "--level=summary"},
			want: obj{"latest": true, "level": "summary"}},
		{name: "restore two ids", tool: "checkpoint_restore", args: []string{"a", "b"}, class: catalog.ErrUsage},
		{name: "list", tool: "checkpoint_list", want: obj{}},
		{name: "list limit", tool: "checkpoint_list", args: []string{"--limit", "20"}, want: obj{"limit": num("20")}},
		{name: "list positional", tool: "checkpoint_list", args: []string{"5"}, class: catalog.ErrUsage},

		// branch and return.
		{name: "branch words", tool: "branch", args: []string{"find", "the", "parser", "--budget", "4000"},
			want: obj{"description": "find the parser", "budget": num("4000")}},
		{name: "branch one arg", tool: "branch", args: []string{"find the parser"}, want: obj{"description": "find the parser"}},
		{name: "branch no description", tool: "branch", args: []string{"--budget", "100"}, stdin: pipe("x"), class: catalog.ErrUsage},
		{name: "branch budget junk", tool: "branch", args: []string{"x", "--budget", "lots"}, class: catalog.ErrUsage},
		{name: "return words", tool: "return", args: []string{"found", "it", "in", "a.go"}, want: obj{"summary": "found it in a.go"}},
		{name: "return id", tool: "return", args: []string{"--id", "b1", "done"}, want: obj{"summary": "done", "id": "b1"}},
		{name: "return from stdin", tool: "return", stdin: pipe("line 1\nline 2\n"), want: obj{"summary": "line 1\nline 2\n"}},
		{name: "return nothing", tool: "return", stdin: terminal, class: catalog.ErrUsage},
		{name: "return empty stdin", tool: "return", stdin: pipe("\n"), class: catalog.ErrUsage},

		// --json.
		{name: "json", tool: "safe_bash", args: []string{"--json", `{"command":"ls","timeout":5}`},
			want: obj{"command": "ls", "timeout": num("5")}},
		{name: "json=", tool: "safe_read", args: []string{`--json={"path":"a=b"}`}, want: obj{"path": "a=b"}},
		{name: "json with format", tool: "safe_read", args: []string{"--format", "json", "--json", `{"path":"f"}`},
			want: obj{"path": "f"}, format: cli.JSON},
		{name: "json passed through unvalidated", tool: "safe_read", args: []string{"--json", `{"bogus":1}`},
			want: obj{"bogus": num("1")}},
		{name: "json not valid", tool: "safe_bash", args: []string{"--json", `{"command":`}, class: catalog.ErrBadInput},
		{name: "json empty", tool: "safe_bash", args: []string{"--json", ""}, class: catalog.ErrBadInput},
		{name: "json not an object", tool: "safe_bash", args: []string{"--json", `["ls"]`}, class: catalog.ErrBadInput},
		{name: "json string", tool: "safe_bash", args: []string{"--json", `"ls"`}, class: catalog.ErrBadInput},
		{name: "json null", tool: "safe_bash", args: []string{"--json", `null`}, class: catalog.ErrBadInput},
		{name: "json plus positional", tool: "safe_bash", args: []string{"--json", `{"command":"ls"}`, "pwd"}, class: catalog.ErrUsage},
		{name: "json plus tool option", tool: "safe_bash", args: []string{"--timeout", "5", "--json", `{"command":"ls"}`}, class: catalog.ErrUsage},
		{name: "json plus path", tool: "safe_read", args: []string{"f", "--json", `{"path":"f"}`}, class: catalog.ErrUsage},
		{name: "json missing value", tool: "safe_read", args: []string{"--json"}, class: catalog.ErrUsage},

		// --format.
		{name: "format text", tool: "safe_read", args: []string{"--format", "text", "f"}, want: obj{"path": "f"}, format: cli.Text},
		{name: "format json", tool: "safe_read", args: []string{"f", "--format=json"}, want: obj{"path": "f"}, format: cli.JSON},
		{name: "format bash before command", tool: "safe_bash", args: []string{"--format", "json", "ls"}, want: obj{"command": "ls"}, format: cli.JSON},
		{name: "format bash after command is the command's", tool: "safe_bash", args: []string{"ls", "--format", "json"},
			want: obj{"command": "ls --format json"}, format: cli.Text},
		{name: "format bad", tool: "safe_read", args: []string{"--format", "yaml", "f"}, class: catalog.ErrUsage},
		{name: "format missing value", tool: "safe_read", args: []string{"f", "--format"}, class: catalog.ErrUsage},

		// --continue.
		{name: "continue", tool: "safe_bash", args: []string{"--continue", "ref-123"},
			check: func(inv *cli.Invocation) bool { return inv.Continue == "ref-123" && inv.Input == nil }},
		{name: "continue with format", tool: "safe_read", args: []string{"--continue=r", "--format", "json"},
			check: func(inv *cli.Invocation) bool {
				return inv.Continue == "r" && inv.Format == cli.JSON && inv.Input == nil
			}},
		{name: "continue ignores stdin", tool: "safe_write", args: []string{"--continue", "r"}, stdin: pipe("x"),
			check: func(inv *cli.Invocation) bool { return inv.Continue == "r" && inv.Input == nil }},
		{name: "continue empty", tool: "safe_bash", args: []string{"--continue", ""}, class: catalog.ErrUsage},
		{name: "continue plus command", tool: "safe_bash", args: []string{"--continue", "r", "ls"}, class: catalog.ErrUsage},
		{name: "continue plus option", tool: "safe_bash", args: []string{"--timeout", "3", "--continue", "r"}, class: catalog.ErrUsage},
		{name: "continue plus json", tool: "safe_bash", args: []string{"--continue", "r", "--json", "{}"}, class: catalog.ErrUsage},
		{name: "continue plus path", tool: "safe_read", args: []string{"f", "--continue", "r"}, class: catalog.ErrUsage},

		// --help.
		{name: "help", tool: "safe_bash", args: []string{"--help"}, check: func(inv *cli.Invocation) bool { return inv.Help }},
		{name: "-h", tool: "safe_read", args: []string{"-h"}, check: func(inv *cli.Invocation) bool { return inv.Help }},
		{name: "help wins over bad args", tool: "safe_read", args: []string{"a", "b", "--help"}, check: func(inv *cli.Invocation) bool { return inv.Help }},
		{name: "help needs no stdin", tool: "safe_write", args: []string{"--help"}, stdin: terminal, check: func(inv *cli.Invocation) bool { return inv.Help }},

		// Unknown tool.
		{name: "unknown tool", tool: "safe_rm", args: []string{"x"}, class: catalog.ErrUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.stdin.R == nil && !tt.stdin.IsTerminal {
				tt.stdin = noStdin
			}
			inv, err := cli.Parse(tt.tool, tt.args, tt.stdin)
			if tt.class != nil {
				if !errors.Is(err, tt.class) {
					t.Fatalf("Parse(%q) = %v, %v; want %s (%s)", tt.args, inv, err, tt.class.Code, tt.class.Name)
				}
				if inv != nil {
					t.Errorf("an invocation came back with the error: %+v", inv)
				}
				if tt.class == catalog.ErrUsage && tt.tool != "safe_rm" && !strings.Contains(err.Error(), "usage: ") {
					t.Errorf("usage error without the usage line: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.args, err)
			}
			if inv.Tool != tt.tool {
				t.Errorf("tool %q", inv.Tool)
			}
			if tt.check != nil {
				if !tt.check(inv) {
					t.Errorf("unexpected invocation %+v (input %s)", inv, inv.Input)
				}
				return
			}
			if inv.Help || inv.Continue != "" {
				t.Errorf("unexpected help/continue: %+v", inv)
			}
			if inv.Format != tt.format {
				t.Errorf("format %v, want %v", inv.Format, tt.format)
			}
			if got := input(t, inv); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("input %v, want %v", got, tt.want)
			}
		})
	}
}

// bashWords runs `printf '%s\0' COMMAND` in bash and returns the words bash saw.
func bashWords(t *testing.T, command string) []string {
	t.Helper()
	out, err := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", `printf '%s\0' `+command).Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", command, err)
	}
	s := string(out)
	if !strings.HasSuffix(s, "\x00") {
		t.Fatalf("bash output %q", s)
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

// Several arguments are an argv: each must reach bash as exactly one word,
// unexpanded.
func TestShortFormArgvSurvivesBash(t *testing.T) {
	argvs := [][]string{
		{"echo", "hello world"},
		{"printf", "%s\n", "it's", `say "hi"`, `back\slash`},
		{"echo", "$HOME", "${PATH}", "$(id -u)", "`id`", "$((1+1))"},
		{"echo", "*", "?", "[a-z]", "~", "~root", "{a,b}", "a*b"},
		{"echo", "a;b", "a|b", "a&b", "a>b", "a<b", "(x)", "!", "#comment", "a#b"},
		{"echo", "", "''", `""`, " ", "\t", "\n", "two\nlines"},
		{"echo", "'", "''''", `'\''`, `\`, `\'`, "a'b'c"},
		{"echo", "-n", "--", "-e", "\\x41", "%d"},
		{"echo", "ünïcødé", "日本語", "emoji 🙂", "\x1b[31mred"},
		{"echo", "key=value", "@at", "%pct", "+plus", ",comma", ":colon", "a/b/./c"},
	}
	for _, argv := range argvs {
		inv, err := cli.Parse("safe_bash", argv, noStdin)
		if err != nil {
			t.Fatalf("Parse(%q): %v", argv, err)
		}
		cmd, _ := input(t, inv)["command"].(string)
		got := bashWords(t, cmd)
		if !reflect.DeepEqual(got, argv) {
			t.Errorf("argv %q became command %q, which bash splits into %q", argv, cmd, got)
		}
	}
	// One argument is a command line: bash interprets it.
	inv, err := cli.Parse("safe_bash", []string{`echo "a  b" $((2+3))`}, noStdin)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := input(t, inv)["command"].(string)
	if got := bashWords(t, cmd); !reflect.DeepEqual(got, []string{"echo", "a  b", "5"}) {
		t.Errorf("single argument not kept as shell syntax: %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"ls", "ls"},
		{"./a-b_c/d.e:f=g@h%i+j,k", "./a-b_c/d.e:f=g@h%i+j,k"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME", "'$HOME'"},
		{"~", "'~'"},
		{"*", "'*'"},
		{"-", "-"},
		{"ü", "'ü'"},
		{"a\nb", "'a\nb'"},
	}
	for _, tt := range tests {
		if got := cli.ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Every short flag the parser knows is a property of the tool's schema, and every
// short form produces only schema properties: the CLI cannot drift from the schema.
func TestShortFormsUseSchemaProperties(t *testing.T) {
	cases := map[string][]string{
		"safe_bash":          {"--timeout", "5", "--cwd", "d", "--network", "ls"},
		"safe_read":          {"f", "--offset", "1", "--limit", "2"},
		"safe_write":         {"f", "--content", "x"},
		"memory_search":      {"q", "--limit", "2"},
		"memory_get":         {"id"},
		"memory_store":       {"--title", "t", "--description", "d", "--outcome", "success", "--tag", "x", "--global", "--content", "c"},
		"memory_feedback":    {"id", "--unhelpful"},
		"checkpoint_save":    {"--summary", "s", "--name", "n", "--context", "c"}, // full: from stdin
		"checkpoint_restore": {"id", "--latest", "--level", "full"},
		"checkpoint_list":    {"--limit", "3"},
		"branch":             {"d", "--budget", "200"},
		"return":             {"s", "--id", "b"},
	}
	stdin := map[string]string{"checkpoint_save": "full"}
	for _, tool := range toolspec.Names() {
		if _, ok := cases[tool]; !ok {
			t.Errorf("%s: no short form case", tool)
		}
	}
	for tool, args := range cases {
		spec, ok := toolspec.Get(tool)
		if !ok {
			t.Fatalf("no toolspec for %s", tool)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(spec.Schema, &schema); err != nil {
			t.Fatalf("%s schema: %v", tool, err)
		}
		in := noStdin
		if s, ok := stdin[tool]; ok {
			in = pipe(s)
		}
		inv, err := cli.Parse(tool, args, in)
		if err != nil {
			t.Fatalf("%s %q: %v", tool, args, err)
		}
		got := input(t, inv)
		for k := range got {
			if _, ok := schema.Properties[k]; !ok {
				t.Errorf("%s short form produced %q, not in schema.json", tool, k)
			}
		}
		if len(got) != len(schema.Properties) {
			t.Errorf("%s: the short form %q covers %d of the %d schema properties", tool, args, len(got), len(schema.Properties))
		}
		if _, ok := cli.Usage[tool]; !ok {
			t.Errorf("%s has no usage line", tool)
		}
	}
}

// FuzzParse: Parse never panics, classifies every error, and a successful parse
// that runs the tool carries a JSON object.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), "ls\x00-la", "", false)
	f.Add(uint8(0), "--timeout\x00120\x00--cwd\x00sub\x00--\x00make", "", false)
	f.Add(uint8(0), "", "echo from stdin\n", false)
	f.Add(uint8(0), "--json\x00{\"command\":\"x\"}", "", true)
	f.Add(uint8(0), "--json\x00[1]", "", true)
	f.Add(uint8(0), "--continue\x00abc\x00--format=json", "", true)
	f.Add(uint8(1), "f\x00--offset\x0010\x00--limit=5", "", true)
	f.Add(uint8(1), "--help", "", true)
	f.Add(uint8(1), "-x", "", true)
	f.Add(uint8(2), "f", "content\xff", false)
	f.Add(uint8(2), "f\x00--content\x00", "", true)
	f.Add(uint8(2), "---json=\x00{}", "", true)
	f.Add(uint8(3), "x", "", false)
	f.Add(uint8(4), "a\x00b\x00--limit\x003", "", true)
	f.Add(uint8(6), "--title=t\x00--description\x00d\x00--outcome\x00success\x00--tag\x00a,b", "content", false)
	f.Add(uint8(7), "m\x00--helpful\x00--unhelpful", "", true)
	f.Add(uint8(8), "--summary\x00s", "full", false)
	f.Add(uint8(12), "", "summary", false)
	// The first four keep their indexes (the seeds above use them); the state
	// tools follow in toolspec order.
	tools := []string{"safe_bash", "safe_read", "safe_write", "nope"}
	for _, n := range toolspec.Names() {
		if !slices.Contains(tools, n) {
			tools = append(tools, n)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, joined, stdin string, isTerm bool) {
		tool := tools[int(which)%len(tools)]
		var args []string
		if joined != "" {
			args = strings.Split(joined, "\x00")
		}
		inv, err := cli.Parse(tool, args, cli.Stdin{R: strings.NewReader(stdin), IsTerminal: isTerm})
		if err != nil {
			if inv != nil {
				t.Fatalf("invocation and error together: %+v, %v", inv, err)
			}
			switch c := catalog.ClassOf(err); c {
			case catalog.ErrUsage, catalog.ErrBadInput, catalog.ErrUnknownTool:
			default:
				t.Fatalf("Parse(%s, %q): error of class %s: %v", tool, args, c.Code, err)
			}
			return
		}
		if inv.Tool != tool {
			t.Fatalf("tool %q, want %q", inv.Tool, tool)
		}
		if inv.Help {
			return
		}
		if inv.Continue != "" {
			if inv.Input != nil {
				t.Fatalf("continuation with input %q", inv.Input)
			}
			return
		}
		if !json.Valid(inv.Input) {
			t.Fatalf("Parse(%s, %q) produced invalid JSON %q", tool, args, inv.Input)
		}
		var m map[string]any
		if err := json.Unmarshal(inv.Input, &m); err != nil || m == nil {
			t.Fatalf("Parse(%s, %q) produced %q, not a JSON object: %v", tool, args, inv.Input, err)
		}
	})
}

// FuzzShellQuote: ShellQuote(s) is one bash word whose value is s. The quoting is
// checked against bash itself; with -short (and while fuzzing with -short) only the
// structure is checked, which needs no process per input.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "plain", "a b", "it's", "'", "$x `y` \\z", "\n", "ü\x7f\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // no argv word or command line can hold a NUL byte
		}
		q := cli.ShellQuote(s)
		if got, ok := unquote(q); !ok || got != s {
			t.Fatalf("ShellQuote(%q) = %q, which reads back as %q (well-formed: %v)", s, q, got, ok)
		}
		if testing.Short() {
			return
		}
		out, err := exec.Command("/bin/bash", "--norc", "--noprofile", "-c", "printf %s "+q).Output()
		if err != nil {
			t.Fatalf("bash -c 'printf %%s %s': %v", q, err)
		}
		if string(out) != s {
			t.Fatalf("ShellQuote(%q) = %q; bash reads %q", s, q, out)
		}
	})
}

// unquote reads one word made only of bare safe characters, '...' sections and \'
// (the only forms ShellQuote may emit), and reports whether q was exactly that.
func unquote(q string) (string, bool) {
	if q == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(q); {
		switch {
		case q[i] == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(q[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(q[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		case strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,", q[i]) >= 0:
			b.WriteByte(q[i])
			i++
		default:
			return "", false
		}
	}
	return b.String(), true
}
