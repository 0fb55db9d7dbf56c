// Package state is the state tools (memory_*, checkpoint_*, branch, return), run in the daemon on its store.
package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/workspace"
)

// Env is what a state tool runs on: the call's project and session, the
// store, and the response it writes into. The state tools run in the daemon,
// so they need nothing of the sandbox.
type Env struct {
	Place   workspace.Place
	Session string
	// Store holds memories, checkpoints and branches; nil when it could
	// not be opened (the tools fail with catalog.ErrStoreUnavailable).
	Store store.Store
	// Out receives the tool's output; the daemon scrubs it on the way out.
	Out io.Writer
	// Scrub replaces the secrets in text the agent sends that is stored
	// and shown again later with the session's placeholders; nil: the
	// text is kept as it is.
	Scrub func([]byte) []byte
	// Counter counts tokens with the response's tokenizer; nil: the
	// default one.
	Counter *budget.Counter
}

// Defaults of Config.
const (
	// DefaultBranchBudget is a branch's token budget when `branch` is given none.
	DefaultBranchBudget = 8192
	// DefaultReturnTokens is the most tokens a `return` summary may take.
	DefaultReturnTokens = 500
)

// Config holds what the daemon may override; a nil *Config, or a zero field,
// means the default.
type Config struct {
	// BranchBudget is the budget, in response tokens, of a branch opened
	// without one (DefaultBranchBudget).
	BranchBudget int
	// ReturnTokens caps the summary `return` stores (DefaultReturnTokens);
	// a longer one is refused with its count.
	ReturnTokens int
	// Embedder, when set, gives memories dense vectors (memory_store) and
	// memory_search queries theirs, so that the store fuses lexical and
	// dense rankings. Nil (the default): search is lexical only and no
	// embedding is ever computed.
	Embedder Embedder
}

func (c *Config) branchBudget() int {
	if c == nil || c.BranchBudget <= 0 {
		return DefaultBranchBudget
	}
	return c.BranchBudget
}

func (c *Config) returnTokens() int {
	if c == nil || c.ReturnTokens <= 0 {
		return DefaultReturnTokens
	}
	return c.ReturnTokens
}

// Tools returns every state tool with c's settings; (*Config)(nil).Tools() is
// the same as the package's Tools.
func (c *Config) Tools() []toolcall.Tool[*Env] {
	return []toolcall.Tool[*Env]{
		MemoryStore{Config: c}, MemorySearch{Config: c}, MemoryGet{}, MemoryFeedback{},
		CheckpointSave{}, CheckpointRestore{}, CheckpointList{},
		Branch{Config: c}, Return{Config: c},
	}
}

// Tools returns every state tool with the default settings.
func Tools() []toolcall.Tool[*Env] { return (*Config)(nil).Tools() }

// retries bounds the read-modify-write loops that lose a race to another
// writer (store.ErrConflict): the daemon counting a branch's calls, another
// agent's feedback.
const retries = 5

// update runs fn again while it fails with store.ErrConflict, at most retries
// times.
func update(ctx context.Context, fn func() error) error {
	var err error
	for i := 0; i < retries; i++ {
		if err = fn(); !errors.Is(err, store.ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return err
}

// storeOf returns the call's store, or an error when the daemon could not
// open one.
func storeOf(tool string, env *Env) (store.Store, error) {
	if env.Store == nil {
		return nil, fmt.Errorf("%s: no state store is open (see [store] in docs/config.md): %w", tool, catalog.ErrStoreUnavailable)
	}
	return env.Store, nil
}

// scope is the call's store and the project its records belong to (the
// workspace root).
func scope(tool string, env *Env) (store.Store, string, error) {
	st, err := storeOf(tool, env)
	if err != nil {
		return nil, "", err
	}
	if env.Place.Root == "" {
		// An empty project would be store.Global: never fall into it by accident.
		return nil, "", fmt.Errorf("%s: the call has no workspace: %w", tool, catalog.ErrInternal)
	}
	return st, env.Place.Root, nil
}

func counterOf(env *Env) *budget.Counter {
	if env.Counter != nil {
		return env.Counter
	}
	return budget.Default()
}

// storeErr classifies a store failure: a missing record is the caller's
// (ErrNoRecord), a lost race that retries did not win and anything else is
// the store's (ErrStoreUnavailable).
func storeErr(tool, what string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%s: %s: %w", tool, what, catalog.ErrNoRecord)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%s: %s: concurrent updates kept conflicting; retry: %w", tool, what, catalog.ErrStoreUnavailable)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: %v: %w", tool, what, err, catalog.ErrInterrupted)
	}
	if c := catalog.ClassOf(err); c != catalog.ErrInternal || errors.Is(err, catalog.ErrInternal) {
		return fmt.Errorf("%s: %s: %w", tool, what, err)
	}
	return fmt.Errorf("%s: %s: %v: %w", tool, what, err, catalog.ErrStoreUnavailable)
}

// scrubbed returns s with secrets replaced by the session's placeholders,
// for text the agent sends that is stored and shown again later (perhaps in
// another project, for a global memory).
func scrubbed(env *Env, s string) string {
	if env.Scrub == nil || s == "" {
		return s
	}
	return string(env.Scrub([]byte(s)))
}

// badInput is a Decode or Run refusal of the caller's input.
func badInput(tool, format string, a ...any) error {
	return fmt.Errorf("%s: %s: %w", tool, fmt.Sprintf(format, a...), catalog.ErrBadInput)
}

// tooManyTokens refuses a text over its token limit, saying both numbers.
func tooManyTokens(tool, field string, n, limit int, advice string) error {
	return badInput(tool, "%s is %d tokens, the limit is %d; %s", field, n, limit, advice)
}

// label checks a one-line text field (a title, a name, a tag): trimmed, at
// most maxRunes characters, no control characters. It returns the trimmed text.
func label(tool, field, s string, maxRunes int) (string, error) {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return "", badInput(tool, "%s is %d characters, at most %d", field, n, maxRunes)
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return "", badInput(tool, "%s must be one line without control characters", field)
	}
	return s, nil
}

// checkID checks a record id given by the caller: ids are short tokens
// without spaces.
func checkID(tool, s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", missing(tool, "id")
	case len(s) > 128:
		return "", badInput(tool, "id is %d bytes; ids are the short strings other calls printed", len(s))
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", badInput(tool, "id must not contain spaces or control characters")
	}
	return s, nil
}

func missing(tool, field string) error {
	return badInput(tool, "%q is required", field)
}

// shortText refuses a required text that is blank or longer than max
// characters; advice says what to write instead.
func shortText(tool, field, value string, max int, advice string) error {
	if blank(value) {
		return missing(tool, field)
	}
	if n := utf8.RuneCountInString(value); n > max {
		return badInput(tool, "%s is %d characters, at most %d: %s", field, n, max, advice)
	}
	return nil
}

// blank reports whether s holds nothing but white space.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// firstLine is s's first non-blank line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// stamp prints a time for a listing: UTC, to the minute.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "----------  --:--"
	}
	return t.UTC().Format("2006-01-02 15:04")
}
