package state

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/toolcall"
)

// Limits of a memory and of memory_search.
const (
	MaxTitle         = 120  // characters
	MaxDescription   = 300  // characters, one sentence
	MaxContentTokens = 2000 // tokens
	MaxTags          = 20
	MaxTag           = 40   // characters
	MaxQuery         = 1000 // characters

	DefaultSearchLimit = 3
	MaxSearchLimit     = 10
	// SearchTokens bounds a whole memory_search answer.
	SearchTokens = 500
	// ConfidenceFloor: memory_search leaves out memories below it.
	ConfidenceFloor = 0.2
	// StartConfidence is a new memory's confidence.
	StartConfidence = 0.5
)

// Scopes of memory_store.
const (
	ScopeProject = "project"
	ScopeGlobal  = "global"
)

// ---- memory_store

// MemoryStore records a lesson (toolspec/memory_store); with an Embedder in
// Config, it also stores the lesson's dense vector.
type MemoryStore struct{ Config *Config }

// Name implements toolcall.Tool.
func (MemoryStore) Name() string { return "memory_store" }

// MemoryStoreInput is memory_store's input. Decode leaves it normalized:
// title and description trimmed, tags lower case, sorted and unique.
type MemoryStoreInput struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Content     string   `json:"content"`
	Outcome     string   `json:"outcome"`
	Tags        []string `json:"tags,omitempty"`
	Scope       string   `json:"scope,omitempty"`
}

// Decode implements toolcall.Tool.
func (c MemoryStore) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "memory_store"
	var in MemoryStoreInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	var err error
	if in.Title, err = label(tool, "title", in.Title, MaxTitle); err != nil {
		return nil, err
	}
	if in.Title == "" {
		return nil, missing(tool, "title")
	}
	if in.Description, err = label(tool, "description", in.Description, MaxDescription); err != nil {
		return nil, err
	}
	if in.Description == "" {
		return nil, missing(tool, "description")
	}
	if n := sentences(in.Description); n > 1 {
		return nil, badInput(tool, "description must be one sentence (it has %d): when to use the lesson and when not to", n)
	}
	if blank(in.Content) {
		return nil, missing(tool, "content")
	}
	if in.Outcome != store.Success && in.Outcome != store.Failure {
		return nil, badInput(tool, `outcome must be "success" or "failure"`)
	}
	if in.Tags, err = normalizeTags(tool, in.Tags); err != nil {
		return nil, err
	}
	if in.Scope != "" && in.Scope != ScopeProject && in.Scope != ScopeGlobal {
		return nil, badInput(tool, `scope must be "project" or "global"`)
	}
	return &memoryStoreCall{in, c.Config.embedder()}, nil
}

// normalizeTags lower-cases, sorts and de-duplicates tags.
func normalizeTags(tool string, tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t, err := label(tool, "a tag", strings.ToLower(t), MaxTag)
		if err != nil {
			return nil, err
		}
		if t == "" {
			return nil, badInput(tool, "tags must not be empty")
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxTags {
		return nil, badInput(tool, "%d tags, at most %d", len(out), MaxTags)
	}
	return out, nil
}

// abbreviations end in a period without ending a sentence.
var abbreviations = map[string]bool{"etc": true, "vs": true, "cf": true, "incl": true, "approx": true,
	"esp": true, "resp": true, "ca": true, "no": true, "fig": true, "dr": true, "mr": true, "ms": true, "st": true}

// sentences counts the sentences of a one-line text: a '.', '!' or '?'
// followed by white space and a capital letter ends one, unless the word
// before it is an abbreviation ("etc.", "e.g.", "U.S.", an initial).
func sentences(s string) int {
	n := 1
	for i := 0; i < len(s); i++ {
		if s[i] != '.' && s[i] != '!' && s[i] != '?' {
			continue
		}
		rest := strings.TrimLeft(s[i+1:], " \t")
		if len(rest) == len(s[i+1:]) || rest == "" {
			continue // no space after it, or the end
		}
		if r, _ := utf8.DecodeRuneInString(rest); !unicode.IsUpper(r) {
			continue
		}
		if s[i] == '.' {
			word := s[strings.LastIndexAny(s[:i], " \t(")+1 : i]
			lw := strings.ToLower(word)
			dotted := strings.Contains(word, ".") && strings.IndexFunc(word, func(r rune) bool { return r != '.' && !unicode.IsLetter(r) }) < 0
			if abbreviations[lw] || dotted || utf8.RuneCountInString(word) == 1 {
				continue
			}
		}
		n++
	}
	return n
}

type memoryStoreCall struct {
	in    MemoryStoreInput
	embed Embedder // nil: lexical only
}

func (c *memoryStoreCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "memory_store"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	if n := counterOf(env).Count([]byte(c.in.Content)); n > MaxContentTokens {
		return toolcall.Outcome{Err: tooManyTokens(tool, "content", n, MaxContentTokens,
			"keep the lesson (what to do, what to avoid, why), not the transcript")}
	}
	scope, scopeName := root, ScopeProject
	if c.in.Scope == ScopeGlobal {
		scope, scopeName = store.Global, ScopeGlobal
	}
	tags := make([]string, len(c.in.Tags))
	for i, t := range c.in.Tags {
		tags[i] = scrubbed(env, t)
	}
	tags, _ = normalizeTags(tool, tags)
	m := store.Memory{
		Project:     scope,
		Title:       scrubbed(env, c.in.Title),
		Description: scrubbed(env, c.in.Description),
		Content:     scrubbed(env, c.in.Content),
		Outcome:     c.in.Outcome,
		Tags:        tags,
		Confidence:  StartConfidence,
	}

	var msg string
	var stored store.Memory // as written, for its vector
	err = update(ctx, func() error {
		hits, err := st.SearchMemories(ctx, store.MemoryQuery{
			Text:     m.Title + " " + m.Description,
			Projects: []string{scope},
			Limit:    duplicateCandidates,
		})
		if err != nil {
			return err
		}
		old, sim := nearDuplicate(&m, hits)
		if old == nil {
			n := m
			if err := st.PutMemory(ctx, &n); err != nil {
				return err
			}
			msg = fmt.Sprintf("stored %s (%s, confidence %.2f)\n", n.ID, scopeName, n.Confidence)
			stored = n
			return nil
		}
		// Read it again: a hit may be a stale copy, and its Version is what
		// the write is checked against.
		cur, err := st.GetMemory(ctx, old.ID, []string{scope})
		if err != nil {
			return err
		}
		oldTitle := cur.Title
		merge(cur, &m)
		if err := st.PutMemory(ctx, cur); err != nil {
			return err
		}
		how := fmt.Sprintf("similarity %.2f", sim)
		if sameTitle(oldTitle, m.Title) {
			how = "same title"
		}
		msg = fmt.Sprintf("updated %s (near-duplicate of %q, %s): text replaced, tags merged, confidence %.2f kept\n",
			cur.ID, oldTitle, how, cur.Confidence)
		stored = *cur
		return nil
	})
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "store the memory", err)}
	}
	// After the write, so that the memory is kept whatever the endpoint
	// does. A merge replaced the text, and the store dropped the vector of
	// the old one: this computes the new one.
	warnings := embedMemory(ctx, env, c.embed, st, &stored)
	_, err = fmt.Fprint(env.Out, msg)
	return toolcall.Outcome{Err: err, Warnings: warnings}
}

// merge updates old with m's text: old keeps its id, scope, counters and
// confidence; tags are the union.
func merge(old, m *store.Memory) {
	old.Title, old.Description, old.Content, old.Outcome = m.Title, m.Description, m.Content, m.Outcome
	tags := append(slices.Clone(old.Tags), m.Tags...)
	slices.Sort(tags)
	old.Tags = slices.Compact(tags)
	if len(old.Tags) == 0 {
		old.Tags = nil
	}
}

// ---- memory_search

// MemorySearch finds memories by meaning and prints references to them
// (toolspec/memory_search). With an Embedder in Config, it ranks by words
// and by dense vectors together.
type MemorySearch struct{ Config *Config }

// Name implements toolcall.Tool.
func (MemorySearch) Name() string { return "memory_search" }

// MemorySearchInput is memory_search's input.
type MemorySearchInput struct {
	Query string `json:"query"`
	Limit *int   `json:"limit,omitempty"`
}

// Decode implements toolcall.Tool.
func (c MemorySearch) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "memory_search"
	var in MemorySearchInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	if err := shortText(tool, "query", in.Query, MaxQuery, "describe the task in a sentence or two"); err != nil {
		return nil, err
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > MaxSearchLimit) {
		return nil, badInput(tool, "limit must be 1 to %d", MaxSearchLimit)
	}
	return &memorySearchCall{in, c.Config.embedder()}, nil
}

type memorySearchCall struct {
	in    MemorySearchInput
	embed Embedder // nil: lexical only
}

func (c *memorySearchCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "memory_search"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	limit := DefaultSearchLimit
	if c.in.Limit != nil {
		limit = *c.in.Limit
	}
	vector, warnings := queryVector(ctx, env, c.embed, c.in.Query)
	hits, err := st.SearchMemories(ctx, store.MemoryQuery{
		Text:          c.in.Query,
		Projects:      []string{root, store.Global},
		Limit:         limit,
		MinConfidence: ConfidenceFloor,
		Vector:        vector,
	})
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "search", err), Warnings: warnings}
	}
	var kept []store.Hit
	for _, h := range hits {
		m := h.Memory
		// The store filters these already; a backend that does not must not
		// leak another project's memory or an archived one.
		if m.Archived || m.Confidence < ConfidenceFloor || (m.Project != root && m.Project != store.Global) {
			continue
		}
		if len(kept) == limit {
			break
		}
		kept = append(kept, h)
	}
	// Scores are shown relative to the best hit (1.00): a backend's own
	// scale (bm25, reciprocal rank fusion's ~0.016) means nothing to an
	// agent, and is comparable only within one answer anyway.
	best := 0.0
	for _, h := range kept {
		best = max(best, h.Score)
	}
	rows := make([]row, 0, len(kept))
	for _, h := range kept {
		score := h.Score
		if best > 0 && !math.IsInf(best, 0) {
			score = max(score/best, 0)
		}
		rows = append(rows, row{
			prefix: fmt.Sprintf("%s  %.2f  ", h.Memory.ID, score),
			text:   oneLine(h.Memory.Title) + " — " + oneLine(h.Memory.Description),
		})
	}
	var out string
	if len(rows) == 0 {
		out = "no memory matches; once the task is solved, record what worked (or failed) with memory_store\n"
	} else {
		out = fitRows(counterOf(env), rows, SearchTokens, func(n int) string {
			return fmt.Sprintf("(%d more left out to stay short; narrow the query)\n", n)
		})
	}
	_, err = fmt.Fprint(env.Out, out)
	return toolcall.Outcome{Err: err, Warnings: warnings}
}

// oneLine folds line breaks and control characters into spaces (stored text
// from an older version or another backend may have them).
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// ---- memory_get

// MemoryGet prints a whole memory and counts the use (toolspec/memory_get).
type MemoryGet struct{}

// Name implements toolcall.Tool.
func (MemoryGet) Name() string { return "memory_get" }

// MemoryGetInput is memory_get's input.
type MemoryGetInput struct {
	ID string `json:"id"`
}

// Decode implements toolcall.Tool.
func (MemoryGet) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "memory_get"
	var in MemoryGetInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	var err error
	if in.ID, err = checkID(tool, in.ID); err != nil {
		return nil, err
	}
	return &memoryGetCall{in}, nil
}

type memoryGetCall struct{ in MemoryGetInput }

func (c *memoryGetCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "memory_get"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	scopes := []string{root, store.Global}
	var m *store.Memory
	err = update(ctx, func() error {
		var err error
		if m, err = st.GetMemory(ctx, c.in.ID, scopes); err != nil {
			return err
		}
		m.Uses++
		return st.PutMemory(ctx, m)
	})
	var warnings []string
	switch {
	case m == nil:
		return toolcall.Outcome{Err: storeErr(tool, notFound(c.in.ID, err), err)}
	case err != nil:
		// The memory was read; only counting the use failed. Hand it out.
		m.Uses--
		warnings = append(warnings, fmt.Sprintf("memory_get: the use of %s was not counted: %v", c.in.ID, err))
	}
	_, err = fmt.Fprint(env.Out, formatMemory(m))
	return toolcall.Outcome{Err: err, Warnings: warnings}
}

// notFound describes a failed read of memory id: which one is missing, or
// just what failed.
func notFound(id string, err error) string {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("no memory %s in this project or the global ones", id)
	}
	return "memory " + id
}

// formatMemory is memory_get's answer.
func formatMemory(m *store.Memory) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", oneLine(m.Title), oneLine(m.Description))
	scope := ScopeProject
	if m.Project == store.Global {
		scope = ScopeGlobal
	}
	fmt.Fprintf(&b, "outcome %s, confidence %.2f, uses %d, %s", m.Outcome, m.Confidence, m.Uses, scope)
	if len(m.Tags) > 0 {
		fmt.Fprintf(&b, ", tags %s", strings.Join(m.Tags, ","))
	}
	if m.Archived {
		b.WriteString(", archived")
	}
	b.WriteString("\n\n")
	b.WriteString(m.Content)
	if !strings.HasSuffix(m.Content, "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

// ---- memory_feedback

// Confidence rule of memory_feedback.
//
// A memory starts at StartConfidence (0.5). Feedback moves its confidence c a
// fifth of the way towards 1 when the memory helped, and a fifth of the way
// towards 0 when it did not:
//
//	helpful:    c' = c + 0.2·(1 − c)
//	unhelpful:  c' = c − 0.2·c
//
// so c stays in (0, 1) and each vote counts less the closer c is to where it
// pushes. From 0.5, one helpful vote gives 0.60 and one unhelpful 0.40; five
// unhelpful votes in a row (0.16) put a memory under memory_search's floor,
// ConfidenceFloor (0.2).
//
// Archive rule: after each vote, a memory is archived when it has at least 3
// unhelpful votes and more than twice as many unhelpful as helpful ones, or
// when c < 0.1; otherwise it is not (a helpful vote can bring an archived one
// back). Archived memories are kept, never deleted: memory_get still shows
// them by id, memory_search leaves them out.
const (
	FeedbackStep     = 0.2
	ArchiveUnhelpful = 3
	ArchiveBelow     = 0.1
)

// applyFeedback moves m's confidence and counts by one vote.
func applyFeedback(m *store.Memory, helpful bool) {
	c := min(max(m.Confidence, 0), 1)
	if helpful {
		c += FeedbackStep * (1 - c)
		m.Helpful++
	} else {
		c -= FeedbackStep * c
		m.Unhelpful++
	}
	m.Confidence = c
	m.Archived = m.Unhelpful >= ArchiveUnhelpful && m.Unhelpful > 2*m.Helpful || c < ArchiveBelow
}

// MemoryFeedback records whether a memory helped (toolspec/memory_feedback).
type MemoryFeedback struct{}

// Name implements toolcall.Tool.
func (MemoryFeedback) Name() string { return "memory_feedback" }

// MemoryFeedbackInput is memory_feedback's input.
type MemoryFeedbackInput struct {
	ID      string `json:"id"`
	Helpful *bool  `json:"helpful"`
}

// Decode implements toolcall.Tool.
func (MemoryFeedback) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "memory_feedback"
	var in MemoryFeedbackInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	var err error
	if in.ID, err = checkID(tool, in.ID); err != nil {
		return nil, err
	}
	if in.Helpful == nil {
		return nil, missing(tool, "helpful")
	}
	return &memoryFeedbackCall{in}, nil
}

type memoryFeedbackCall struct{ in MemoryFeedbackInput }

func (c *memoryFeedbackCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "memory_feedback"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	var m *store.Memory
	var was float64
	err = update(ctx, func() error {
		var err error
		if m, err = st.GetMemory(ctx, c.in.ID, []string{root, store.Global}); err != nil {
			return err
		}
		was = m.Confidence
		applyFeedback(m, *c.in.Helpful)
		return st.PutMemory(ctx, m)
	})
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, notFound(c.in.ID, err), err)}
	}
	state := "active"
	if m.Archived {
		state = "archived (kept, left out of searches)"
	}
	_, err = fmt.Fprintf(env.Out, "confidence %.2f (was %.2f), %d helpful, %d unhelpful, %s\n",
		m.Confidence, was, m.Helpful, m.Unhelpful, state)
	return toolcall.Outcome{Err: err}
}
