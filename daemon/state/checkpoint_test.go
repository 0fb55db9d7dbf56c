package state

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
)

// tokens returns a text of exactly n tokens.
func tokens(t *testing.T, n int) string {
	t.Helper()
	c := budget.Default()
	s := strings.Repeat(" apple", n)
	if got := c.Count([]byte(s)); got != n {
		t.Fatalf("%d tokens, want %d", got, n)
	}
	return s
}

// savedID returns the id checkpoint_save printed ("saved checkpoint ID: ...").
func savedID(t *testing.T, out string) string {
	t.Helper()
	if !strings.HasPrefix(out, "saved checkpoint ") {
		t.Fatalf("checkpoint_save printed %q", out)
	}
	return word(t, out, 2)
}

func TestCheckpointLevelBudgets(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	tests := []struct {
		name  string
		input obj
		err   string // "" when accepted
	}{
		{"summary at the limit", obj{"summary": tokens(t, 300)}, ""},
		{"summary over", obj{"summary": tokens(t, 301)}, "summary is 301 tokens, the limit is 300"},
		{"context at the limit", obj{"summary": "s", "context": tokens(t, 3000)}, ""},
		{"context over", obj{"summary": "s", "context": tokens(t, 3001)}, "context is 3001 tokens, the limit is 3000"},
		{"full is not counted", obj{"summary": "s", "full": strings.Repeat(" apple", 1<<20)}, ""},
		{"full over 16 MiB", obj{"summary": "s", "full": strings.Repeat("x", MaxFull+1)}, "full is 16777217 bytes, at most 16777216"},
	}
	for _, tt := range tests {
		out, err := call(t, env, "checkpoint_save", tt.input)
		if tt.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			} else {
				savedID(t, out)
			}
			continue
		}
		if !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want ErrBadInput saying %q", tt.name, err, tt.err)
		}
	}
}

func TestCheckpointRestoreLevels(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/work/p", "s")
	other := newEnv(st, "/work/q", "s")

	if _, err := call(t, env, "checkpoint_restore", obj{}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("restore with no checkpoint: %v", err)
	}
	if out := mustCall(t, env, "checkpoint_list", obj{}); !strings.HasPrefix(out, "no checkpoints") {
		t.Errorf("empty list: %q", out)
	}

	old := savedID(t, mustCall(t, env, "checkpoint_save", obj{"summary": "old state"}))
	time.Sleep(10 * time.Millisecond)
	out := mustCall(t, env, "checkpoint_save", obj{"name": "parser refactor", "summary": "Refactoring the parser.\nHalf done.",
		"context": "Files: parse.go, lex.go.\nNext: error recovery.", "full": "the whole transcript\n"})
	id := savedID(t, out)
	if want := fmt.Sprintf("saved checkpoint %s: summary %d, context %d tokens, full 21 bytes\n", id,
		budget.Default().Count([]byte("Refactoring the parser.\nHalf done.")),
		budget.Default().Count([]byte("Files: parse.go, lex.go.\nNext: error recovery."))); out != want {
		t.Errorf("save printed %q, want %q", out, want)
	}
	header := regexp.MustCompile(`^checkpoint ` + regexp.QuoteMeta(id) + `  \d{4}-\d\d-\d\d \d\d:\d\d UTC  parser refactor\n`)
	summary := "summary:\nRefactoring the parser.\nHalf done.\n"
	context := "context:\nFiles: parse.go, lex.go.\nNext: error recovery.\n"
	full := "full:\nthe whole transcript\n"
	tests := []struct {
		input obj
		want  string // after the header
	}{
		{obj{}, summary + context},
		{obj{"latest": true}, summary + context},
		{obj{"level": "summary"}, summary},
		{obj{"id": id, "level": "context"}, summary + context},
		{obj{"id": id, "level": "full"}, summary + context + full},
	}
	for _, tt := range tests {
		out := mustCall(t, env, "checkpoint_restore", tt.input)
		loc := header.FindStringIndex(out)
		if loc == nil || out[loc[1]:] != tt.want {
			t.Errorf("restore %v:\n%s\nwant the header and\n%s", tt.input, out, tt.want)
		}
	}
	out = mustCall(t, env, "checkpoint_restore", obj{"id": old, "level": "full"})
	if !strings.HasSuffix(out, "summary:\nold state\ncontext:\n(none saved)\nfull:\n(none saved)\n") {
		t.Errorf("restore of a bare checkpoint:\n%s", out)
	}

	// Another project sees none of it.
	if _, err := call(t, other, "checkpoint_restore", obj{"id": id}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("restore from another project: %v", err)
	}
	if _, err := call(t, other, "checkpoint_restore", obj{}); !errors.Is(err, catalog.ErrNoRecord) {
		t.Errorf("latest from another project: %v", err)
	}

	list := mustCall(t, env, "checkpoint_list", obj{})
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], id+"  ") || !strings.HasSuffix(lines[0], "  parser refactor: Refactoring the parser.") ||
		!strings.HasPrefix(lines[1], old+"  ") || !strings.HasSuffix(lines[1], "  old state") {
		t.Errorf("list:\n%s", list)
	}
	if out := mustCall(t, env, "checkpoint_list", obj{"limit": 1}); strings.Count(out, "\n") != 1 {
		t.Errorf("list --limit 1:\n%s", out)
	}
}

func TestCheckpointListCompact(t *testing.T) {
	st := openStore(t)
	env := newEnv(st, "/p", "s")
	for i := range 50 {
		mustCall(t, env, "checkpoint_save", obj{"name": fmt.Sprintf("step %d", i),
			"summary": strings.Repeat(fmt.Sprintf("A long first line of summary number %d that goes on and on. ", i), 8)})
	}
	out := mustCall(t, env, "checkpoint_list", obj{"limit": 50})
	n := budget.Default().Count([]byte(out))
	if n > ListTokens {
		t.Errorf("list of %d tokens", n)
	}
	t.Logf("50 checkpoints: %d tokens, %d lines; default list: %d tokens", n, strings.Count(out, "\n"),
		budget.Default().Count([]byte(mustCall(t, env, "checkpoint_list", obj{}))))
}
