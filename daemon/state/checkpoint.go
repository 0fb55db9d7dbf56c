package state

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/toolcall"
)

// Limits of a checkpoint and of checkpoint_list.
const (
	MaxCheckpointName = 120      // characters
	SummaryTokens     = 300      // tokens
	ContextTokens     = 3000     // tokens
	MaxFull           = 16 << 20 // bytes

	DefaultListLimit = 10
	MaxListLimit     = 50
	// ListTokens bounds a whole checkpoint_list answer, ListLineTokens the
	// name and summary line of one checkpoint in it.
	ListTokens     = 1200
	ListLineTokens = 24
)

// Levels of checkpoint_restore.
const (
	LevelSummary = "summary"
	LevelContext = "context"
	LevelFull    = "full"
)

// ---- checkpoint_save

// CheckpointSave saves the agent's state at three levels (toolspec/checkpoint_save).
type CheckpointSave struct{}

// Name implements toolcall.Tool.
func (CheckpointSave) Name() string { return "checkpoint_save" }

// CheckpointSaveInput is checkpoint_save's input; Decode trims Name.
type CheckpointSaveInput struct {
	Name    string `json:"name,omitempty"`
	Summary string `json:"summary"`
	Context string `json:"context,omitempty"`
	Full    string `json:"full,omitempty"`
}

// Decode implements toolcall.Tool.
func (CheckpointSave) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "checkpoint_save"
	var in CheckpointSaveInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	var err error
	if in.Name, err = label(tool, "name", in.Name, MaxCheckpointName); err != nil {
		return nil, err
	}
	if blank(in.Summary) {
		return nil, missing(tool, "summary")
	}
	if len(in.Full) > MaxFull {
		return nil, badInput(tool, "full is %d bytes, at most %d", len(in.Full), MaxFull)
	}
	return &checkpointSaveCall{in}, nil
}

type checkpointSaveCall struct{ in CheckpointSaveInput }

func (c *checkpointSaveCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "checkpoint_save"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	cnt := counterOf(env)
	ns := cnt.Count([]byte(c.in.Summary))
	if ns > SummaryTokens {
		return toolcall.Outcome{Err: tooManyTokens(tool, "summary", ns, SummaryTokens,
			"a few sentences: the goal and where things stand; put the working set in context")}
	}
	nc := cnt.Count([]byte(c.in.Context))
	if nc > ContextTokens {
		return toolcall.Outcome{Err: tooManyTokens(tool, "context", nc, ContextTokens,
			"keep decisions, files and next steps; put the rest in full")}
	}
	// full can be megabytes; it is scrubbed when it is restored, like any
	// output, and never leaves the project.
	cp := store.Checkpoint{
		Project: root,
		Session: env.Session,
		Name:    scrubbed(env, c.in.Name),
		Summary: scrubbed(env, c.in.Summary),
		Context: scrubbed(env, c.in.Context),
		Full:    c.in.Full,
		Created: time.Now().UTC(),
	}
	if err := st.PutCheckpoint(ctx, &cp); err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "save the checkpoint", err)}
	}
	_, err = fmt.Fprintf(env.Out, "saved checkpoint %s: summary %d, context %d tokens, full %d bytes\n",
		cp.ID, ns, nc, len(cp.Full))
	return toolcall.Outcome{Err: err}
}

// ---- checkpoint_restore

// CheckpointRestore prints a checkpoint of the project (toolspec/checkpoint_restore).
type CheckpointRestore struct{}

// Name implements toolcall.Tool.
func (CheckpointRestore) Name() string { return "checkpoint_restore" }

// CheckpointRestoreInput is checkpoint_restore's input.
type CheckpointRestoreInput struct {
	ID     string `json:"id,omitempty"`
	Latest *bool  `json:"latest,omitempty"`
	Level  string `json:"level,omitempty"`
}

// Decode implements toolcall.Tool.
func (CheckpointRestore) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "checkpoint_restore"
	var in CheckpointRestoreInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	if in.ID != "" {
		var err error
		if in.ID, err = checkID(tool, in.ID); err != nil {
			return nil, err
		}
		if in.Latest != nil && *in.Latest {
			return nil, badInput(tool, "give an id or latest, not both")
		}
	} else if in.Latest != nil && !*in.Latest {
		return nil, badInput(tool, "latest is false but no id is given: say which checkpoint (checkpoint_list shows them)")
	}
	switch in.Level {
	case "", LevelSummary, LevelContext, LevelFull:
	default:
		return nil, badInput(tool, `level must be "summary", "context" or "full"`)
	}
	return &checkpointRestoreCall{in}, nil
}

type checkpointRestoreCall struct{ in CheckpointRestoreInput }

func (c *checkpointRestoreCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "checkpoint_restore"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	level := c.in.Level
	if level == "" {
		level = LevelContext
	}
	id := c.in.ID
	if id == "" {
		list, err := st.ListCheckpoints(ctx, root, 1)
		if err != nil {
			return toolcall.Outcome{Err: storeErr(tool, "find the latest checkpoint", err)}
		}
		if len(list) == 0 {
			return toolcall.Outcome{Err: storeErr(tool, "no checkpoint saved in this project yet (checkpoint_save makes one)", store.ErrNotFound)}
		}
		id = list[0].ID
	}
	cp, err := st.GetCheckpoint(ctx, id, root)
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "checkpoint "+id+" (not in this project?)", err)}
	}
	_, err = fmt.Fprint(env.Out, formatCheckpoint(cp, level))
	return toolcall.Outcome{Err: err}
}

// formatCheckpoint is checkpoint_restore's answer: a header line, then each
// part up to level under its own heading.
func formatCheckpoint(cp *store.Checkpoint, level string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint %s  %s UTC", cp.ID, stamp(cp.Created))
	if cp.Name != "" {
		fmt.Fprintf(&b, "  %s", oneLine(cp.Name))
	}
	b.WriteByte('\n')
	part := func(head, text string) {
		fmt.Fprintf(&b, "%s:\n", head)
		if blank(text) {
			b.WriteString("(none saved)\n")
			return
		}
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	part("summary", cp.Summary)
	if level == LevelContext || level == LevelFull {
		part("context", cp.Context)
	}
	if level == LevelFull {
		part("full", cp.Full)
	}
	return b.String()
}

// ---- checkpoint_list

// CheckpointList lists the project's checkpoints (toolspec/checkpoint_list).
type CheckpointList struct{}

// Name implements toolcall.Tool.
func (CheckpointList) Name() string { return "checkpoint_list" }

// CheckpointListInput is checkpoint_list's input.
type CheckpointListInput struct {
	Limit *int `json:"limit,omitempty"`
}

// Decode implements toolcall.Tool.
func (CheckpointList) Decode(input []byte) (toolcall.Call[*Env], error) {
	const tool = "checkpoint_list"
	var in CheckpointListInput
	if err := toolcall.DecodeStrict(tool, input, &in, true); err != nil {
		return nil, err
	}
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > MaxListLimit) {
		return nil, badInput(tool, "limit must be 1 to %d", MaxListLimit)
	}
	return &checkpointListCall{in}, nil
}

type checkpointListCall struct{ in CheckpointListInput }

func (c *checkpointListCall) Run(ctx context.Context, env *Env) toolcall.Outcome {
	const tool = "checkpoint_list"
	st, root, err := scope(tool, env)
	if err != nil {
		return toolcall.Outcome{Err: err}
	}
	limit := DefaultListLimit
	if c.in.Limit != nil {
		limit = *c.in.Limit
	}
	list, err := st.ListCheckpoints(ctx, root, limit)
	if err != nil {
		return toolcall.Outcome{Err: storeErr(tool, "list checkpoints", err)}
	}
	if len(list) == 0 {
		_, err = fmt.Fprint(env.Out, "no checkpoints in this project yet; checkpoint_save --summary TEXT saves one\n")
		return toolcall.Outcome{Err: err}
	}
	cnt := counterOf(env)
	rows := make([]row, 0, len(list))
	for _, cp := range list[:min(len(list), limit)] {
		text := firstLine(cp.Summary)
		if cp.Name != "" {
			text = oneLine(cp.Name) + ": " + text
		}
		rows = append(rows, row{prefix: fmt.Sprintf("%s  %s  ", cp.ID, stamp(cp.Created)), text: cutTokens(cnt, text, ListLineTokens)})
	}
	out := fitRows(cnt, rows, ListTokens, func(n int) string {
		return fmt.Sprintf("(%d older left out to stay short; checkpoint_restore ID shows one)\n", n)
	})
	_, err = fmt.Fprint(env.Out, out)
	return toolcall.Outcome{Err: err}
}
