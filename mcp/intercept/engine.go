// Package intercept is the MCP firewall's decision engine: every message a
// wrap relays passes its built-in rules (secret scrubbing, token budgets, tool
// allowlists, tool pinning), then the user's rules, and, while the user
// intercepts, waits for them to forward, edit or drop it.
package intercept

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/jsonscan"
	"github.com/contextd/contextd/mcp/relay"
)

// Names of the built-in rules, as verdicts and records give them.
const (
	RuleScrub     = "scrub"
	RuleBudget    = "budget"
	RuleAllowlist = "allowlist"
	RulePin       = "pin"
	RuleUser      = "user" // a held message the user edited or dropped
)

// ErrCodeRefused is the JSON-RPC error code of the replies the engine sends
// for requests it refuses (a tool off the allowlist, a changed pin, a drop
// rule). It is in the range JSON-RPC leaves to implementations, and not
// -32001, which the TypeScript SDK uses for its own request timeouts: a
// client must be able to tell "refused by contextd" from "no answer".
const ErrCodeRefused = -32041

// Options configure an Engine. A nil *Options and zero fields mean the
// defaults given on each field.
type Options struct {
	// Server names the wrapped server: the key of its allowlist
	// (Config.Allow) and of its pins, and what refusals tell the user to
	// approve. Required when pinning is on or the server has an allowlist.
	Server string
	// Config is the configuration; nil means DefaultConfig().
	Config *Config
	// Scrubber finds secrets. Required while ScrubResults or ScrubArguments
	// is on: New refuses to build an engine that would let secrets through.
	Scrubber Scrubber
	// Budgeter bounds the server's messages (see Config.Budget); nil means
	// nothing is bounded.
	Budgeter Budgeter
	// Pins keeps tool pins; nil means a MemoryPins of the engine's own, so
	// that pins last for this session only.
	Pins PinStore
	// OnEvent, if set, is told when a message is held and when it is
	// released. It is called without the engine's locks held, from the
	// forward loops and from the callers of Forward, Modify, Drop and
	// ReleaseAll, and must return quickly (hand the event to a channel).
	OnEvent func(Event)
}

// Engine decides the fate of every message of one wrapped server. It
// implements relay.Handler, and is safe for the two forward loops and a
// controller (the TUI) to use at once.
type Engine struct {
	o       Options
	cfg     *Config
	cc      *compiledConfig
	allow   []*glob // the server's allowlist
	isAllow bool    // the server has one

	mu       sync.Mutex
	listed   map[string]string // tool -> hash the latest tools/list showed
	approved map[string]string // tool -> listed hash known to equal the pin

	hold holdState
}

// pendingReq is the request a response answers, as the relay matched it
// (jsonrpc.Message's Corr, ReqMethod and ReqTool, or Answers for a batch's
// elements): the engine keeps no correlation of its own.
type pendingReq struct {
	method, tool string
}

// answers is the request m answers, or nil when it answers none the relay
// knows (or is not a response).
func answers(m *jsonrpc.Message) *pendingReq {
	if m.Corr == 0 || m.Info.Kind != jsonrpc.KindResponse && m.Info.Kind != jsonrpc.KindError {
		return nil
	}
	return &pendingReq{method: m.ReqMethod, tool: m.ReqTool}
}

var _ relay.Handler = (*Engine)(nil)

// New builds an engine. A configuration that does not compile wraps
// catalog.ErrConfig.
func New(o *Options) (*Engine, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	cfg := opt.Config
	if cfg == nil {
		cfg = DefaultConfig()
	}
	cc, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if (cfg.ScrubResults || cfg.ScrubArguments) && opt.Scrubber == nil {
		return nil, fmt.Errorf("intercept: scrubbing is on (%s.scrub_results, scrub_arguments) but no scrubber was given: %w",
			ConfigTable, catalog.ErrInternal)
	}
	if opt.Pins == nil {
		opt.Pins = &MemoryPins{}
	}
	e := &Engine{o: opt, cfg: cfg, cc: cc, listed: map[string]string{}, approved: map[string]string{}}
	e.allow, e.isAllow = cc.allow[opt.Server]
	if (cfg.Pin || e.isAllow) && opt.Server == "" {
		return nil, fmt.Errorf("intercept: pinning and allowlists need the server's name: %w", catalog.ErrInternal)
	}
	e.hold.init()
	return e, nil
}

// Handle implements relay.Handler.
func (e *Engine) Handle(ctx context.Context, m *jsonrpc.Message) (relay.Verdict, error) {
	d, err := e.decide(ctx, m, m.Raw, nil)
	if err != nil {
		return relay.Verdict{Action: relay.Drop, Rule: d.rule()}, err
	}
	v := d.verdict(m.Raw)
	if v.Action == relay.Drop || !e.hold.wants(e, m.Dir, d.env, d.req) {
		return v, nil
	}
	return e.holdMessage(ctx, m, d, v)
}

// decision is what the rules made of one message.
type decision struct {
	raw   []byte // the message as it is to be passed on
	drop  bool
	reply []byte
	rules []string
	// For matching: the envelope of the message as received, and, for a
	// response, the request it answers.
	env envelope
	req *pendingReq
}

func (d *decision) add(rule string) {
	for _, r := range d.rules {
		if r == rule {
			return
		}
	}
	d.rules = append(d.rules, rule)
}

func (d *decision) rule() string { return strings.Join(d.rules, ",") }

func (d *decision) verdict(orig []byte) relay.Verdict {
	v := relay.Verdict{Rule: d.rule(), Reply: d.reply}
	switch {
	case d.drop:
		v.Action = relay.Drop
	case !bytes.Equal(d.raw, orig):
		v.Action, v.Raw = relay.Modify, d.raw
	}
	return v
}

// decide runs the rules on raw, which is m's bytes or, for a held message
// the user edited, what the user made of them. What a response answers is
// the relay's correlation, in m; again, when not nil, is the decision on m
// before the edit, whose request a response keeps.
func (e *Engine) decide(ctx context.Context, m *jsonrpc.Message, raw []byte, again *decision) (*decision, error) {
	dir := m.Dir
	s, end, err := jsonscan.Document(raw)
	if err == nil && raw[s] == '[' {
		return e.decideBatch(ctx, m, raw, s, end, again)
	}
	d := &decision{raw: raw}
	var info *jsonrpc.Info
	if again == nil {
		info = &m.Info // raw is m.Raw, which the relay classified
	}
	if err := e.decideOne(ctx, dir, d, again, answers(m), info); err != nil {
		return d, err
	}
	return d, nil
}

// decideBatch decides each element of a batch on its own and puts the batch
// back together: refused elements are taken out and their replies sent back
// as a batch of their own. An element answers what the relay matched it to
// (m.Answers, by index); the elements of a batch the user edited answer
// nothing known, their requests' having been settled by the original.
func (e *Engine) decideBatch(ctx context.Context, m *jsonrpc.Message, raw []byte, s, end int, again *decision) (*decision, error) {
	dir := m.Dir
	d := &decision{raw: raw}
	var elems [][2]int
	if _, err := jsonscan.Array(raw, s, 0, func(_, a, z int) error {
		elems = append(elems, [2]int{a, z})
		return nil
	}); err != nil {
		return d, fmt.Errorf("batch: %v: %w", err, catalog.ErrBadInput)
	}
	if len(elems) == 0 {
		return d, nil // an empty batch is the receiver's to reject
	}
	var kept, replies [][]byte
	changed := false
	// The relay classified the batch element by element, in order.
	classified := again == nil && m.Info.Kind == jsonrpc.KindBatch && len(m.Info.Batch) == len(elems)
	for i, el := range elems {
		ed := &decision{raw: raw[el[0]:el[1]:el[1]]}
		var req *pendingReq
		if again == nil && i < len(m.Answers) && m.Answers[i].Seq != 0 {
			req = &pendingReq{method: m.Answers[i].Method, tool: m.Answers[i].Tool}
		}
		var info *jsonrpc.Info
		if classified {
			info = &m.Info.Batch[i]
		}
		if err := e.decideOne(ctx, dir, ed, nil, req, info); err != nil {
			d.rules = ed.rules
			return d, err
		}
		for _, r := range ed.rules {
			d.add(r)
		}
		if ed.reply != nil {
			replies = append(replies, ed.reply)
		}
		if ed.drop {
			changed = true
			continue
		}
		if !bytes.Equal(ed.raw, raw[el[0]:el[1]]) {
			changed = true
		}
		kept = append(kept, ed.raw)
	}
	if len(replies) > 0 {
		d.reply = joinArray(replies)
	}
	switch {
	case len(kept) == 0:
		d.drop = true
	case changed:
		d.raw = joinArray(kept)
	}
	if again != nil && len(d.rules) == 0 {
		d.rules = []string{RuleUser}
	}
	return d, nil
}

func joinArray(items [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(items, []byte{','})...), ']')
}

// decideOne runs the built-in rules and then the user's rules on one message
// (d.raw), leaving the outcome in d. req is the request it answers, if the
// relay knows one; info, when not nil, is d.raw's classification by the
// relay, which spares reading the envelope again.
func (e *Engine) decideOne(ctx context.Context, dir jsonrpc.Direction, d *decision, again *decision, req *pendingReq, info *jsonrpc.Info) error {
	env, ok := classifiedEnvelope(d.raw, info)
	if !ok {
		var err error
		if env, err = readEnvelope(d.raw); err != nil {
			return fmt.Errorf("refused a %s message: %v: %w", dir, err, catalog.ErrBadInput)
		}
	}
	d.env = env
	switch {
	case again != nil:
		d.req = again.req
	case env.kind == jsonrpc.KindResponse || env.kind == jsonrpc.KindError:
		d.req = req
	}
	if !env.object {
		// Not a JSON-RPC message: nothing to route or match, but what a
		// server writes still goes to the client, and is scrubbed as text.
		if dir == jsonrpc.ServerToClient && e.cfg.ScrubResults {
			var out []byte
			var n int
			var err error
			if env.valid {
				// JSON all the same (an element of a batch): its strings
				// are scrubbed as strings, so that the JSON stays valid.
				out, n, err = scrubMessage(e.o.Scrubber, d.raw, env.start, env.end)
			} else {
				out, n, err = scrubText(e.o.Scrubber, d.raw)
			}
			if err != nil {
				return err
			}
			if n > 0 {
				d.raw = out
				d.add(RuleScrub)
			}
		}
		return nil
	}
	if err := e.builtins(ctx, dir, d); err != nil {
		return err
	}
	if d.drop {
		return nil
	}
	return e.userRules(dir, d)
}

// builtins applies the built-in rules.
func (e *Engine) builtins(ctx context.Context, dir jsonrpc.Direction, d *decision) error {
	env := d.env
	if dir == jsonrpc.ClientToServer {
		if env.method != "tools/call" || env.kind != jsonrpc.KindRequest && env.kind != jsonrpc.KindNotification {
			return nil
		}
		if e.isAllow && !e.allowed(env.tool) {
			d.add(RuleAllowlist)
			d.drop = true
			d.reply = e.refusal(env, RuleAllowlist, fmt.Sprintf(
				"contextd refused the call: tool %q is not on the allowlist of server %q (configuration key %s)",
				env.tool, e.o.Server, allowKey(e.o.Server)))
			return nil
		}
		if e.cfg.Pin {
			refuse, err := e.pinRefuses(ctx, env.tool)
			if err != nil {
				d.add(RulePin)
				return err
			}
			if refuse {
				d.add(RulePin)
				d.drop = true
				d.reply = e.refusal(env, RulePin, fmt.Sprintf(
					"contextd refused the call: tool %q of server %q changed its description or schema since it was pinned "+
						"(a possible rug pull); review the change and run `%s` to allow calls again",
					env.tool, e.o.Server, approveCommand(e.o.Server, env.tool)))
				return nil
			}
		}
		if e.cfg.ScrubArguments {
			out, n, err := scrubAt(e.o.Scrubber, d.raw, argumentsPath)
			if err != nil {
				d.add(RuleScrub)
				return fmt.Errorf("scrub the arguments of %q: %v: %w", env.tool, err, catalog.ErrBadInput)
			}
			if n > 0 {
				d.raw = out
				d.add(RuleScrub)
			}
		}
		return nil
	}

	// Server to client.
	if env.kind == jsonrpc.KindResponse && (d.req != nil && d.req.method == "tools/list" || d.req == nil && looksLikeToolList(d.raw)) &&
		(e.isAllow || e.cfg.Pin) {
		if err := e.filterToolList(ctx, d); err != nil {
			return err
		}
	}
	if e.cfg.ScrubResults {
		out, n, err := scrubMessage(e.o.Scrubber, d.raw, jsonscan.Space(d.raw, 0), len(d.raw))
		if err != nil {
			d.add(RuleScrub)
			return fmt.Errorf("scrub a server message: %v: %w", err, catalog.ErrBadInput)
		}
		if n > 0 {
			d.raw = out
			d.add(RuleScrub)
		}
	}
	if e.cfg.Budget && e.o.Budgeter != nil {
		if err := e.bound(ctx, d); err != nil {
			d.add(RuleBudget)
			return err
		}
	}
	return nil
}

// bound holds a server's message to the budget, each kind as its shape
// allows: a tools/call result's text, and a resources/read result's text
// contents, are cut like safe_bash's output (the rest kept for pages); any
// other result, or one still over once its text is cut (embedded resources,
// binary blobs; a tools/call result's images and audio do not count), is
// answered with a JSON-RPC error naming the budget; a
// request of the server's (sampling/createMessage, elicitation/create...)
// is refused, the error going back to the server; a notification (logging,
// progress, resources/updated...) is dropped. Each is recorded under the
// budget rule. A tools/list result is not bounded here: the allowlist and
// the pins judge it, and a client that lost it would lose the server.
func (e *Engine) bound(ctx context.Context, d *decision) error {
	env := d.env
	method := ""
	if d.req != nil {
		method = d.req.method
	}
	switch env.kind {
	case jsonrpc.KindResponse:
		switch {
		case method == "tools/list" || d.req == nil && looksLikeToolList(d.raw):
			return nil
		}
		rest := d.raw
		switch method {
		case "tools/call":
			// Images and audio pass as they are (a client shows them as
			// media; [mcp] max_message_bytes bounds them); embedded
			// resources and the rest count.
			var err error
			if rest, err = e.fitResult(ctx, d, contentPath, true); err != nil {
				return err
			}
		case "resources/read":
			var err error
			if rest, err = e.fitResult(ctx, d, contentsPath, false); err != nil {
				return err
			}
		}
		// What is left over the budget once text is cut (for a resource:
		// the result without its text, whose cut fits).
		if limit, over := e.o.Budgeter.Over(rest); over {
			what := "the result"
			if method != "" {
				what = "the " + method + " result"
			}
			d.raw = errorResponse(env.id, ErrCodeRefused, fmt.Sprintf(
				"contextd withheld %s of server %q: it is over the budget of %d tokens (configuration key %s), and its shape has no text to cut",
				what, e.o.Server, limit, budgetKey), RuleBudget)
			d.add(RuleBudget)
		}
	case jsonrpc.KindError:
		if limit, over := e.o.Budgeter.Over(d.raw); over {
			d.raw = errorResponse(env.id, ErrCodeRefused, fmt.Sprintf(
				"contextd withheld an error of server %q: it is over the budget of %d tokens (configuration key %s)",
				e.o.Server, limit, budgetKey), RuleBudget)
			d.add(RuleBudget)
		}
	case jsonrpc.KindRequest:
		if limit, over := e.o.Budgeter.Over(d.raw); over {
			d.drop = true
			d.reply = errorResponse(env.id, ErrCodeRefused, fmt.Sprintf(
				"contextd refused the %s request: it is over the client's budget of %d tokens (configuration key %s)",
				env.method, limit, budgetKey), RuleBudget)
			d.add(RuleBudget)
		}
	case jsonrpc.KindNotification:
		if _, over := e.o.Budgeter.Over(d.raw); over {
			d.drop = true // no one to answer; the record shows the drop
			d.add(RuleBudget)
		}
	}
	return nil
}

// budgetKey is the configuration key of a wrapped server's budget, for the
// messages that name it.
const budgetKey = "mcp.max_tokens"

var (
	argumentsPath = MustPath("params.arguments")
	toolsPath     = MustPath("result.tools")
	contentPath   = MustPath("result.content")
	contentsPath  = MustPath("result.contents")
	structPath    = MustPath("result.structuredContent")
)

// refusal is the JSON-RPC error that answers a refused request (nil for a
// notification, which gets no answer).
func (e *Engine) refusal(env envelope, rule, msg string) []byte {
	if env.kind != jsonrpc.KindRequest {
		return nil
	}
	return errorResponse(env.id, ErrCodeRefused, msg, rule)
}

// errorResponse builds a JSON-RPC error response. id is the request's id
// JSON, copied as it was.
func errorResponse(id []byte, code int, msg, rule string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	fmt.Fprintf(&b, `,"error":{"code":%d,"message":`, code)
	b.Write(quote(msg))
	b.WriteString(`,"data":{"contextd":`)
	b.Write(quote(catalog.ErrPolicy.Code))
	b.WriteString(`,"rule":`)
	b.Write(quote(rule))
	b.WriteString(`}}}`)
	return b.Bytes()
}

// approveCommand is the command line that approves a changed tool, quoted
// for a POSIX shell where needed.
func approveCommand(server, tool string) string {
	return "contextd mcp approve " + shellQuote(server) + " " + shellQuote(tool)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@=+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e *Engine) allowed(tool string) bool {
	for _, g := range e.allow {
		if g.match(tool) {
			return true
		}
	}
	return false
}

// looksLikeToolList reports whether a response whose request is unknown has
// a tools/list result's shape. Such a response is filtered and pinned anyway:
// the allowlist must not depend on the engine having seen the request.
func looksLikeToolList(b []byte) bool {
	s, e, err := jsonscan.Document(b)
	if err != nil {
		return false
	}
	ts, _, ok, err := lookup(b, s, e, toolsPath)
	return err == nil && ok && b[ts] == '['
}

// pinNotice replaces the description of a tool whose pin changed: the new
// description may be the attack (instructions to the model), so it is not
// passed on while the change waits for the user.
const pinNotice = "contextd: the server changed this tool's description or schema since it was pinned; " +
	"its new description is withheld and calls to it are refused until the user reviews the change and runs `%s`."

// filterToolList takes the tools off a tools/list result that the allowlist
// does not allow, and pins the others, withholding the description of those
// whose pin changed.
func (e *Engine) filterToolList(ctx context.Context, d *decision) error {
	b := d.raw
	s, end, err := jsonscan.Document(b)
	if err != nil {
		return err
	}
	ts, te, ok, err := lookup(b, s, end, toolsPath)
	if err != nil {
		return fmt.Errorf("tools/list result: %v: %w", err, catalog.ErrBadInput)
	}
	if !ok || b[ts] != '[' {
		return nil
	}
	var elems [][2]int
	if _, err := jsonscan.Array(b, ts, 0, func(_, a, z int) error {
		elems = append(elems, [2]int{a, z})
		return nil
	}); err != nil {
		return err
	}
	var kept [][]byte
	changed := false
	for _, el := range elems {
		tool := b[el[0]:el[1]:el[1]]
		name, named := toolName(tool)
		if e.isAllow && (!named || !e.allowed(name)) {
			d.add(RuleAllowlist)
			changed = true
			continue
		}
		if e.cfg.Pin && named {
			hash, err := ToolHash(tool)
			if err != nil {
				d.add(RulePin)
				return fmt.Errorf("pin tool %q: %v: %w", name, err, catalog.ErrBadInput)
			}
			differs, err := e.pinList(ctx, name, hash)
			if err != nil {
				d.add(RulePin)
				return err
			}
			if differs {
				out, err := setPath(tool, Path{{Name: "description", Index: -1}},
					quote(fmt.Sprintf(pinNotice, approveCommand(e.o.Server, name))))
				if err != nil {
					d.add(RulePin)
					return fmt.Errorf("mark changed tool %q: %v: %w", name, err, catalog.ErrBadInput)
				}
				tool = out
				d.add(RulePin)
				changed = true
			}
		}
		kept = append(kept, tool)
	}
	if changed {
		d.raw = splice(b, ts, te, joinArray(kept))
	}
	return nil
}

// toolName returns the name of a tool in a tools/list result.
func toolName(tool []byte) (string, bool) {
	s, _, err := jsonscan.Document(tool)
	if err != nil || tool[s] != '{' {
		return "", false
	}
	m, ok, err := jsonscan.Find(tool, s, "name")
	if err != nil || !ok || tool[m.Start] != '"' {
		return "", false
	}
	name, err := jsonscan.StringValue(tool, m.Start)
	return name, err == nil
}

// pinList records that tools/list showed tool with hash: a tool never seen
// is pinned; a hash other than the pinned one is stored as pending (once).
// It reports whether hash differs from the pin.
func (e *Engine) pinList(ctx context.Context, tool, hash string) (bool, error) {
	e.mu.Lock()
	e.listed[tool] = hash
	known := e.approved[tool] == hash
	e.mu.Unlock()
	if known {
		return false, nil
	}
	p, ok, err := e.o.Pins.Get(ctx, e.o.Server, tool)
	if err != nil {
		return false, pinStoreErr(err)
	}
	now := nowUTC()
	switch {
	case !ok:
		if err := e.o.Pins.Put(ctx, e.o.Server, Pin{Tool: tool, Hash: hash, Pinned: now}); err != nil {
			return false, pinStoreErr(err)
		}
	case p.Hash == hash:
		if p.Pending != "" {
			// The server went back to what was approved.
			p.Pending, p.Changed = "", timeZero
			if err := e.o.Pins.Put(ctx, e.o.Server, p); err != nil {
				return false, pinStoreErr(err)
			}
		}
	default:
		if p.Pending != hash {
			p.Pending, p.Changed = hash, now
			if err := e.o.Pins.Put(ctx, e.o.Server, p); err != nil {
				return false, pinStoreErr(err)
			}
		}
		return true, nil
	}
	e.mu.Lock()
	e.approved[tool] = hash
	e.mu.Unlock()
	return false, nil
}

// pinRefuses reports whether a call to tool must be refused: the latest
// tools/list of this session showed it with a hash other than its pin. A
// tool no list showed in this session is not refused: the client got its
// description elsewhere (an earlier session, whose list was checked then).
func (e *Engine) pinRefuses(ctx context.Context, tool string) (bool, error) {
	e.mu.Lock()
	hash, listed := e.listed[tool]
	known := listed && e.approved[tool] == hash
	e.mu.Unlock()
	if !listed || known {
		return false, nil
	}
	p, ok, err := e.o.Pins.Get(ctx, e.o.Server, tool)
	if err != nil {
		return false, pinStoreErr(err)
	}
	if !ok {
		// The pin was removed since the list: pin what was listed.
		if err := e.o.Pins.Put(ctx, e.o.Server, Pin{Tool: tool, Hash: hash, Pinned: nowUTC()}); err != nil {
			return false, pinStoreErr(err)
		}
	} else if p.Hash != hash {
		return true, nil
	}
	e.mu.Lock()
	e.approved[tool] = hash
	e.mu.Unlock()
	return false, nil
}

func pinStoreErr(err error) error {
	return fmt.Errorf("tool pins: %w: %w", err, catalog.ErrStoreUnavailable)
}

// fitResult cuts the text items of a result to its budget: the array at
// path (a tools/call result's content, whose text items have type "text";
// typed false, a resources/read result's contents, whose text items are
// those with a text). Text items are joined (one line break between them)
// and cut as one text; the cut text replaces the first, the others are taken
// out, and items of other types (images, resources, blobs) stay.
// structuredContent, which repeats the result in another form, is taken out
// of a cut result: kept, it would carry the whole output past the budget.
// It returns the result without its text items (all of it when it has none),
// for the caller to bound what the cut does not.
func (e *Engine) fitResult(ctx context.Context, d *decision, path Path, typed bool) (rest []byte, err error) {
	b := d.raw
	s, end, err := jsonscan.Document(b)
	if err != nil {
		return b, err
	}
	cs, ce, ok, err := lookup(b, s, end, path)
	if err != nil || !ok || b[cs] != '[' {
		return b, err
	}
	type item struct {
		a, z  int
		text  bool
		media bool // an image or audio item, which a client shows as such, not as text
	}
	var items []item
	var texts [][]byte
	if _, err := jsonscan.Array(b, cs, 0, func(_, a, z int) error {
		it := item{a: a, z: z}
		if b[a] == '{' {
			isText := !typed
			if typed {
				tm, ok, err := jsonscan.Find(b, a, "type")
				if err != nil {
					return err
				}
				isText = ok && string(b[tm.Start:tm.End]) == `"text"`
				it.media = ok && (string(b[tm.Start:tm.End]) == `"image"` || string(b[tm.Start:tm.End]) == `"audio"`)
			}
			if isText {
				xm, ok, err := jsonscan.Find(b, a, "text")
				if err != nil {
					return err
				}
				if ok && b[xm.Start] == '"' {
					t, err := jsonscan.StringValue(b, xm.Start)
					if err != nil {
						return err
					}
					texts = append(texts, []byte(t))
					it.text = true
				}
			}
		}
		items = append(items, it)
		return nil
	}); err != nil {
		return b, fmt.Errorf("%s result: %v: %w", d.req.method, err, catalog.ErrBadInput)
	}
	var others [][]byte
	for _, it := range items {
		if !it.text && !it.media {
			others = append(others, b[it.a:it.z:it.z])
		}
	}
	rest = splice(b, cs, ce, joinArray(others))
	if len(texts) == 0 {
		return rest, nil
	}
	tool := d.req.tool
	if tool == "" {
		tool = d.req.method // a resource's text: what the pages are named by
	}
	out, cut, err := e.o.Budgeter.Fit(ctx, e.o.Server, tool, bytes.Join(texts, []byte{'\n'}))
	if err != nil {
		return b, fmt.Errorf("budget of %q's result: %w", tool, err)
	}
	if !cut {
		return rest, nil
	}
	var kept [][]byte
	first := true
	for _, it := range items {
		el := b[it.a:it.z:it.z]
		if it.text {
			if !first {
				continue
			}
			first = false
			if el, err = setPath(el, Path{{Name: "text", Index: -1}}, quote(string(out))); err != nil {
				return b, err
			}
		}
		kept = append(kept, el)
	}
	nb := splice(b, cs, ce, joinArray(kept))
	if nb, _, err = deletePath(nb, structPath); err != nil {
		return b, err
	}
	if rest, _, err = deletePath(rest, structPath); err != nil {
		return b, err
	}
	d.raw = nb
	d.add(RuleBudget)
	return rest, nil
}

// userRules applies the first of the user's rules that matches.
func (e *Engine) userRules(dir jsonrpc.Direction, d *decision) error {
	if len(e.cc.rules) == 0 {
		return nil
	}
	mc := e.matchCtx(dir, d)
	for _, r := range e.cc.rules {
		ok, err := r.match.matches(mc)
		if err != nil {
			d.add(r.name)
			return fmt.Errorf("rule %q: %v; the message is blocked: %w", r.name, err, catalog.ErrPolicy)
		}
		if !ok {
			continue
		}
		d.add(r.name)
		switch r.action {
		case actDrop:
			d.drop = true
			d.reply = e.refusal(d.env, r.name, fmt.Sprintf("contextd dropped the message: rule %q", r.name))
		case actModify:
			out := d.raw
			for _, s := range r.set {
				if out, err = setPath(out, s.path, s.value); err != nil {
					return fmt.Errorf("rule %q: set %s: %v; the message is blocked: %w", r.name, s.path, err, catalog.ErrPolicy)
				}
			}
			for _, p := range r.del {
				if out, _, err = deletePath(out, p); err != nil {
					return fmt.Errorf("rule %q: delete %s: %v; the message is blocked: %w", r.name, p, err, catalog.ErrPolicy)
				}
			}
			if _, _, err := jsonscan.Document(out); err != nil {
				return fmt.Errorf("rule %q made invalid JSON (%v); the message is blocked: %w", r.name, err, catalog.ErrPolicy)
			}
			d.raw = out
		}
		return nil
	}
	return nil
}

// matchCtx is what a matcher looks at.
type matchCtx struct {
	server       string
	dir          jsonrpc.Direction
	kind         jsonrpc.Kind
	method, tool string
	raw          []byte
}

func (e *Engine) matchCtx(dir jsonrpc.Direction, d *decision) *matchCtx {
	mc := &matchCtx{server: e.o.Server, dir: dir, kind: d.env.kind, method: d.env.method, tool: d.env.tool, raw: d.raw}
	if d.req != nil {
		mc.method, mc.tool = d.req.method, d.req.tool
	}
	return mc
}

func (m *matcher) matches(mc *matchCtx) (bool, error) {
	if m.dir != 0 && m.dir != mc.dir {
		return false, nil
	}
	if len(m.kinds) > 0 {
		found := false
		for _, k := range m.kinds {
			found = found || k == mc.kind
		}
		if !found {
			return false, nil
		}
	}
	if m.method != nil && !m.method.match(mc.method) ||
		m.tool != nil && (mc.tool == "" || !m.tool.match(mc.tool)) ||
		m.server != nil && !m.server.match(mc.server) {
		return false, nil
	}
	if len(m.when) == 0 {
		return true, nil
	}
	s, e, err := jsonscan.Document(mc.raw)
	if err != nil {
		return false, err
	}
	for _, c := range m.when {
		ok, err := c.holds(mc.raw, s, e)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// holds evaluates one condition on the message at b[s:e].
func (c *compiledCond) holds(b []byte, s, e int) (bool, error) {
	vs, ve, ok, err := lookup(b, s, e, c.path)
	if err != nil {
		return false, fmt.Errorf("path %s: %w", c.src, err)
	}
	if c.exists != nil && *c.exists != ok {
		return false, nil
	}
	if !ok {
		// Only "exists = false" holds on a missing value.
		return c.exists != nil && !c.hasEq && c.matches == nil, nil
	}
	val := b[vs:ve]
	if c.hasEq && !equalJSON(canonical(val), c.equals) {
		return false, nil
	}
	if c.matches != nil {
		text := string(val)
		if val[0] == '"' {
			if text, err = jsonscan.StringValue(val, 0); err != nil {
				return false, fmt.Errorf("path %s: %w", c.src, err)
			}
		}
		if !c.matches.MatchString(text) {
			return false, nil
		}
	}
	return true, nil
}

// Redact scrubs a message for storage (the session record's originals and
// replies): every string outside the envelope, whichever way it went. It
// returns raw itself when there is nothing to hide, or when the engine has no
// scrubber (scrubbing turned off in the configuration).
func (e *Engine) Redact(raw []byte) []byte {
	if e.o.Scrubber == nil {
		return raw
	}
	out, err := ScrubJSON(e.o.Scrubber, raw)
	if err != nil {
		// Valid JSON that the walker refuses (nesting too deep): fall back
		// to scrubbing it as text, which may break its JSON but hides the
		// secrets.
		out, _, _ = scrubText(e.o.Scrubber, raw)
	}
	return out
}

// errNotHeld: the seq given to Forward, Modify or Drop is not held (never
// was, or was released already).
var errNotHeld = errors.New("no held message with that sequence number")
