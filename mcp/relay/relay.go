package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
)

// DefaultDrainTimeout is how long, by default, the relay keeps delivering the
// server's answers after the client has stopped sending.
const DefaultDrainTimeout = 5 * time.Second

// Options configures Run. The zero value (or nil) forwards everything and
// observes nothing.
type Options struct {
	// Handler decides each message's fate. nil: forward everything.
	Handler Handler
	// Observer sees each message after its verdict. nil: none.
	Observer Observer
	// Correlator links responses to requests. nil: a new one with
	// jsonrpc.DefaultMaxPending. Pass one to inspect it during the run.
	Correlator *jsonrpc.Correlator
	// DrainTimeout bounds how long the relay goes on delivering the server's
	// messages after the client's end of input, while requests the client
	// sent are unanswered (a client may write its requests, close its end and
	// still read the answers). 0: DefaultDrainTimeout; negative: no wait.
	DrainTimeout time.Duration
}

// Rule names the relay gives verdicts it makes itself, for the record.
const (
	RuleInvalid = "relay:invalid" // a message that does not classify
	RuleFailed  = "relay:failed"  // the handler failed or gave an unusable verdict
)

// Run relays messages between client and server until either side ends its
// input, ctx ends, or a side fails. Two loops run, one per direction, so a
// slow or held message in one direction never stops the other.
//
// Each message is classified, numbered (one Seq counter over both
// directions, taken when it is read), correlated, passed to the Handler,
// written per its verdict, and then shown to the Observer. Verdict.Reply goes
// back to the side the message came from; writes to one side never
// interleave.
//
// The relay fails closed. A message that does not classify, or whose handler
// fails, is not passed on: a request is answered with a JSON-RPC error; a
// response is replaced by a JSON-RPC error response, so the requester does
// not wait for ever; a notification is dropped. The Observer sees the error.
//
// The end of the server's input ends the run at once; the end of the
// client's input ends it once the server has answered what the client sent,
// or after DrainTimeout. Both are a clean end (nil). When ctx ends, Run
// returns an error wrapping catalog.ErrInterrupted. Run closes both
// connections before it returns.
func Run(ctx context.Context, client, server transport.Conn, opts *Options) error {
	r := &relay{drained: make(chan struct{})}
	if opts != nil {
		r.opts = *opts
	}
	r.corr = r.opts.Correlator
	if r.corr == nil {
		r.corr = jsonrpc.NewCorrelator(0)
	}
	if r.opts.DrainTimeout == 0 {
		r.opts.DrainTimeout = DefaultDrainTimeout
	}
	clientSide, serverSide := &side{conn: client}, &side{conn: server}

	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	type end struct {
		dir jsonrpc.Direction
		err error
	}
	ends := make(chan end, 2)
	go func() {
		ends <- end{jsonrpc.ClientToServer, r.loop(loopCtx, jsonrpc.ClientToServer, clientSide, serverSide)}
	}()
	go func() {
		ends <- end{jsonrpc.ServerToClient, r.loop(loopCtx, jsonrpc.ServerToClient, serverSide, clientSide)}
	}()

	var (
		result  error
		running = 2
		drainC  <-chan time.Time
	)
wait:
	for running > 0 {
		select {
		case e := <-ends:
			running--
			if ctx.Err() != nil {
				result = fmt.Errorf("mcp relay: %w: %w", catalog.ErrInterrupted, context.Cause(ctx))
				break wait
			}
			if e.err == nil || isEnd(e.err) {
				if e.dir == jsonrpc.ClientToServer && running > 0 && r.opts.DrainTimeout > 0 {
					t := time.NewTimer(r.opts.DrainTimeout)
					defer t.Stop()
					drainC = t.C
					r.draining.Store(true)
					r.checkDrained()
					continue
				}
				break wait
			}
			result = loopError(e.dir, e.err)
			break wait
		case <-r.drained:
			break wait
		case <-drainC:
			break wait
		case <-ctx.Done():
			result = fmt.Errorf("mcp relay: %w: %w", catalog.ErrInterrupted, context.Cause(ctx))
			break wait
		}
	}
	stop()
	var errs []error
	for _, c := range []transport.Conn{client, server} {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for ; running > 0; running-- {
		<-ends
	}
	if result == nil && len(errs) > 0 {
		result = fmt.Errorf("mcp relay: closing: %w", errors.Join(errs...))
	}
	return result
}

// isEnd reports whether a loop's error is a side ending rather than failing.
func isEnd(err error) bool {
	return transport.IsClosed(err) || errors.Is(err, context.Canceled)
}

func loopError(dir jsonrpc.Direction, err error) error {
	if c := catalog.ClassOf(err); c == catalog.ErrInternal && !errors.Is(err, catalog.ErrInternal) {
		return fmt.Errorf("mcp relay: %s: %w: %w", dir, catalog.ErrIO, err)
	}
	return fmt.Errorf("mcp relay: %s: %w", dir, err)
}

type relay struct {
	opts      Options
	corr      *jsonrpc.Correlator
	seq       atomic.Uint64
	draining  atomic.Bool
	drained   chan struct{}
	drainOnce sync.Once

	// Observation order: each loop observes its own direction in Seq order;
	// a response additionally waits until its request has been observed.
	obsMu    sync.Mutex
	observed [3]uint64     // the last Seq observed, by Direction
	wake     chan struct{} // closed at the next observation, when someone waits
}

// maxObserveWait bounds how long a response's observation waits for its
// request's: only as long as the other loop takes from writing the request
// to observing it, unless the Observer itself is slow.
const maxObserveWait = time.Second

// side is one peer's connection; its mutex keeps the two loops' writes to it
// (a forwarded message, a reply) whole and in order.
type side struct {
	conn transport.Conn
	mu   sync.Mutex
}

// write writes msg, with info, its classification, when the relay has one
// (the connection then need not classify it again).
func (s *side) write(ctx context.Context, msg []byte, info *jsonrpc.Info) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return transport.WriteClassified(ctx, s.conn, msg, info)
}

// checkDrained signals the end of the drain once the client's requests are
// all answered (or cancelled).
func (r *relay) checkDrained() {
	if r.draining.Load() && r.corr.Pending(jsonrpc.ClientToServer) == 0 {
		r.drainOnce.Do(func() { close(r.drained) })
	}
}

// loop forwards one direction until its source ends or fails.
func (r *relay) loop(ctx context.Context, dir jsonrpc.Direction, src, dst *side) error {
	for {
		raw, err := src.conn.Read(ctx)
		if err != nil {
			if !errors.Is(err, jsonrpc.ErrTooLarge) {
				return err
			}
			// The transport dropped it unread: nothing to answer, but the
			// record shows it.
			m := &jsonrpc.Message{Seq: r.seq.Add(1), Dir: dir, Time: time.Now()}
			r.observe(m, Verdict{Action: Drop, Rule: RuleInvalid}, err)
			continue
		}
		if err := r.handle(ctx, dir, src, dst, raw); err != nil {
			return err
		}
		if dir == jsonrpc.ServerToClient {
			r.checkDrained()
		}
	}
}

func (r *relay) observe(m *jsonrpc.Message, v Verdict, err error) {
	if r.opts.Observer == nil {
		return
	}
	if m.Corr != 0 && m.Corr != m.Seq {
		r.awaitObserved(m.Dir.Reverse(), m.Corr)
	}
	r.opts.Observer.Observe(m, v, err)
	r.obsMu.Lock()
	r.observed[m.Dir] = m.Seq
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	r.obsMu.Unlock()
}

// awaitObserved waits until the message seq that travelled dir has been
// observed, so that an Observer sees a request before its response even
// though the two directions are observed by different loops. The response can
// only have been read after the request was written, so the wait is short.
func (r *relay) awaitObserved(dir jsonrpc.Direction, seq uint64) {
	var deadline <-chan time.Time
	for {
		r.obsMu.Lock()
		if r.observed[dir] >= seq {
			r.obsMu.Unlock()
			return
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake := r.wake
		r.obsMu.Unlock()
		if deadline == nil {
			t := time.NewTimer(maxObserveWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-wake:
		case <-deadline:
			return
		}
	}
}

// handle takes one message through classification, correlation, the handler
// and delivery.
func (r *relay) handle(ctx context.Context, dir jsonrpc.Direction, src, dst *side, raw []byte) error {
	m := &jsonrpc.Message{Seq: r.seq.Add(1), Dir: dir, Time: time.Now(), Raw: raw}
	info, cerr := jsonrpc.Classify(raw)
	m.Info = info
	if cerr != nil {
		return r.deliver(ctx, m, r.refuse(m, cerr), nil, cerr, src, dst)
	}
	r.corr.Match(m)

	v, herr := Verdict{Action: Forward}, error(nil)
	if r.opts.Handler != nil {
		v, herr = r.opts.Handler.Handle(ctx, m)
		if herr != nil && ctx.Err() != nil {
			return ctx.Err() // the run is ending; the message goes nowhere
		}
	}
	var out jsonrpc.Info
	if herr == nil {
		out, herr = checkVerdict(m, &v)
	}
	var modified *jsonrpc.Info // a handler's replacement's classification
	if herr != nil {
		v = r.block(m, v.Rule, herr)
	} else if v.Action != Drop {
		// Remember the requests going out before they can be answered.
		r.corr.Request(&jsonrpc.Message{Seq: m.Seq, Dir: dir, Info: out})
		if v.Action == Modify {
			modified = new(jsonrpc.Info) // only here: a Forward costs no allocation
			*modified = out
		}
	}
	return r.deliver(ctx, m, v, modified, herr, src, dst)
}

// deliver writes per the verdict, then shows the message to the Observer
// (a response only once its request has been shown). What goes on goes
// with its classification: m's own for a Forward, modified for a Modify,
// nil when the relay has none (a stand-in it built itself, which the
// connection classifies if it needs to).
func (r *relay) deliver(ctx context.Context, m *jsonrpc.Message, v Verdict, modified *jsonrpc.Info, why error, src, dst *side) error {
	var err error
	switch v.Action {
	case Forward:
		err = dst.write(ctx, m.Raw, &m.Info)
	case Modify:
		err = dst.write(ctx, v.Raw, modified)
	}
	if err == nil && len(v.Reply) > 0 {
		err = src.write(ctx, v.Reply, nil)
	}
	if why == nil {
		why = err
	}
	r.observe(m, v, why)
	return err
}

// checkVerdict refuses a verdict the relay cannot carry out safely, and
// classifies what a Modify sends instead (the relay passes on nothing it has
// not checked).
func checkVerdict(m *jsonrpc.Message, v *Verdict) (jsonrpc.Info, error) {
	out := m.Info
	switch v.Action {
	case Forward, Drop:
	case Modify:
		info, err := jsonrpc.Classify(v.Raw)
		if err != nil {
			return out, fmt.Errorf("the handler's replacement message is invalid: %w", err)
		}
		out = info
	default:
		return out, fmt.Errorf("the handler gave an unknown action %d: %w", v.Action, catalog.ErrInternal)
	}
	if len(v.Reply) > 0 {
		if _, err := jsonrpc.Classify(v.Reply); err != nil {
			return out, fmt.Errorf("the handler's reply is invalid: %w", err)
		}
	}
	return out, nil
}

// refuse is the verdict on a message that does not classify: answer what can
// be answered, pass on nothing of it.
func (r *relay) refuse(m *jsonrpc.Message, err error) Verdict {
	msg := fmt.Sprintf("contextd refused an invalid message (%s): %v", catalog.ClassOf(err).Code, err)
	return r.failClosed(m, RuleInvalid, jsonrpc.CodeInvalidRequest, msg, true)
}

// block is the verdict on a message whose handler failed. The error's text
// goes to the peers, so a handler must not quote secrets in its errors.
func (r *relay) block(m *jsonrpc.Message, rule string, err error) Verdict {
	if rule == "" {
		rule = RuleFailed
	}
	c := catalog.ClassOf(err)
	text := err.Error()
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	msg := fmt.Sprintf("contextd blocked this message (%s %s): %s", c.Code, c.Name, text)
	return r.failClosed(m, rule, jsonrpc.CodeInternalError, msg, false)
}

// failClosed drops m and builds the errors that stand in for it: an error
// reply to the sender for each request, an error response to the receiver
// for each response. For an unclassifiable message, whose envelope is
// untrusted, a response is answered only if it names a request actually
// outstanding (which it then settles).
func (r *relay) failClosed(m *jsonrpc.Message, rule string, code int, text string, invalid bool) Verdict {
	v := Verdict{Action: Drop, Rule: rule}
	var replies, forwards [][]byte
	one := func(in *jsonrpc.Info) {
		id := in.ID
		if len(id) == 0 || string(id) == "null" {
			return
		}
		switch {
		case in.Method != "" && (in.Kind == jsonrpc.KindRequest || in.Kind == jsonrpc.KindInvalid):
			replies = append(replies, jsonrpc.ErrorResponse(id, code, text))
		case invalid:
			if in.Method != "" {
				return
			}
			if p, ok := r.corr.Answer(m.Dir, id); ok {
				forwards = append(forwards, jsonrpc.ErrorResponse(p.ID, code, text))
			}
		case in.Kind == jsonrpc.KindResponse || in.Kind == jsonrpc.KindError:
			forwards = append(forwards, jsonrpc.ErrorResponse(id, code, text))
		}
	}
	batch := len(m.Info.Batch) > 0
	if batch {
		for i := range m.Info.Batch {
			one(&m.Info.Batch[i])
		}
	} else {
		one(&m.Info)
	}
	v.Reply = join(replies, batch)
	if len(forwards) > 0 {
		v.Action, v.Raw = Modify, join(forwards, batch)
	}
	return v
}

// join makes one message of several: a batch answers a batch.
func join(msgs [][]byte, batch bool) []byte {
	switch {
	case len(msgs) == 0:
		return nil
	case len(msgs) == 1 && !batch:
		return msgs[0]
	}
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raw[i] = m
	}
	b, err := json.Marshal(raw)
	if err != nil { // the parts are our own valid JSON; keep failing closed regardless
		return nil
	}
	return b
}
