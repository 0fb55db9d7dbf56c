package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy"
	"github.com/contextd/contextd/proxy/client"
	"github.com/contextd/contextd/toolsearch"
	"github.com/contextd/contextd/wire/lite"
)

// The hub serves the MCP servers [mcp.servers] configures with a command or
// a url behind this one endpoint. Each is reached exactly as `contextd-proxy
// mcp wrap --name NAME` reaches it: a configured wrap, so the daemon
// launches it in its sandbox (or dials its URL) and passes every message
// through its firewall (scrubbing, budget, pins, allow lists, the session
// record). The hub is only an MCP client of each: it lists the tools,
// indexes them for tool_search and routes tool_call. It holds nothing the
// daemon has not already scrubbed.
//
// Lock order: hub.regMu, then hub.mu, then hub.ixmu. No call to a server or to the daemon
// is made while mu is held; a search holds ixmu (read) while it asks the
// daemon for embeddings, which delays a re-index by as much.

// upState is where one served server stands.
type upState int

const (
	upStarting upState = iota
	upReady
	upFailed
)

// upstream is one served server.
type upstream struct {
	name   string
	target string // what it runs, redacted by the daemon
	pinned int    // its pinned tools: what the last session saw

	state     upState
	since     time.Time // when state began
	err       error     // why upFailed
	tools     []*mcp.Tool
	sess      *mcp.ClientSession
	record    string    // the daemon's record of the wrap, to ask why it ended
	restarted time.Time // the last lazy restart
	// listing and relistAgain coalesce list_changed: one list in flight
	// per server, and one more if the server changed again meanwhile, so
	// that a server sending a flood of them costs one list at a time.
	listing, relistAgain bool
}

// restartEvery bounds the lazy restarts of a server that ended (a
// variable for the test of a restart).
var restartEvery = time.Minute

// handshakeTimeout bounds a server's initialize and first tools/list (at
// least start_timeout): a server that never answers is failed, its wrap
// closed, and started again at a later call, rather than left starting
// for the whole connection. Generous: npx may be fetching a package first.
var handshakeTimeout = 3 * time.Minute

// hub is the set of served servers of one connection.
type hub struct {
	conf    lite.MCPHub
	socket  string
	session string
	cwd     string
	env     map[string]string
	notes   io.Writer
	ctx     context.Context // ends with the connection
	stop    context.CancelFunc
	started time.Time

	// onTools is told when a server's tools change (full mode registers
	// them with the SDK server): called without mu, one call at a time
	// (regMu), with the server's tools as they stand, so that two changes
	// close together cannot interleave their registrations.
	onTools func(server string, tools []*mcp.Tool)
	regMu   sync.Mutex

	mu    sync.Mutex
	ups   map[string]*upstream
	names []string      // sorted
	wake  chan struct{} // closed and replaced on every change of state

	// ixmu guards index: searches share it, ReplaceServer has it alone.
	ixmu  sync.RWMutex
	index *toolsearch.Index
}

// loadHub asks the daemon which servers to serve. No served server, or a
// daemon that cannot say (an older one), is a nil hub: contextd's own tools
// are served as they are, with a note for the latter.
func loadHub(o *Options, notes io.Writer) *hub {
	conn, err := client.Dial(o.socket())
	if err != nil {
		// The daemon starts on the first call (socket activation); until
		// it answers nothing configured can be served.
		fmt.Fprintf(notes, "contextd: note: the configured MCP servers are not served: %v\n", catalog.Format(err))
		return nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var conf lite.MCPHub
	if err := conn.Admin(ctx, lite.OpMCPHub, nil, &conf); err != nil {
		fmt.Fprintf(notes, "contextd: note: the configured MCP servers are not served: %v\n", catalog.Format(err))
		return nil
	}
	if len(conf.Servers) == 0 {
		return nil
	}
	if o.Search != "" {
		conf.Search = o.Search
	}
	h := &hub{conf: conf, socket: o.Socket, session: o.Session, cwd: o.cwd, env: proxy.CallerEnv(), notes: notes,
		ups: map[string]*upstream{}, wake: make(chan struct{}), index: toolsearch.Build(nil)}
	h.ctx, h.stop = context.WithCancel(context.Background())
	now := time.Now()
	h.started = now
	for _, s := range conf.Servers {
		h.ups[s.Name] = &upstream{name: s.Name, target: s.Target, pinned: s.Pinned, since: now}
		h.names = append(h.names, s.Name)
	}
	slices.Sort(h.names)
	return h
}

// searchMode decides, once per connection, whether the servers' tools are
// listed (false) or found through tool_search (true). "auto" searches when
// the pinned tools are more than the threshold, or when a server has none
// pinned yet: an unknown size errs toward search, which never waits.
func (h *hub) searchMode() bool {
	switch h.conf.Search {
	case "on":
		return true
	case "off", "defer":
		return false
	}
	n := 0
	for _, name := range h.names {
		p := h.ups[name].pinned
		if p == 0 {
			return true
		}
		n += p
	}
	return n > h.conf.Threshold
}

// start connects every server, each on its own.
func (h *hub) start() {
	for _, name := range h.names {
		go h.connect(name)
	}
}

// close ends every server's session.
func (h *hub) close() {
	h.stop()
	h.mu.Lock()
	var ss []*mcp.ClientSession
	for _, u := range h.ups {
		if u.sess != nil {
			ss = append(ss, u.sess)
		}
	}
	h.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
}

func (h *hub) sock() string {
	if h.socket != "" {
		return h.socket
	}
	return client.SocketPath()
}

// connect opens the configured wrap of one server, initializes it and lists
// its tools.
func (h *hub) connect(name string) {
	// One bound for the wrap to be ready, and one for the handshake.
	limit := max(handshakeTimeout, h.conf.StartTimeout)
	conn, ready, err := client.OpenWrapWithin(h.sock(), &lite.Wrap{Name: name, Configured: true, Cwd: h.cwd, Env: h.env, Session: h.session}, limit)
	if err != nil {
		h.failed(name, nil, err)
		return
	}
	for _, w := range ready.Warnings {
		fmt.Fprintf(h.notes, "contextd: warning: %s: %s\n", name, w)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "contextd", Version: proxy.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			h.mu.Lock()
			u := h.ups[name]
			start := !u.listing
			u.listing, u.relistAgain = true, !start
			h.mu.Unlock()
			if start {
				// Not on the SDK's reading goroutine: the list is a
				// request whose answer that goroutine must read.
				go h.relist(name)
			}
		},
	})
	ctx, cancel := context.WithTimeout(h.ctx, limit)
	defer cancel()
	// A late answer is no answer: past the bound the error says so.
	late := func(err error) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the server did not answer initialize and tools/list within %s", limit)
		}
		return err
	}
	// The session outlives ctx: the SDK binds only the handshake to it.
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: conn}, nil)
	if err != nil {
		conn.Close()
		h.failed(name, nil, h.why(ready.Record, late(err), catalog.ErrServerStart))
		return
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		cs.Close()
		h.failed(name, nil, h.why(ready.Record, late(err), catalog.ErrServerStart))
		return
	}
	h.set(name, func(u *upstream) bool {
		u.sess, u.record, u.state, u.err = cs, ready.Record, upReady, nil
		return true
	}, tools)
	go func() {
		cs.Wait()
		if h.ctx.Err() != nil {
			return
		}
		err := h.why(ready.Record, errors.New("the server ended the session"), catalog.ErrServerExited)
		h.failed(name, cs, err)
	}()
}

// why is the daemon's account of a wrap's failure when it has one (the
// server could not start, or exited, with its stderr), else err in class.
func (h *hub) why(record string, err, class error) error {
	if f := proxy.WrapFailure(h.sock(), record); f != nil {
		return f
	}
	if errors.Is(err, catalog.ErrServerStart) || errors.Is(err, catalog.ErrServerExited) {
		return err
	}
	return fmt.Errorf("%v: %w", err, class)
}

// failed marks name failed, unless its session is no longer sess (nil: any).
func (h *hub) failed(name string, sess *mcp.ClientSession, err error) {
	h.set(name, func(u *upstream) bool {
		if sess != nil && u.sess != sess {
			return false
		}
		u.sess, u.state, u.err = nil, upFailed, err
		return true
	}, nil)
}

// relist reads the tools of name again after its list_changed.
func (h *hub) relist(name string) {
	for {
		h.mu.Lock()
		u := h.ups[name]
		cs := u.sess
		u.relistAgain = false
		h.mu.Unlock()
		if cs != nil {
			ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
			tools, err := listTools(ctx, cs)
			cancel()
			if err != nil {
				fmt.Fprintf(h.notes, "contextd: note: %s: its tools could not be listed again: %v\n", name, err)
			} else {
				// Only for the session it listed: a server started
				// again meanwhile has its own list.
				h.set(name, func(u *upstream) bool { return u.sess == cs }, tools)
			}
		}
		h.mu.Lock()
		again := u.relistAgain && u.sess != nil
		if !again {
			u.listing = false
		}
		h.mu.Unlock()
		if !again {
			return
		}
	}
}

// validToolName is MCP's form of a tool name. A server's tool named
// otherwise is left out: its name is printed in tool_search's answer, where
// a line break or a look-alike could pass for another tool.
func validToolName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// set changes one server's state, re-indexes its tools and wakes waiters.
// change decides under the lock whether the change still applies (the
// session it is about may have been replaced meanwhile) and makes it.
func (h *hub) set(name string, change func(*upstream) bool, tools []*mcp.Tool) {
	kept := tools[:0:0]
	for _, t := range tools {
		if !validToolName(t.Name) {
			fmt.Fprintf(h.notes, "contextd: note: %s: a tool named %q is not served (not an MCP tool name)\n", name, t.Name)
			continue
		}
		kept = append(kept, t)
	}
	tools = kept
	docs := make([]toolsearch.Doc, 0, len(tools))
	for _, t := range tools {
		raw, err := json.Marshal(t)
		if err != nil {
			continue
		}
		d, err := toolsearch.ParseDoc(name, raw)
		if err != nil {
			continue
		}
		docs = append(docs, d)
	}
	h.mu.Lock()
	u := h.ups[name]
	prev := u.state
	if !change(u) {
		h.mu.Unlock()
		return
	}
	if u.state != prev {
		u.since = time.Now()
	}
	u.tools = tools
	h.ixmu.Lock()
	h.index.ReplaceServer(name, docs)
	h.ixmu.Unlock()
	h.mu.Unlock()
	if h.onTools != nil {
		h.regMu.Lock()
		h.mu.Lock()
		now := h.ups[name].tools
		h.mu.Unlock()
		h.onTools(name, now)
		h.regMu.Unlock()
	}
	// Waiters wake once the change is whole: a full list that waited for
	// the servers must find their tools registered.
	h.mu.Lock()
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

// Bounds of one server's tools, held (and indexed, and embedded at the
// user's endpoint) for the whole connection: the daemon bounds each page
// to max_message_bytes, not how many pages a server sends. Far above what
// any real server lists.
const (
	maxServedTools     = 1000
	maxServedToolBytes = 8 << 20 // of the tools' JSON, all pages together
)

// listTools reads every page of a server's tools.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	size := 0
	params := &mcp.ListToolsParams{}
	for range 100 {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			raw, _ := json.Marshal(t)
			size += len(raw)
		}
		out = append(out, res.Tools...)
		switch {
		case len(out) > maxServedTools:
			return nil, fmt.Errorf("it lists more than %d tools: %w", maxServedTools, catalog.ErrBadInput)
		case size > maxServedToolBytes:
			return nil, fmt.Errorf("its tools' definitions take more than %d MiB: %w", maxServedToolBytes>>20, catalog.ErrBadInput)
		case res.NextCursor == "":
			return out, nil
		}
		params.Cursor = res.NextCursor
	}
	return nil, fmt.Errorf("more than 100 pages of tools: %w", catalog.ErrBadInput)
}

// settle waits until no server is starting, or timeout, or ctx ends.
func (h *hub) settle(ctx context.Context, timeout time.Duration) {
	h.waitUntil(ctx, timeout, func() bool {
		for _, u := range h.ups {
			if u.state == upStarting {
				return false
			}
		}
		return true
	})
}

// waitFor waits for one server to leave upStarting (or ctx, or timeout).
func (h *hub) waitFor(ctx context.Context, name string, timeout time.Duration) {
	h.waitUntil(ctx, timeout, func() bool { return h.ups[name].state != upStarting })
}

// waitUntil waits until done (asked under mu) holds, timeout passes or ctx
// ends; it wakes at each change of state.
func (h *hub) waitUntil(ctx context.Context, timeout time.Duration, done func() bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		ok, wake := done(), h.wake
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// status is a line for each server that is not ready: what tool_search
// shows so that a missing server is never silent.
func (h *hub) status() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, name := range h.names {
		u := h.ups[name]
		switch u.state {
		case upStarting:
			out = append(out, fmt.Sprintf("%s: starting (%s)", name, time.Since(u.since).Round(time.Second)))
		case upFailed:
			out = append(out, fmt.Sprintf("%s: unavailable: %s", name, oneLine(catalog.Format(u.err))))
		}
	}
	return out
}

// oneLine folds a message's lines into one.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// resolve finds the server and tool a tool_call name means: NAME.tool,
// NAME/tool, NAME__tool, or a tool name only one server has. A bare name
// is not resolved while a server is starting (pending): its list, not yet
// known, may hold the same name, and the call must not go to another
// server (one that chose its tools' names to catch such calls) meanwhile.
func (h *hub) resolve(name string) (server, tool string, ok, pending bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sep := range []string{".", "/", "__"} {
		if s, t, cut := strings.Cut(name, sep); cut {
			u, known := h.ups[s]
			if !known || t == "" {
				continue
			}
			// A ready server's list is known: a name it lacks is the
			// caller's mistake, answered with the closest names.
			if u.state != upReady || slices.ContainsFunc(u.tools, func(x *mcp.Tool) bool { return x.Name == t }) {
				return s, t, true, false
			}
			return "", "", false, false
		}
	}
	for _, s := range h.names {
		if h.ups[s].state == upStarting {
			return "", "", false, true
		}
	}
	for _, s := range h.names {
		for _, t := range h.ups[s].tools {
			if t.Name == name {
				if server != "" {
					return "", "", false, false // on two servers: ambiguous
				}
				server, tool = s, t.Name
			}
		}
	}
	return server, tool, server != "", false
}

// call routes one tool_call to its server, restarting a server that ended
// (at most once a minute) and waiting for one still starting.
func (h *hub) call(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	h.restart(server)
	h.waitFor(ctx, server, h.conf.StartTimeout)
	h.mu.Lock()
	u := h.ups[server]
	state, cs, record, err, since := u.state, u.sess, u.record, u.err, u.since
	h.mu.Unlock()
	switch state {
	case upStarting:
		return nil, fmt.Errorf("%s is still starting after %s; try again: %w", server, time.Since(since).Round(time.Second), catalog.ErrServerStart)
	case upFailed:
		return nil, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		// A server that exited leaves its wrap open, answering each
		// request with why (the daemon's failure): the session is over,
		// and the next call starts the server again.
		if f := proxy.WrapFailure(h.sock(), record); f != nil {
			cs.Close()
			h.failed(server, cs, f)
			return nil, f
		}
	}
	return res, err
}

// restart starts again a server that failed, once a minute at most.
func (h *hub) restart(name string) {
	h.mu.Lock()
	u := h.ups[name]
	if u.state != upFailed || time.Since(u.restarted) < restartEvery {
		h.mu.Unlock()
		return
	}
	u.restarted = time.Now()
	u.state, u.since = upStarting, time.Now()
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
	go h.connect(name)
}

// tool returns the definition of server's tool, if listed.
func (h *hub) tool(server, name string) *mcp.Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.ups[server].tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// search ranks the served tools for q: lexically, fused with the
// embedding model's similarity when the daemon has one ([mcp]
// search_dense). note says when the similarity was wanted and not had.
func (h *hub) search(ctx context.Context, q string, k int) (hits []toolsearch.Hit, note string) {
	var e toolsearch.Embedder
	if h.conf.Dense {
		e = h.embed
	}
	// The first search after a change embeds every tool in one batch.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h.ixmu.RLock()
	defer h.ixmu.RUnlock()
	return h.index.SearchContext(ctx, q, k, e)
}

// embedBatch is the most texts one embed request carries.
const embedBatch = 256

// embed asks the daemon to embed texts with the user's endpoint (the key
// stays there), in batches.
func (h *hub) embed(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	var out [][]float32
	for len(texts) > 0 {
		n := min(len(texts), embedBatch)
		vs, err := h.embedOnce(ctx, texts[:n], query)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
		texts = texts[n:]
	}
	return out, nil
}

// embedOnce is one embed request, on a connection of its own (an admin
// request is one exchange).
func (h *hub) embedOnce(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	conn, err := client.Dial(h.sock())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var res lite.Embeddings
	if err := conn.Admin(ctx, lite.OpEmbed, lite.EmbedArgs{Texts: texts, Query: query}, &res); err != nil {
		return nil, errors.New(oneLine(catalog.Format(err)))
	}
	return res.Vectors, nil
}
