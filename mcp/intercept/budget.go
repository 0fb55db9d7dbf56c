package intercept

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/salience"
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
	// Over reports whether text (a whole message the engine cannot cut)
	// is over the budget, and the budget in tokens.
	Over(text []byte) (limit int, over bool)
}

// CounterBudgeter is a Budgeter on contextd's token counter: a result over
// Tokens keeps its head and tail and, between them, budget.Marker's line
// (and, with Salience, the failures the result has between them).
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
	// Salience, when set, chooses the first page of a result over Tokens as
	// it does safe_bash's: head, the salient blocks (failures wherever they
	// sit, each under a line naming its lines), tail, with passing tests'
	// progress folded (salience.Compose). nil: head and tail only.
	Salience *salience.Set
}

// settings returns the counter and the budget, defaults filled in.
func (c *CounterBudgeter) settings() (*budget.Counter, int) {
	counter := c.Counter
	if counter == nil {
		counter = budget.Default()
	}
	tokens := c.Tokens
	if tokens <= 0 {
		tokens = 2000
	}
	return counter, tokens
}

// Fit implements Budgeter.
func (c *CounterBudgeter) Fit(ctx context.Context, server, tool string, text []byte) ([]byte, bool, error) {
	counter, tokens := c.settings()
	if len(text) <= tokens {
		// Every token holds at least one byte: this fits uncounted.
		return text, false, nil
	}
	ref := ""
	var keepErr error
	kept := false
	mark := func(g budget.Gap) string {
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
	}
	data, truncated := c.page(counter, tokens, text, mark)
	if keepErr != nil {
		return nil, false, fmt.Errorf("keep the whole result of %s: %w", tool, keepErr)
	}
	if !truncated {
		return text, false, nil
	}
	return bytes.Clone(data), true, nil
}

// Over implements Budgeter: the text's tokens against the budget (raised to
// budget.MinBudget as a cut would be), counted no further than needed.
func (c *CounterBudgeter) Over(text []byte) (int, bool) {
	counter, tokens := c.settings()
	tokens = max(tokens, budget.MinBudget)
	if len(text) <= tokens {
		return tokens, false // every token holds at least one byte
	}
	_, over := counter.CountUpTo(text, tokens)
	return tokens, over
}

// page cuts text, over tokens, to its first page: head and tail, or with
// Salience the page salience.Compose makes.
func (c *CounterBudgeter) page(counter *budget.Counter, tokens int, text []byte, mark budget.MarkFunc) ([]byte, bool) {
	if c.Salience == nil {
		cut := counter.Plan(text, tokens, mark)
		return cut.Data, cut.Truncated
	}
	sc := c.Salience.NewScanner()
	sc.Write(text) // never fails
	r := sc.Close()
	// The text is whole in memory: given as both windows (len(head) ==
	// size), PlanEnds is Plan, so a result with nothing salient or folded
	// is cut byte for byte as without Salience.
	p := salience.Compose(counter, tokens, text, text, int64(len(text)), int64(bytes.Count(text, []byte{'\n'})), r, mark)
	if p.Tokens > max(tokens, budget.MinBudget) {
		// Only when the marker alone is about the budget: Plan's cut,
		// which is then no longer either.
		cut := counter.Plan(text, tokens, mark)
		return cut.Data, cut.Truncated
	}
	return p.Data, p.Truncated
}
