package intercept

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/contextd/contextd/budget"
)

// Budgeter cuts the text of one tools/call result to its token budget. The
// daemon plugs in its budget and page store, so that what is cut out can be
// read page by page later; CounterBudgeter is one built on budget.Counter.
type Budgeter interface {
	// Fit returns text as it may go back to the client: text itself and
	// cut false when it fits; otherwise the cut text (with a line saying what
	// was left out and how to get it) and cut true. server and tool say whose
	// result it is. An error blocks the result (fail closed).
	Fit(ctx context.Context, server, tool string, text []byte) (out []byte, cut bool, err error)
}

// CounterBudgeter is a Budgeter on contextd's token counter: a result over
// Tokens keeps its head and tail and, between them, budget.Marker's line.
type CounterBudgeter struct {
	// Counter counts tokens; nil means budget.Default().
	Counter *budget.Counter
	// Tokens is the budget of one result; 0 means 2000, contextd's default
	// response budget. Budgets under budget.MinBudget are raised to it.
	Tokens int
	// Keep stores the whole text and returns the continuation reference the
	// marker line gives; nil keeps nothing, and the line says the rest was
	// not kept.
	Keep func(ctx context.Context, server, tool string, text []byte) (ref string, err error)
	// Command is what the marker line tells the agent to run with
	// "--continue REF" to read the rest (the daemon's continuation tool).
	Command string
	// MCPTool, when set, makes the marker line also name the way through
	// contextd's MCP face: its continue tool, with the ref "MCPTool:REF"
	// (an agent whose shell is blocked has only that one).
	MCPTool string
}

// Fit implements Budgeter.
func (c *CounterBudgeter) Fit(ctx context.Context, server, tool string, text []byte) ([]byte, bool, error) {
	counter := c.Counter
	if counter == nil {
		counter = budget.Default()
	}
	tokens := c.Tokens
	if tokens <= 0 {
		tokens = 2000
	}
	if len(text) <= tokens {
		// Every token holds at least one byte: this fits uncounted.
		return text, false, nil
	}
	ref := ""
	var keepErr error
	kept := false
	cut := counter.Plan(text, tokens, func(g budget.Gap) string {
		if c.Keep == nil {
			return fmt.Sprintf("... %d lines (%s) left out; the whole result was not kept\n", g.Lines, budget.HumanBytes(g.Bytes()))
		}
		if !kept {
			kept = true
			ref, keepErr = c.Keep(ctx, server, tool, text)
		}
		m := budget.Marker(g.Lines, g.Bytes(), ref, c.Command)
		if c.MCPTool != "" && ref != "" {
			m = strings.TrimSuffix(m, "\n") + fmt.Sprintf(` (over MCP: contextd's continue tool with {"ref":"%s:%s"})`+"\n", c.MCPTool, ref)
		}
		return m
	})
	if keepErr != nil {
		return nil, false, fmt.Errorf("keep the whole result of %s: %w", tool, keepErr)
	}
	if !cut.Truncated {
		return text, false, nil
	}
	return bytes.Clone(cut.Data), true, nil
}
