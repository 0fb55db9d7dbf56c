package intercept

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/jsonscan"
	"github.com/contextd/contextd/mcp/relay"
)

// Interactive interception: while it is on, every message the intercept
// Match selects (after the rules, so the user sees what would be passed on)
// waits in Handle until a controller forwards, edits or drops it. Each
// direction has its own forward loop, so a held message stops only the
// messages behind it in its own direction.

// Held is a message waiting for the user.
type Held struct {
	Seq  uint64
	Dir  jsonrpc.Direction
	Kind jsonrpc.Kind
	ID   []byte // the JSON-RPC id as it came (nil for a notification)
	// Corr is, for a response, the Seq of the request it answers (0: unknown).
	Corr   uint64
	Method string // for a response, the method of the request it answers
	Tool   string
	// Raw is the message as it would be passed on now, after the rules.
	Raw []byte
	// Original is the message as it arrived.
	Original []byte
	Since    time.Time
}

// EventType says what happened to a held message.
type EventType uint8

const (
	EventHeld     EventType = iota + 1 // a message started waiting
	EventReleased                      // a held message went on (or was dropped)
)

func (t EventType) String() string {
	switch t {
	case EventHeld:
		return "held"
	case EventReleased:
		return "released"
	}
	return "unknown"
}

// Event tells a controller about a held message.
type Event struct {
	Type EventType
	Held Held
	// Action is what was done with a released message.
	Action relay.Action
	// By says who released it: "user", "intercept off", "shutdown" (ReleaseAll)
	// or "canceled" (the wrap's context ended).
	By string
}

type userChoice struct {
	action relay.Action
	raw    []byte
	by     string
}

type heldMsg struct {
	h      Held
	choice chan userChoice // buffered 1: the controller never waits
}

type holdState struct {
	mu       sync.Mutex
	on       bool
	match    *matcher
	shutdown bool
	held     map[uint64]*heldMsg
}

func (h *holdState) init() { h.held = map[uint64]*heldMsg{} }

// wants reports whether a message is to be held.
func (h *holdState) wants(e *Engine, dir jsonrpc.Direction, env envelope, req *pendingReq) bool {
	h.mu.Lock()
	on, m := h.on && !h.shutdown, h.match
	h.mu.Unlock()
	if !on {
		return false
	}
	if m == nil {
		return true
	}
	mc := &matchCtx{server: e.o.Server, dir: dir, kind: env.kind, method: env.method, tool: env.tool}
	if req != nil {
		mc.method, mc.tool = req.method, req.tool
	}
	// Conditions on values are not part of a hold match (SetIntercept
	// refuses them), so no message bytes are needed here.
	ok, _ := m.matches(mc)
	return ok
}

// SetIntercept switches interactive interception on or off. m selects the
// messages to hold (nil: all of them); it may not have When conditions, which
// are for rules. Switching it off releases every held message, forwarded as
// the rules left it. After ReleaseAll it can no longer be switched on.
func (e *Engine) SetIntercept(on bool, m *Match) error {
	var cm *matcher
	if m != nil {
		if len(m.When) > 0 {
			return fmt.Errorf("intercept: a hold matches by direction, kind, method, tool and server, not by values: %w", catalog.ErrBadInput)
		}
		var err error
		if cm, err = compileMatch(m); err != nil {
			return fmt.Errorf("intercept: %v: %w", err, catalog.ErrBadInput)
		}
	}
	e.hold.mu.Lock()
	if on && e.hold.shutdown {
		e.hold.mu.Unlock()
		return fmt.Errorf("intercept: the wrap is shutting down: %w", catalog.ErrShuttingDown)
	}
	e.hold.on, e.hold.match = on, cm
	e.hold.mu.Unlock()
	if !on {
		e.releaseAll("intercept off")
	}
	return nil
}

// Intercepting reports whether interactive interception is on.
func (e *Engine) Intercepting() bool {
	e.hold.mu.Lock()
	defer e.hold.mu.Unlock()
	return e.hold.on && !e.hold.shutdown
}

// Held returns the messages waiting, oldest (lowest Seq) first.
func (e *Engine) Held() []Held {
	e.hold.mu.Lock()
	out := make([]Held, 0, len(e.hold.held))
	for _, m := range e.hold.held {
		out = append(out, m.h)
	}
	e.hold.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// Forward releases held message seq as the rules left it.
func (e *Engine) Forward(seq uint64) error {
	return e.choose(seq, userChoice{action: relay.Forward, by: "user"})
}

// Modify releases held message seq with raw in its place. raw must be one
// JSON value; it then goes through the built-in and user rules again (so an
// edit cannot slip a secret or a refused tool past them). Invalid JSON is
// refused (catalog.ErrBadInput) and the message stays held.
func (e *Engine) Modify(seq uint64, raw []byte) error {
	if _, _, err := jsonscan.Document(raw); err != nil {
		return fmt.Errorf("intercept: the edited message is not valid JSON: %v: %w", err, catalog.ErrBadInput)
	}
	return e.choose(seq, userChoice{action: relay.Modify, raw: append([]byte(nil), raw...), by: "user"})
}

// Drop releases held message seq by dropping it. A dropped request is
// answered with a JSON-RPC error saying so, so its sender does not wait for
// an answer that will never come.
func (e *Engine) Drop(seq uint64) error {
	return e.choose(seq, userChoice{action: relay.Drop, by: "user"})
}

func (e *Engine) choose(seq uint64, c userChoice) error {
	e.hold.mu.Lock()
	m, ok := e.hold.held[seq]
	if ok {
		delete(e.hold.held, seq)
	}
	e.hold.mu.Unlock()
	if !ok {
		return fmt.Errorf("intercept: seq %d: %w: %w", seq, errNotHeld, catalog.ErrBadInput)
	}
	m.choice <- c
	return nil
}

// ReleaseAll forwards every held message and holds no more: the wrap calls
// it when it shuts down, so that no forward loop waits for a user who is
// gone.
func (e *Engine) ReleaseAll() {
	e.hold.mu.Lock()
	e.hold.shutdown = true
	e.hold.mu.Unlock()
	e.releaseAll("shutdown")
}

func (e *Engine) releaseAll(by string) {
	e.hold.mu.Lock()
	ms := make([]*heldMsg, 0, len(e.hold.held))
	for seq, m := range e.hold.held {
		ms = append(ms, m)
		delete(e.hold.held, seq)
	}
	e.hold.mu.Unlock()
	for _, m := range ms {
		m.choice <- userChoice{action: relay.Forward, by: by}
	}
}

func (e *Engine) emit(ev Event) {
	if e.o.OnEvent != nil {
		e.o.OnEvent(ev)
	}
}

// holdMessage holds m (whose rules' outcome is d and v) until a choice is
// made or ctx ends, and returns the verdict that follows.
func (e *Engine) holdMessage(ctx context.Context, m *jsonrpc.Message, d *decision, v relay.Verdict) (relay.Verdict, error) {
	method, tool := d.env.method, d.env.tool
	if d.req != nil {
		method, tool = d.req.method, d.req.tool
	}
	hm := &heldMsg{
		h: Held{Seq: m.Seq, Dir: m.Dir, Kind: d.env.kind, ID: m.Info.ID, Corr: m.Corr, Method: method, Tool: tool,
			Raw: d.raw, Original: m.Raw, Since: time.Now()},
		choice: make(chan userChoice, 1),
	}
	e.hold.mu.Lock()
	if !e.hold.on || e.hold.shutdown {
		// Switched off (or shut down) since wants looked.
		e.hold.mu.Unlock()
		return v, nil
	}
	if _, dup := e.hold.held[m.Seq]; dup {
		e.hold.mu.Unlock()
		return relay.Verdict{Action: relay.Drop, Rule: RuleUser}, fmt.Errorf("intercept: seq %d is held twice: %w", m.Seq, catalog.ErrInternal)
	}
	e.hold.held[m.Seq] = hm
	e.hold.mu.Unlock()
	e.emit(Event{Type: EventHeld, Held: hm.h})

	var c userChoice
	select {
	case c = <-hm.choice:
	case <-ctx.Done():
		e.hold.mu.Lock()
		_, still := e.hold.held[m.Seq]
		delete(e.hold.held, m.Seq)
		e.hold.mu.Unlock()
		if still {
			c = userChoice{action: relay.Forward, by: "canceled"}
		} else {
			// A choice was made at the same moment: honour it.
			c = <-hm.choice
		}
	}

	var out relay.Verdict
	var err error
	switch c.action {
	case relay.Forward:
		out = v
	case relay.Drop:
		out = relay.Verdict{Action: relay.Drop, Rule: joinRule(v.Rule, RuleUser)}
		if d.env.kind == jsonrpc.KindRequest {
			out.Reply = errorResponse(d.env.id, ErrCodeRefused, "contextd dropped the message: the user dropped it", RuleUser)
		}
	case relay.Modify:
		var nd *decision
		nd, err = e.decide(ctx, m, c.raw, d)
		if err != nil {
			out = relay.Verdict{Action: relay.Drop, Rule: joinRule(RuleUser, nd.rule())}
			break
		}
		nd.add(RuleUser)
		out = nd.verdict(m.Raw)
		if out.Action == relay.Forward {
			// The edit gave back the message as it came.
			out.Rule = nd.rule()
		}
	}
	hm.h.Raw = out.Raw
	if out.Action == relay.Forward {
		hm.h.Raw = m.Raw
	}
	e.emit(Event{Type: EventReleased, Held: hm.h, Action: out.Action, By: c.by})
	return out, err
}

func joinRule(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "," + b
}

func equalJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

var timeZero time.Time

func nowUTC() time.Time { return time.Now().UTC() }
