package jsonrpc

import (
	"bytes"
	"encoding/json"
	"sync"
)

// DefaultMaxPending is how many outstanding requests a Correlator remembers by
// default, over both directions. An MCP client rarely has more than a few dozen
// calls in flight; the bound only matters against a peer that sends requests it
// never has answered, which would otherwise grow the table without end.
const DefaultMaxPending = 4096

// Match is the request a response answers.
type Match struct {
	Seq    uint64          // the request's Seq
	Method string          // its method
	Tool   string          // its params.name, for tools/call
	ID     json.RawMessage // its id as the request spelled it
}

// Correlator links responses to the requests they answer, keyed by Key. It is
// safe for concurrent use, and its zero value is ready, with DefaultMaxPending.
//
// Memory is bounded: past the limit, the oldest outstanding request is
// forgotten (its late response then correlates with nothing, which the relay
// tolerates). A request named by a notifications/cancelled is kept, since the
// response may already be on its way, but it is moved to the front of the
// eviction order and no longer counts as pending.
type Correlator struct {
	mu         sync.Mutex
	max        int
	byKey      map[string]*pending
	head, tail *pending // eviction order: head is evicted first
	live       [3]int   // outstanding, not cancelled, by Direction
}

type pending struct {
	key        string
	dir        Direction
	m          Match
	cancelled  bool
	prev, next *pending
}

// NewCorrelator returns a Correlator remembering at most max outstanding
// requests (DefaultMaxPending when max <= 0).
func NewCorrelator(max int) *Correlator {
	return &Correlator{max: max}
}

// Request remembers the requests in m (one, or a batch's), keyed by the
// direction m travelled and their ids. A notifications/cancelled in m marks the
// request it names. Other messages are ignored, so any message may be passed.
// A request reusing the id of one still outstanding replaces it.
func (c *Correlator) Request(m *Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Info.Kind == KindBatch {
		for i := range m.Info.Batch {
			c.request(m.Dir, m.Seq, &m.Info.Batch[i])
		}
		return
	}
	c.request(m.Dir, m.Seq, &m.Info)
}

func (c *Correlator) request(dir Direction, seq uint64, in *Info) {
	switch {
	case in.Kind == KindRequest:
		k := Key(dir, in.ID)
		if k == "" {
			return
		}
		if old := c.byKey[k]; old != nil {
			c.remove(old)
		}
		if c.byKey == nil {
			c.byKey = make(map[string]*pending)
		}
		p := &pending{key: k, dir: dir, m: Match{Seq: seq, Method: in.Method, Tool: in.Tool, ID: bytes.Clone(in.ID)}}
		c.byKey[k] = p
		c.pushBack(p)
		c.live[dir]++
		limit := c.max
		if limit <= 0 {
			limit = DefaultMaxPending
		}
		for len(c.byKey) > limit {
			c.remove(c.head)
		}
	case in.Kind == KindNotification && len(in.CancelID) > 0:
		p := c.byKey[Key(dir, in.CancelID)]
		if p == nil || p.cancelled {
			return
		}
		p.cancelled = true
		c.live[p.dir]--
		c.unlink(p)
		c.pushFront(p)
	}
}

// Match fills in what m answers, as a relay does for each message it reads:
// for a request, Corr is its own Seq; for a response or error, Corr,
// ReqMethod and ReqTool are those of the request it answers, which is
// forgotten. For a batch, Answers holds what each element answers, Corr and
// ReqMethod the first element's that answers a known request (or, failing
// that, the batch's own Seq when it holds a request). This is the one
// correlation of the MCP path: handlers and observers read it from m.
func (c *Correlator) Match(m *Message) {
	answer := func(in *Info) (Match, bool) {
		if in.Kind != KindResponse && in.Kind != KindError {
			return Match{}, false
		}
		p, ok := c.Answer(m.Dir, in.ID)
		if ok && m.Corr == 0 {
			m.Corr, m.ReqMethod, m.ReqTool = p.Seq, p.Method, p.Tool
		}
		return p, ok
	}
	switch m.Info.Kind {
	case KindRequest:
		m.Corr = m.Seq
	case KindResponse, KindError:
		answer(&m.Info)
	case KindBatch:
		hasRequest := false
		m.Answers = make([]Match, len(m.Info.Batch))
		for i := range m.Info.Batch {
			if p, ok := answer(&m.Info.Batch[i]); ok {
				m.Answers[i] = p
			}
			hasRequest = hasRequest || m.Info.Batch[i].Kind == KindRequest
		}
		if m.Corr == 0 && hasRequest {
			m.Corr = m.Seq
		}
	}
}

// Response finds the request m answers (for a batch, the first element that
// answers one), forgets it (all the batch answers), and returns its Seq and
// method. ok is false when m is not a response or answers nothing remembered.
func (c *Correlator) Response(m *Message) (reqSeq uint64, method string, ok bool) {
	if m.Info.Kind == KindBatch {
		for i := range m.Info.Batch {
			el := &m.Info.Batch[i]
			if el.Kind != KindResponse && el.Kind != KindError {
				continue
			}
			if r, found := c.Answer(m.Dir, el.ID); found && !ok {
				reqSeq, method, ok = r.Seq, r.Method, true
			}
		}
		return reqSeq, method, ok
	}
	if m.Info.Kind != KindResponse && m.Info.Kind != KindError {
		return 0, "", false
	}
	r, ok := c.Answer(m.Dir, m.Info.ID)
	return r.Seq, r.Method, ok
}

// Answer finds and forgets the request that a response with the given id,
// travelling respDir, answers.
func (c *Correlator) Answer(respDir Direction, id json.RawMessage) (Match, bool) {
	return c.take(Key(respDir.Reverse(), id))
}

func (c *Correlator) take(k string) (Match, bool) {
	if k == "" {
		return Match{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.byKey[k]
	if p == nil {
		return Match{}, false
	}
	c.remove(p)
	return p.m, true
}

// Pending is how many requests that travelled reqDir await an answer, not
// counting cancelled ones.
func (c *Correlator) Pending(reqDir Direction) int {
	if reqDir != ClientToServer && reqDir != ServerToClient {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live[reqDir]
}

// PendingIDs returns the ids of the requests that travelled reqDir and await
// an answer, not counting cancelled ones, oldest first: the requests a peer
// that can no longer answer leaves waiting.
func (c *Correlator) PendingIDs(reqDir Direction) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []json.RawMessage
	for p := c.head; p != nil; p = p.next {
		if p.dir == reqDir && !p.cancelled {
			ids = append(ids, bytes.Clone(p.m.ID))
		}
	}
	return ids
}

// Len is how many requests are remembered, cancelled ones included.
func (c *Correlator) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

func (c *Correlator) remove(p *pending) {
	delete(c.byKey, p.key)
	c.unlink(p)
	if !p.cancelled {
		c.live[p.dir]--
	}
}

func (c *Correlator) unlink(p *pending) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		c.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		c.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

func (c *Correlator) pushBack(p *pending) {
	p.prev = c.tail
	if c.tail != nil {
		c.tail.next = p
	} else {
		c.head = p
	}
	c.tail = p
}

func (c *Correlator) pushFront(p *pending) {
	p.next = c.head
	if c.head != nil {
		c.head.prev = p
	} else {
		c.tail = p
	}
	c.head = p
}
